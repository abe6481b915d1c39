// simt/tma.cuh: Hopper's tensor memory accelerator (TMA). One thread asks for a whole tile (a
// "box") of a 2D or 3D tensor in global memory; the copy lands in shared memory, optionally
// swizzled, and counts its bytes on an mbarrier's transaction count (simt/mbarrier.cuh), which is
// how the consumers learn that it has landed.
//
//   make_tensor_map(&map, dtype, rank, global, dims, strides, box, swizzle)   on the host: the
//       tensor (dims[0] the contiguous one, strides[i] the bytes between steps of dims[i + 1]) and
//       the box; cuTensorMapEncodeTiled's fields (element strides 1, no interleave, zeros outside)
//   tma_load_2d(dst, &map, c0, c1, bar) / tma_load_3d(dst, &map, c0, c1, c2, bar)   in a kernel
//       that takes the map as `const __grid_constant__ CUtensorMap map`: the box whose first
//       element is at (c0, c1[, c2]); elements outside the tensor read as zeros; its bytes, the
//       whole box, complete on `bar`. c0 times the element's size must be a multiple of 16 (the
//       box's address in global memory 16-byte aligned, PTX ISA "Bounding Box"): a GPU stops the
//       kernel with an illegal instruction otherwise, and the emulator fails the launch
//
// Swizzle (32, 64 or 128 bytes): the 16-byte chunk c of a box row lands at chunk c ^ (bits 7.. of
// its shared address, 1, 2 or 3 of them), so that the 8 rows of an 8x8 tile of 16-bit values that
// ldmatrix or wgmma reads fall in 8 different bank groups. The destination lies in dynamic shared
// memory, 128-byte aligned, and for a swizzle aligned to its pattern (256, 512 or 1024 bytes),
// counted from the start of dynamic shared memory: the emulator's starts 1024-byte aligned, and so
// does a GPU's when the kernel has no static __shared__ before it (keep a Hopper kernel's shared
// memory dynamic; its mbarriers may be static).
//
// On the CPU, make_tensor_map checks what cuTensorMapEncodeTiled documents (and refuses what is not
// emulated: ranks other than 2 and 3, element types other than fp16, bf16 and fp32, a swizzled box whose rows
// are narrower than the swizzle's span) and packs the map into the CUtensorMap's bytes. A
// load reads its box when issued and completes its bytes on the barrier then, but writes shared
// memory only when a wait on that barrier sees the phase complete: a tile read without any such
// wait shows the poison (NaN) of dynamic shared memory, or the previous tile, as a missing wait
// would on a GPU. The counters build counts a box as one request of its rows' bytes and sectors
// (simt/counters.h, kTmaLoad) and its write into shared memory (kTmaDestination).
#pragma once
#include <cuda.h>

#include <cstdint>

#include "simt/mbarrier.cuh"
#include "simt/simt.h"

#if !SIMT_CPU
#include <cudaTypedefs.h>
#endif

namespace simt {

#if SIMT_CPU
namespace detail {
cudaError_t make_tensor_map(CUtensorMap* map, CUtensorMapDataType dtype, unsigned rank, const void* global,
                            const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                            CUtensorMapSwizzle swizzle);
}  // namespace detail
#endif

inline cudaError_t make_tensor_map(CUtensorMap* map, CUtensorMapDataType dtype, unsigned rank, const void* global,
                                   const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                   CUtensorMapSwizzle swizzle) {
#if SIMT_CPU
  return detail::make_tensor_map(map, dtype, rank, global, dims, strides, box, swizzle);
#else
  // The driver's function, reached through the runtime (no link to libcuda needed).
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
  if (e != cudaSuccess) return e;
  if (found != cudaDriverEntryPointSuccess || !fn) return cudaErrorNotSupported;
  const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
  const CUresult r = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)(
      map, dtype, rank, const_cast<void*>(global), dims, strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
#endif
}

#if SIMT_CPU
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar,
                                            SIMT_CALLER) {
  const int c[3] = {c0, c1, 0};
  detail::tma_load(dst, map, 2, c, bar, simt_file, simt_line);
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar,
                                            SIMT_CALLER) {
  const int c[3] = {c0, c1, c2};
  detail::tma_load(dst, map, 3, c, bar, simt_file, simt_line);
}
#else
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          detail::smem_address(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(detail::smem_address(bar))
      : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(detail::smem_address(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(detail::smem_address(bar))
      : "memory");
#else
  __trap();
#endif
}
#endif

// Orders this thread's generic-proxy writes to shared memory before later TMA (async-proxy)
// operations on it. On the CPU, where both are plain memory, nothing to do.
__device__ __forceinline__ void fence_proxy_async() {
#if !SIMT_CPU && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace simt
