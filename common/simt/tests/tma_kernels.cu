// tma_kernels.cu: one thread loads a box of a 2D or 3D tensor with TMA; the block waits on the
// mbarrier its bytes complete, then copies shared memory out as it lies there (swizzled or not).
#include "simt/tma.cuh"
#include "test_kernels.h"

namespace simt_tests {
namespace {

// Dynamic shared memory: the barrier at 0, the tile at 1024 (the 128-byte swizzle's alignment).
__global__ void tma_box_kernel(const __grid_constant__ CUtensorMap map, int rank, int c0, int c1, int c2,
                               unsigned bytes, uint16_t* out) {
  unsigned char* smem = simt::dynamic_smem<unsigned char>();
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem);
  uint16_t* tile = reinterpret_cast<uint16_t*>(smem + 1024);
  if (threadIdx.x == 0) simt::mbarrier_init(bar, 1);
  simt::fence_mbarrier_init();
  __syncthreads();
  if (threadIdx.x == 0) {
    simt::mbarrier_arrive_expect_tx(bar, bytes);
    if (rank == 2)
      simt::tma_load_2d(tile, &map, c0, c1, bar);
    else
      simt::tma_load_3d(tile, &map, c0, c1, c2, bar);
  }
  simt::mbarrier_wait_parity(bar, 0);
  for (unsigned i = threadIdx.x; i < bytes / 2; i += blockDim.x) out[i] = tile[i];
}

}  // namespace

cudaError_t tma_box(const uint16_t* tensor, int rank, const uint64_t* dims, const uint64_t* strides,
                    const uint32_t* box, int swizzle_bytes, const int* coords, uint16_t* out) {
  const CUtensorMapSwizzle swizzle = swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                           : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMap map;
  const cudaError_t e = simt::make_tensor_map(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, static_cast<unsigned>(rank),
                                              tensor, dims, strides, box, swizzle);
  if (e != cudaSuccess) return e;
  unsigned bytes = 2;
  for (int i = 0; i < rank; ++i) bytes *= box[i];
  return simt::launch(tma_box_kernel, dim3(1), dim3(32), 1024 + bytes, map, rank, coords[0], coords[1],
                      rank > 2 ? coords[2] : 0, bytes, out);
}

}  // namespace simt_tests
