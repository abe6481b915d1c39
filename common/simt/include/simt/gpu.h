// simt/gpu.h: the two helpers of simt.h for the real GPU (nvcc). No emulation here.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "simt/launch_error.h"

namespace simt {

// The block's dynamic shared memory, typed. One `extern __shared__` array serves every type.
template <class T>
__device__ __forceinline__ T* dynamic_smem() {
  extern __shared__ __align__(16) unsigned char simt_dynamic_smem[];
  return reinterpret_cast<T*>(simt_dynamic_smem);
}

// kernel<<<grid, block, smem>>>(args...) with nothing added: more than 48 KB of dynamic shared
// memory is refused unless the kernel was opted in before.
template <class... P, class... A>
cudaError_t launch_exact(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "wrong number of kernel arguments");
  kernel<<<grid, block, smem>>>(static_cast<P>(std::forward<A>(args))...);
  return cudaGetLastError();
}

// The launch every chapter uses: opts in to the dynamic shared memory it asks for, then launches.
// Without the opt-in a block may have 48 KB, static and dynamic together: a kernel with static
// __shared__ can pass that with less than 48 KB of dynamic, so any dynamic amount opts in. A
// refused opt-in leaves the bytes asked for and allowed in last_launch_error().
template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  detail::launch_message().clear();
  if (smem > 0) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) {
      int device = 0, optin = 0;
      cudaFuncAttributes attr{};
      cudaGetDevice(&device);
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
      const bool known = cudaFuncGetAttributes(&attr, kernel) == cudaSuccess;
      cudaGetLastError();  // the queries' own errors are not the launch's
      detail::launch_message() = "the kernel asks for " + std::to_string(smem) + " bytes of dynamic shared memory per block" +
                                 (known && attr.sharedSizeBytes ? " beside " + std::to_string(attr.sharedSizeBytes) + " static" : "") +
                                 "; this GPU allows " + std::to_string(optin) + " per block in all (opt-in)";
      return e;
    }
  }
  return launch_exact(kernel, grid, block, smem, std::forward<A>(args)...);
}

}  // namespace simt
