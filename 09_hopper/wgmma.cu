// wgmma.cu: step b. Chapter 05's FlashAttention-2 loop with both products on Hopper's warpgroup
// mma: S = Q K^T and O += P V are each one chain of wgmma that the tensor cores read from shared
// memory, through descriptors.
//
// In chapter 05 every warp fetched each operand fragment into its registers with ldmatrix before
// an mma.sync of 16 x 8 x 16: at d = 128 a warp issued an ldmatrix.x4 for every four mma (Q's
// fragments re-read at every tile among them). Here the four warps of a warpgroup own 64 rows and
// issue one wgmma m64nNk16 per 16 columns of the reduction: S for a K/V tile of Bc = 128 keys is
// d / 16 wgmma of N = 128; O += P V is Bc / 16 of N = d, P from registers, as chapter 05 kept it.
// The tiles lie in shared memory in wgmma's swizzled layout (smem_tiles.cuh); the softmax is
// chapter 05's, on the accumulators' 8-column tiles. A wgmma is asynchronous: the warps fence
// their registers before the chain, commit it as a group and wait for it before reading S or O.
// As FlashAttention-3, the chapter takes is_causal (both alignments) and no attn_mask: chapter 05's
// mask code, unrolled over S's 64 floats per thread, would take the registers past 255 (spills).
// Cost: the copies are still ordinary loads by every thread, and the warpgroup waits for each
// product before the next begins: nothing overlaps yet (steps c to f).
#include "dispatch.cuh"
#include "tile.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kThreads) wgmma_kernel(const attn::AttentionParams p) {
  T* Qs = aligned_smem<T>();
  T* Ks = Qs + kBr * D;
  T* Vs = Ks + kBc * D;
  const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * kBr;
  const int warp = static_cast<int>(threadIdx.x / 32), row = q0 + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const float scale_log2 = p.scale * attn::kLog2e;

  load_tile<T, kBr, D, kThreads>(Qs, Q + static_cast<size_t>(q0) * D, p.Lq - q0);
  const uint64_t q_desc = k_major(Qs), k_desc = k_major(Ks), v_desc = n_major<kBc>(Vs);
  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  for (int k0 = 0; k0 < p.Lk; k0 += kBc) {
    __syncthreads();  // the last tile's wgmma are done (waited for): K and V may be overwritten
    load_tile<T, kBc, D, kThreads>(Ks, K + static_cast<size_t>(k0) * D, p.Lk - k0);
    load_tile<T, kBc, D, kThreads>(Vs, V + static_cast<size_t>(k0) * D, p.Lk - k0);
    simt::fence_proxy_async();  // the threads' stores, visible to the tensor cores' reads
    __syncthreads();

    attend_tile<T, D>(O, m, l, q_desc, k_desc, v_desc, p, row, bh, k0, scale_log2);
  }
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t wgmma(const attn::AttentionParams& p) {
  return dispatch(p, [&](auto t, auto d) {
    constexpr int D = decltype(d)::value;
    return simt::launch(wgmma_kernel<decltype(t), D>, dim3((p.Lq + kBr - 1) / kBr, p.B * p.H), dim3(kThreads),
                        smem_bytes(D) + kAlign, p);
  });
}

}  // namespace ch09
