// simt/mbarrier.cuh: the shared-memory barrier objects (mbarrier) that Hopper's kernels use to
// hand tiles from a producer to its consumers: the real inline PTX under nvcc, and on the CPU a
// state machine kept by the block's runner, which blocks a waiting thread instead of spinning.
//
//   mbarrier_init(bar, count)           a barrier in shared memory (8 bytes, 8-byte aligned) whose
//                                       phase completes after `count` arrivals
//   fence_mbarrier_init()               makes the initialisation visible; then __syncthreads
//   mbarrier_arrive(bar)                one arrival; returns a token of the phase arrived at
//   mbarrier_expect_tx(bar, bytes)      the phase also waits for `bytes` of transactions (sm_90)
//   mbarrier_arrive_expect_tx(bar, n)   both at once, as a TMA producer does (sm_90)
//   mbarrier_complete_tx(bar, bytes)    `bytes` of transactions done (a TMA load does it itself)
//   mbarrier_wait_parity(bar, parity)   waits until the phase of that parity has completed
//
// A phase completes when its arrivals are all in and its transaction count is back to 0; then the
// next phase begins with `count` arrivals to come. The phases alternate parity, which is how a
// waiter names the phase it waits for: a consumer waits for parity 0 on its first tile, 1 on the
// next, and so on (PTX ISA, "Parallel synchronization and communication instructions: mbarrier").
//
// On the CPU every misuse is a launch error naming the kernel's line: an operation on memory no
// mbarrier_init made a barrier (or that a store overwrote since), a use by another thread before a
// __syncthreads followed the init (a named barrier or another mbarrier does not count here), an
// arrival beyond the count while the phase waits for its bytes (otherwise an extra arrival counts
// toward the next phase, as on a GPU), a transaction count out of range,
// and one not back to 0 when the block ends (bytes announced that never came, or bytes beyond those
// announced). A wait that no arrival will end is reported as a deadlock naming the barrier, its
// phase, its arrivals and bytes to come.
#pragma once
#include <cstdint>

#include "simt/simt.h"

#if SIMT_CPU
#define SIMT_MBAR_CALLER , SIMT_CALLER
#define SIMT_MBAR_SITE , simt_file, simt_line
#else
#define SIMT_MBAR_CALLER
#endif

namespace simt {

#if !SIMT_CPU
namespace detail {
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
}  // namespace detail
#endif

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, unsigned count SIMT_MBAR_CALLER) {
#if SIMT_CPU
  detail::mbarrier_init(bar, count SIMT_MBAR_SITE);
#elif SIMT_BEFORE_SM80
  (void)bar, (void)count;
  __trap();
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(detail::smem_address(bar)), "r"(count) : "memory");
#endif
}

// The initialisation, visible to the other threads (and to the TMA unit) once a __syncthreads follows.
__device__ __forceinline__ void fence_mbarrier_init() {
#if !SIMT_CPU && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

__device__ __forceinline__ uint64_t mbarrier_arrive(uint64_t* bar SIMT_MBAR_CALLER) {
#if SIMT_CPU
  return detail::mbarrier_arrive(bar, 0, "mbarrier_arrive" SIMT_MBAR_SITE);
#elif SIMT_BEFORE_SM80
  (void)bar;
  __trap();
  return 0;
#else
  uint64_t token;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n" : "=l"(token) : "r"(detail::smem_address(bar)) : "memory");
  return token;
#endif
}

// Transaction counts are Hopper's (sm_90): on an older GPU these trap.
__device__ __forceinline__ uint64_t mbarrier_arrive_expect_tx(uint64_t* bar, unsigned bytes SIMT_MBAR_CALLER) {
#if SIMT_CPU
  return detail::mbarrier_arrive(bar, bytes, "mbarrier_arrive_expect_tx" SIMT_MBAR_SITE);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint64_t token;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
               : "=l"(token)
               : "r"(detail::smem_address(bar)), "r"(bytes)
               : "memory");
  return token;
#else
  __trap();
  return 0;
#endif
}

__device__ __forceinline__ void mbarrier_expect_tx(uint64_t* bar, unsigned bytes SIMT_MBAR_CALLER) {
#if SIMT_CPU
  detail::mbarrier_tx(bar, bytes, "mbarrier_expect_tx" SIMT_MBAR_SITE);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(detail::smem_address(bar)), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void mbarrier_complete_tx(uint64_t* bar, unsigned bytes SIMT_MBAR_CALLER) {
#if SIMT_CPU
  detail::mbarrier_tx(bar, -static_cast<long long>(bytes), "mbarrier_complete_tx" SIMT_MBAR_SITE);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(detail::smem_address(bar)),
               "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

// Returns once the phase of parity `parity` has completed (at once if it has already).
//
// On a GPU the retry is a loop inside the one asm statement (CUTLASS's ClusterBarrier::wait, which
// FlashAttention-3 runs): try_wait, and back to the label until the phase is seen complete. Chapter
// 09 follows a wait with .sync.aligned instructions (wgmma.fence, wgmma.mma_async, bar.sync), which
// every lane of the warp must execute together. With the retry in C++ (a loop around one try_wait)
// the loop is the compiler's: it may move the caller's code into it or give it other exits, and
// nothing then says the lanes meet again before the next .aligned instruction. In the asm the loop
// has one exit, the end of the statement, and the caller's code comes after it. ptxas makes of it
// what CUTLASS gets: the try_wait inline, its retry out of line, jumping back to the instruction
// after the wait (results/static-sm90a). The other way, a __syncwarp() after every wait, would cost
// an instruction per wait.
__device__ __forceinline__ void mbarrier_wait_parity(uint64_t* bar, unsigned parity SIMT_MBAR_CALLER) {
#if SIMT_CPU
  detail::mbarrier_wait_parity(bar, parity SIMT_MBAR_SITE);
#elif SIMT_BEFORE_SM80
  (void)bar, (void)parity;
  __trap();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // try_wait blocks for a time the hardware chooses before it answers false. The label is local to
  // the braces, so the asm may be inlined any number of times.
  asm volatile(
      "{\n .reg .pred p;\n"
      "simt_mbarrier_wait:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra simt_mbarrier_wait;\n}\n" ::"r"(detail::smem_address(bar)),
      "r"(parity)
      : "memory");
#else
  // sm_80 has test_wait alone, which answers at once: the same loop around it.
  asm volatile(
      "{\n .reg .pred p;\n"
      "simt_mbarrier_wait:\n"
      " mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra simt_mbarrier_wait;\n}\n" ::"r"(detail::smem_address(bar)),
      "r"(parity)
      : "memory");
#endif
}

}  // namespace simt

#undef SIMT_MBAR_CALLER
#undef SIMT_MBAR_SITE
