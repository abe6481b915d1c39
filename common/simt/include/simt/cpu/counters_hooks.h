// simt/cpu/counters_hooks.h: where the emulator tells the counters (simt/counters.h) what a GPU
// thread does besides its loads and stores. In a build without counters every hook is an empty
// inline function, and costs nothing.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

// The emulator's own helpers that touch memory for a whole warp (the last lane of a collective
// computes every lane's result): their accesses are not the calling lane's, so the
// instrumentation leaves them out, and the hooks below record what the lanes asked for instead.
#define SIMT_UNCOUNTED __attribute__((no_sanitize("thread")))

namespace simt::detail::counters {

#if SIMT_COUNTERS
// Kernel side: what the shim does for the calling lane.
void ldmatrix_row(const void* row, int num, bool trans, const char* file, int line);  // nullptr: no row
void cp_async(const void* dst, const void* src, int src_bytes, const char* file, int line);
void mufu();  // one special-function operation (exp2, log2, rsqrt, ...)
// A TMA box (simt/tma.cuh): each of its rows inside the tensor, read from global memory, then the
// whole box, written into shared memory.
void tma_row(const void* src, unsigned bytes);
void tma_box(unsigned bytes);
// One warp's part of a wgmma (simt/wgmma.cuh) of width n, A from shared memory or registers.
void wgmma(int n, bool a_shared);
// One atomic read-modify-write of `bytes` at a, by the kernel's instruction at pc (a return address).
void atomic(const void* a, unsigned bytes, const void* pc);

// Runtime side.
void allocated(const void* p, size_t bytes);
void freed(const void* p);
// false: a dry run (counters::Options): the launch is recorded, and none of its blocks runs.
bool launch_begin(const void* kernel, dim3 grid, dim3 block, size_t smem);
void launch_end(bool ok);
void block_begin(uint3 block_idx, int threads, const void* smem, size_t smem_bytes);
void block_end();
void barrier_arrive(unsigned linear);
void barrier_release(int warps);
// A named barrier (simt/named_barrier.cuh) released `warps` warps: counted as barriers, nothing
// flushed (the warps that only arrived have run on).
void named_barrier_release(int warps);
// A warp gave registers back (setmaxnreg.dec): a warp-specialized kernel's producer.
void registers_released();
// A phase of the mbarrier at bar completed, with the transaction bytes it had been announced (TMA's:
// 0 for a phase of arrivals only); the thread `linear`'s wait for a phase of it returned; it arrived
// on it without announcing bytes (a consumer giving a ring's stage back).
void mbarrier_completed(const void* bar, long long tx_bytes);
void mbarrier_waited(const void* bar, unsigned linear);
void mbarrier_arrived(const void* bar, unsigned linear);
void collective_arrive(unsigned linear);
void warp_exited(unsigned warp);  // every thread of the warp has returned
// whole_warp: every lane that has not returned took part (their accesses so far are final).
void collective_done(const char* what, unsigned warp, bool whole_warp);
#else
inline void ldmatrix_row(const void*, int, bool, const char*, int) {}
inline void cp_async(const void*, const void*, int, const char*, int) {}
inline void mufu() {}
inline void tma_row(const void*, unsigned) {}
inline void tma_box(unsigned) {}
inline void wgmma(int, bool) {}
inline void atomic(const void*, unsigned, const void*) {}
inline void allocated(const void*, size_t) {}
inline void freed(const void*) {}
inline bool launch_begin(const void*, dim3, dim3, size_t) { return true; }
inline void launch_end(bool) {}
inline void block_begin(uint3, int, const void*, size_t) {}
inline void block_end() {}
inline void barrier_arrive(unsigned) {}
inline void barrier_release(int) {}
inline void named_barrier_release(int) {}
inline void registers_released() {}
inline void mbarrier_completed(const void*, long long) {}
inline void mbarrier_waited(const void*, unsigned) {}
inline void mbarrier_arrived(const void*, unsigned) {}
inline void collective_arrive(unsigned) {}
inline void warp_exited(unsigned) {}
inline void collective_done(const char*, unsigned, bool) {}
#endif

}  // namespace simt::detail::counters
