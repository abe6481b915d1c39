// simt/named_barrier.cuh: barriers for some warps of a block, by id (bar.sync / bar.arrive): the
// warps that sync wait until `threads` threads, whole warps, have arrived; those that only arrive
// run on. FlashAttention-3's two consumer warpgroups take turns with them, while its producer warp
// (which may have returned) is not involved. Under nvcc the real instructions; on the CPU the
// block's runner counts warps as the hardware does and reports a barrier left waiting as a deadlock.
//
//   named_barrier_sync(id, threads)    id 1..15 (0 is __syncthreads'), threads a multiple of 32
//   named_barrier_arrive(id, threads)  the same count; the caller does not wait
//
// On the CPU a use of one id with two different counts, a warp arriving twice before the barrier
// completes, and an id or count out of range are errors naming the kernel's line.
#pragma once
#include "simt/simt.h"

namespace simt {

#if SIMT_CPU
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads, SIMT_CALLER) {
  detail::named_barrier(id, threads, true, simt_file, simt_line);
}
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads, SIMT_CALLER) {
  detail::named_barrier(id, threads, false, simt_file, simt_line);
}
#else
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#endif

}  // namespace simt
