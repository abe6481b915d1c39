// runtime_state.h: what the launch path and the emulated runtime API share.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace simt::detail {

constexpr int kMaxDynamicSmemDefault = 48 * 1024;
constexpr int kMaxDynamicSmemOptIn = 227 * 1024;  // sm_90's per-block opt-in maximum

// Sets the error that cudaGetLastError returns next; returns e.
cudaError_t record_error(cudaError_t e);
// The dynamic shared memory a kernel may use: 48 KB, or what cudaFuncSetAttribute opted in to.
size_t max_dynamic_smem(const void* kernel);

}  // namespace simt::detail
