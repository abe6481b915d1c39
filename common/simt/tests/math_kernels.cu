// math_kernels.cu: the fast-math wrappers of simt/ptx.cuh, one value per thread.
#include "simt/ptx.cuh"
#include "simt/simt.h"
#include "test_kernels.h"

namespace simt_tests {
namespace {

__global__ void ex2_kernel(const float* x, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = simt::ex2_approx_ftz(x[i]);
}

}  // namespace

cudaError_t ex2_approx_ftz(const float* x, float* y, int n) {
  return simt::launch(ex2_kernel, dim3((n + 127) / 128), dim3(128), 0, x, y, n);
}

}  // namespace simt_tests
