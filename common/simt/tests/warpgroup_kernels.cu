// warpgroup_kernels.cu: what warpgroups (4 aligned warps) do together on Hopper.
#include "simt/setmaxnreg.cuh"
#include "simt/simt.h"
#include "test_kernels.h"

namespace simt_tests {
namespace {

// FlashAttention-3's split of 384 threads: the producer warpgroup gives registers back, the two
// consumer warpgroups take them. (ptxas applies setmaxnreg only where it knows the count at entry:
// hence the launch bounds, 384 threads and 1 block per SM.)
__global__ void __launch_bounds__(384, 1) register_split_kernel(int* out) {
  const int group = static_cast<int>(threadIdx.x / 128);
  if (group == 0) {
    simt::setmaxnreg_dec<24>();
  } else {
    simt::setmaxnreg_inc<240>();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1000 * group + static_cast<int>(threadIdx.x);
}

}  // namespace

cudaError_t register_split(int* out, int blocks) {
  return simt::launch(register_split_kernel, dim3(blocks), dim3(384), 0, out);
}

}  // namespace simt_tests
