// wgmma_kernels.cu: one warpgroup multiplies A (64 x 16 k-steps) by B (N x 16 k-steps) with wgmma.
// The operands arrive as an image of shared memory laid out by the test; the kernel copies it in,
// makes the descriptors the test asks for, and writes D out row-major from its fragments.
#include <type_traits>

#include "simt/fragments.h"
#include "simt/tma.cuh"
#include "simt/wgmma.cuh"
#include "test_kernels.h"

namespace simt_tests {
namespace {

template <class T, int N, bool TransA, bool TransB>
__global__ void wgmma_product_kernel(const uint4* image, unsigned chunks, WgmmaOperands t, const uint32_t* a_regs,
                                     float* d) {
  uint4* smem = simt::dynamic_smem<uint4>();
  for (unsigned i = threadIdx.x; i < chunks; i += blockDim.x) smem[i] = image[i];
  simt::fence_proxy_async();  // the threads' stores, visible to the tensor cores' reads
  __syncthreads();
  const unsigned char* base = reinterpret_cast<const unsigned char*>(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  // A's registers, all written before the fence (a wgmma must not read registers written after it).
  uint32_t a[4][4] = {};
  if (a_regs)
    for (int s = 0; s < t.ksteps && s < 4; ++s)
      for (int i = 0; i < 4; ++i) a[s][i] = a_regs[((s * 4 + warp) * 32 + lane) * 4 + i];
  simt::WgmmaAccumulator<N> acc;
  simt::wgmma_fence();
  for (int s = 0; s < t.ksteps && s < 4; ++s) {
    const uint64_t b = simt::wgmma_desc(base + t.b_at + s * t.b_step, static_cast<simt::WgmmaSwizzle>(t.b_swizzle),
                                        t.b_lbo, t.b_sbo);
    if (a_regs) {  // A from registers: a_regs[((s * 4 + warp) * 32 + lane) * 4 + i]
      simt::wgmma_rs<T, N, TransB>(acc, a[s], b, s > 0);
    } else {
      const uint64_t a_desc = simt::wgmma_desc(base + t.a_at + s * t.a_step,
                                               static_cast<simt::WgmmaSwizzle>(t.a_swizzle), t.a_lbo, t.a_sbo);
      simt::wgmma_ss<T, N, TransA, TransB>(acc, a_desc, b, s > 0);
    }
  }
  simt::wgmma_commit();
  simt::wgmma_wait<0>(acc);
  for (int i = 0; i < N / 2; ++i)
    d[simt::frag::wgmma_d_row(warp, lane, i) * N + simt::frag::wgmma_d_col(lane, i)] = acc[i];
}

// Two products in two groups: D1 = A B1 waited for with one group still in flight (D2 = A B2), read,
// then D2. A from registers, B1 and B2 K-major without swizzle at 0 and 4096 (lbo 128, sbo 256).
template <class T>
__global__ void wgmma_groups_kernel(const uint4* image, unsigned chunks, const uint32_t* a_regs, float* d1, float* d2) {
  uint4* smem = simt::dynamic_smem<uint4>();
  for (unsigned i = threadIdx.x; i < chunks; i += blockDim.x) smem[i] = image[i];
  simt::fence_proxy_async();
  __syncthreads();
  const unsigned char* base = reinterpret_cast<const unsigned char*>(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  uint32_t a[4];
  for (int i = 0; i < 4; ++i) a[i] = a_regs[(warp * 32 + lane) * 4 + i];
  simt::WgmmaAccumulator<64> acc1, acc2;
  simt::wgmma_fence();
  simt::wgmma_rs<T, 64>(acc1, a, simt::wgmma_desc(base, simt::WgmmaSwizzle::none, 128, 256), false);
  simt::wgmma_commit();
  simt::wgmma_rs<T, 64>(acc2, a, simt::wgmma_desc(base + 4096, simt::WgmmaSwizzle::none, 128, 256), false);
  simt::wgmma_commit();
  simt::wgmma_wait<1>(acc1);
  for (int i = 0; i < 32; ++i) d1[simt::frag::wgmma_d_row(warp, lane, i) * 64 + simt::frag::wgmma_d_col(lane, i)] = acc1[i];
  simt::wgmma_wait<0>(acc2);
  for (int i = 0; i < 32; ++i) d2[simt::frag::wgmma_d_row(warp, lane, i) * 64 + simt::frag::wgmma_d_col(lane, i)] = acc2[i];
}

template <class T, int N, bool TransA, bool TransB>
cudaError_t launch_product(const uint4* image, unsigned chunks, const WgmmaOperands& t, const uint32_t* a_regs, float* d) {
  return simt::launch(wgmma_product_kernel<T, N, TransA, TransB>, dim3(1), dim3(128), chunks * 16, image, chunks, t,
                      a_regs, d);
}

// The (type, N, majors) test_wgmma.cpp uses, and no more: each instantiation costs nvcc seconds.
template <class T>
cudaError_t product_of_type(const uint4* image, unsigned chunks, const WgmmaOperands& t, int n, bool trans_a,
                            bool trans_b, const uint32_t* a_regs, float* d) {
  const bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  if (n == 64 && !trans_a && !trans_b) return launch_product<T, 64, false, false>(image, chunks, t, a_regs, d);
  if (n == 64 && trans_a && trans_b) return launch_product<T, 64, true, true>(image, chunks, t, a_regs, d);
  if (n == 128 && !trans_a && !trans_b) return launch_product<T, 128, false, false>(image, chunks, t, a_regs, d);
  if constexpr (!bf16) {
    if (n == 64 && !trans_a && trans_b) return launch_product<T, 64, false, true>(image, chunks, t, a_regs, d);
    if (n == 128 && !trans_a && trans_b) return launch_product<T, 128, false, true>(image, chunks, t, a_regs, d);
  }
  return cudaErrorInvalidValue;  // a combination no test asks for
}

}  // namespace

cudaError_t wgmma_product(bool bf16, const uint8_t* image, unsigned bytes, const WgmmaOperands& t, int n, bool trans_a,
                          bool trans_b, const uint32_t* a_regs, float* d) {
  if ((n != 64 && n != 128) || bytes % 16 != 0) return cudaErrorInvalidValue;
  const auto* img = reinterpret_cast<const uint4*>(image);
  return bf16 ? product_of_type<__nv_bfloat16>(img, bytes / 16, t, n, trans_a, trans_b, a_regs, d)
              : product_of_type<__half>(img, bytes / 16, t, n, trans_a, trans_b, a_regs, d);
}

cudaError_t wgmma_groups(const uint8_t* image, const uint32_t* a_regs, float* d1, float* d2) {
  return simt::launch(wgmma_groups_kernel<__half>, dim3(1), dim3(128), 8192, reinterpret_cast<const uint4*>(image),
                      8192u / 16, a_regs, d1, d2);
}

}  // namespace simt_tests
