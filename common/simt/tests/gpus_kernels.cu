// gpus_kernels.cu: the kernels of test_gpus.cpp, each touching one limit of the GPU the emulator
// stands for: shared memory (static and dynamic), an sm_80 instruction, an sm_90a-only file, the
// register file (a kernel of as many threads as a test asks).
#include "gpus_kernels.h"
#include "simt/ptx.cuh"
#include "simt/simt.h"

namespace simt_tests {
namespace {

__global__ void static_and_dynamic(float* out) {
  __shared__ float fixed[kStaticFloats];
  float* extra = simt::dynamic_smem<float>();
  fixed[threadIdx.x] = static_cast<float>(threadIdx.x);
  extra[threadIdx.x] = fixed[threadIdx.x];
  out[threadIdx.x] = extra[threadIdx.x];
}

__global__ void copy_by_cp_async(const float* in, float* out) {
  float* tile = simt::dynamic_smem<float>();
  simt::cp_async_cg_16(tile + 4 * threadIdx.x, in + 4 * threadIdx.x);
  simt::cp_async_commit();
  simt::cp_async_wait<0>();
  for (int i = 0; i < 4; ++i) out[4 * threadIdx.x + i] = tile[4 * threadIdx.x + i];
}

__global__ void write_one(float* out) { out[threadIdx.x] = 1.f; }

}  // namespace

cudaError_t launch_static_and_dynamic(size_t dynamic_bytes, float* out) {
  return simt::launch(static_and_dynamic, dim3(1), dim3(32), dynamic_bytes, out);
}
cudaError_t launch_cp_async(const float* in, float* out) {
  return simt::launch(copy_by_cp_async, dim3(1), dim3(32), 128 * sizeof(float), in, out);
}
cudaError_t launch_as_sm90a(float* out) {
#if SIMT_CPU
  return simt::launch<90>(write_one, dim3(1), dim3(32), 0, out);
#else
  return simt::launch(write_one, dim3(1), dim3(32), 0, out);
#endif
}
cudaError_t launch_write_one(int threads, float* out) {
  return simt::launch(write_one, dim3(1), dim3(threads), 0, out);
}

}  // namespace simt_tests
