// simt/gpu.h: the two helpers of simt.h for the real GPU (nvcc). No emulation here.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

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
template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  return launch_exact(kernel, grid, block, smem, std::forward<A>(args)...);
}

}  // namespace simt
