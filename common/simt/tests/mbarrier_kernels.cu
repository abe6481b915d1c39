// mbarrier_kernels.cu: a producer warp hands tiles to a consumer warp through a two-slot ring in
// shared memory, each slot guarded by a "full" and an "empty" mbarrier, as Hopper's kernels do.
#include "simt/mbarrier.cuh"
#include "simt/simt.h"
#include "test_kernels.h"

namespace simt_tests {
namespace {

__global__ void mbarrier_ring_kernel(int* out, int rounds) {
  uint64_t* full = simt::dynamic_smem<uint64_t>();
  uint64_t* empty = full + 2;
  int* slot = reinterpret_cast<int*>(full + 4);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (threadIdx.x == 0)
    for (int s = 0; s < 2; ++s) {
      simt::mbarrier_init(&full[s], 32);   // the producer's 32 arrivals (and 8 bytes of transactions)
      simt::mbarrier_init(&empty[s], 32);  // the consumer's 32
    }
  simt::fence_mbarrier_init();
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    const int s = r % 2;
    const unsigned use = static_cast<unsigned>(r / 2) % 2;  // the parity of this round's use of slot s
    if (threadIdx.x < 32) {
      // The slot's previous use consumed: the phase before this use's (a fresh barrier's "previous"
      // phase, parity 1, counts as completed, so the first two rounds pass).
      simt::mbarrier_wait_parity(&empty[s], use ^ 1u);
      slot[32 * s + lane] = 1000 * static_cast<int>(blockIdx.x) + 100 * r + lane;
      if (lane == 0) {
        simt::mbarrier_arrive_expect_tx(&full[s], 8);
      } else {
        if (lane < 3) simt::mbarrier_complete_tx(&full[s], 4);  // may come before the expect_tx: the count dips below 0
        simt::mbarrier_arrive(&full[s]);
      }
    } else {
      simt::mbarrier_wait_parity(&full[s], use);
      out[(static_cast<int>(blockIdx.x) * rounds + r) * 32 + lane] = slot[32 * s + lane];
      simt::mbarrier_arrive(&empty[s]);
    }
  }
}

}  // namespace

cudaError_t mbarrier_ring(int* out, int blocks, int rounds) {
  return simt::launch(mbarrier_ring_kernel, dim3(blocks), dim3(64), 4 * sizeof(uint64_t) + 2 * 32 * sizeof(int), out,
                      rounds);
}

}  // namespace simt_tests
