// buggy_kernels.h: the deliberately wrong kernels of the diagnostics tests (cpu backend only).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace simt_tests {

enum class Bug {
  divergent_barrier,             // __syncthreads at two different places
  barrier_after_return,          // some threads returned, the rest reach __syncthreads
  mismatched_masks,              // lanes of one shuffle pass different masks
  shuffle_outside_mask,          // a lane reads a lane that is not in the mask
  deadlock,                      // half a warp at a shuffle, the other half at __syncthreads
  warp_collective_after_return,  // a full-mask shuffle after half the warp returned
  missing_barrier,               // reads a neighbour's shared-memory write without a barrier
  read_unwritten,                // reads dynamic shared memory nobody wrote
  cp_async_without_wait,         // reads a cp.async destination before cp_async_wait
  misaligned_ldmatrix,           // ldmatrix row addresses not 16-byte aligned
  mma_by_half_a_warp,            // mma.sync by 16 lanes
  smem_without_opt_in,           // launch_exact with more than 48 KB of dynamic shared memory
  smem_with_opt_in,              // launch (opts in) with smem_bytes of dynamic shared memory
  too_many_threads,              // 2048 threads in a block
  mbarrier_missing_arrival,      // all wait for a phase whose second arrival never comes
  mbarrier_extra_arrival,        // three arrivals on a barrier of count 2
  mbarrier_bytes_beyond,         // 96 transaction bytes completed for 64 announced
  mbarrier_uninitialised,        // an arrival on memory no mbarrier_init made a barrier
  mbarrier_before_sync,          // an arrival before the __syncthreads that follows the init
  mbarrier_overwritten,          // a store over an initialised barrier
  named_barrier_alone,           // warp 0 syncs at a named barrier for 64 threads; warp 1 never comes
  named_barrier_counts,          // one named barrier used with counts 64 and 96
  setmaxnreg_disagree,           // warp 0 of a warpgroup makes setmaxnreg.dec 24, the others .dec 32
  setmaxnreg_skipped,            // warp 0 of a warpgroup makes no setmaxnreg, the others .inc 240
  setmaxnreg_partial_group,      // setmaxnreg in a block of 96 threads
  tma_without_wait,              // reads a TMA box after a __syncthreads, without the mbarrier wait
  tma_misaligned,                // a 32-byte-swizzled box at a 128-byte (not 256-byte) aligned address
  named_barrier_three_warps,     // 3 warps sync at a named barrier for 64 threads
  mbarrier_extra_expect_tx,      // a second arrival (with expect_tx) on a barrier of count 1
  setmaxnreg_too_many,           // warpgroups of 80, 224, 224 registers: more than 64K
  setmaxnreg_lowering_inc,       // setmaxnreg.inc 232 after .inc 240
  wgmma_read_before_wait,        // an accumulator read between the wgmma and its wait
  wgmma_without_fence,           // no wgmma_fence before the first wgmma
  wgmma_operand_overwritten,     // B's shared memory written between the wgmma and its wait
  wgmma_misaligned_swizzle,      // a 128-byte swizzled B 128 bytes past a 1024-byte boundary
  wgmma_returns_in_flight,       // the threads return with a wgmma committed and not waited for
  wgmma_warps_disagree,          // warp 1 passes another B descriptor
  wgmma_partial_warpgroup,       // wgmma in a block of 96 threads
  wgmma_read_newer_group,        // after wgmma_wait<1>, the accumulator of the newer group read
  wgmma_out_of_scope,            // an accumulator's scope ends with its wgmma in flight
  named_barrier_divergent,       // half of each warp at bar.sync, the other half at bar.arrive, one barrier
  mma_loop_exit,                 // lanes leave a loop of mma.sync after 1 or 2 iterations, then another mma
  mma_loop_iterations,           // lanes meet at one mma.sync line in different iterations of a loop
};

// Launches the kernel of `bug` with one block; out holds at least 128 ints or floats, in at
// least 128 ints or floats.
cudaError_t run_buggy(Bug bug, void* out, const void* in, size_t smem_bytes = 0);

}  // namespace simt_tests
