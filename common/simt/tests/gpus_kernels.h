// gpus_kernels.h: kernels for the tests of the emulator standing for a GPU (test_gpus.cpp).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace simt_tests {

// 40 KB of static __shared__ (kStaticFloats floats) beside `dynamic_bytes` of dynamic shared memory;
// every thread writes its index through both into out[threadIdx.x].
inline constexpr int kStaticFloats = 10240;
cudaError_t launch_static_and_dynamic(size_t dynamic_bytes, float* out);
// 32 threads copy in[0..128) through cp.async (an sm_80 instruction) into out.
cudaError_t launch_cp_async(const float* in, float* out);
// A plain kernel launched as a file built for sm_90a alone would launch it.
cudaError_t launch_as_sm90a(float* out);
// The same kernel, `threads` threads of one block, each writing 1 to out[threadIdx.x].
cudaError_t launch_write_one(int threads, float* out);

}  // namespace simt_tests
