// rows_32.cu: step g. 32 query rows per warp, and tiles chosen per head dim.
//
// In steps c to f a warp owns 16 rows, so every K or V fragment it loads with ldmatrix.x4 feeds
// 2 mma: 512 bytes of shared memory read per 2 x 4096 FLOP, while the tensor cores of an SM need
// about twice that many FLOP per byte (notes/05_flash_v2.md). FlashAttention-2's kernels give a
// warp 32 rows: two m-tiles of 16 that share every K and V fragment, 4 mma per ldmatrix.x4, and a
// 128-row Q tile per block of 4 warps (scores_rows, accumulate_pv_rows in products.cuh). Each
// m-tile keeps its own RowState; the softmax runs once per m-tile.
// The registers decide the rest (Tiles in flash_v2.h): a lane now holds d floats of O and Bc of
// S, so Bc is 64 up to d = 64 and 32 above, where 8 warps (Br = 256) share each K/V tile's
// copies; Q's fragments are re-read from shared memory at every k-step instead of held for the
// whole loop; d = 256 keeps one m-tile per warp. With so few
// registers left, the ldmatrix addresses come from four offsets per operand computed once
// (Fragments in products.cuh), and P is packed to 16 bits as soon as its softmax is done.
// Cost: twice the registers per warp for O and S; Q's fragments read from shared memory once per
// K/V tile instead of once per block.
#include "flash_v2.h"
#include "pipeline.cuh"
#include "products.cuh"

namespace ch05 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(block_threads(Step::rows_32, D)) rows_32_kernel(const attn::AttentionParams p) {
  using L = Swizzled<D>;
  constexpr Tiles kT = fa2_tiles(D);
  constexpr int kM = kT.m_tiles, Br = kT.Br, Bc = kT.Bc, kStages = kT.stages, kThreads = 32 * kT.warps;
  static_assert(Br == kT.warps * kM * 16, "each warp owns kM m-tiles of the Q tile");
  T* Qs = simt::dynamic_smem<T>();      // [Br] rows
  T* Ks = Qs + L::elems(Br);            // [kStages][Bc] rows
  T* Vs = Ks + kStages * L::elems(Bc);  // [kStages][Bc] rows
  const int warp = static_cast<int>(threadIdx.x / 32), g = static_cast<int>(threadIdx.x % 32 / 4);
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, q0 = static_cast<int>(blockIdx.x) * Br;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const int tiles = (p.Lk + Bc - 1) / Bc;
  auto copy_kv = [&](int j) {
    const int k0 = j * Bc;
    copy_tile<T, D, L, kThreads>(Ks + j % kStages * L::elems(Bc), K + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    copy_tile<T, D, L, kThreads>(Vs + j % kStages * L::elems(Bc), V + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    simt::cp_async_commit();
  };

  copy_tile<T, D, L, kThreads>(Qs, Q + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
  simt::cp_async_commit();
  copy_kv(0);
  auto row = [&](int m) { return q0 + (warp * kM + m) * 16 + g; };  // m-tile m: rows row(m), row(m) + 8
  RowState<D> st[kM];  // the warp's rows warp * 16 kM ...: m-tile m holds 16 of them
  const float scale_log2 = p.scale * attn::kLog2e;
  const Fragments<L> frag;                      // this lane's ldmatrix offsets, computed once
  const T* Qw = Qs + warp * kM * 16 * L::kRow;  // the warp's rows of Q

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      copy_kv(j + 1);
      simt::cp_async_wait<1>();  // Q and tile j have landed (this thread's copies)
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();
    float s[kM][Bc / 8][4];
    uint32_t pa[kM][Bc / 16][4];  // P, packed
    scores_rows<T, D, Bc, kM, L>(s, frag, Qw, Ks + j % kStages * L::elems(Bc));
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      scale_and_mask<Bc>(s[m], row(m), p, b, h, j * Bc, scale_log2);
      online_softmax<Bc>(s[m], st[m]);
      pack_p<T, Bc>(pa[m], s[m]);
    }
    accumulate_pv_rows<T, D, Bc, kM, L>(st, pa, frag, Vs + j % kStages * L::elems(Bc));
    __syncthreads();
  }
#pragma unroll
  for (int m = 0; m < kM; ++m) store_rows<T>(st[m], row(m), p, bh);
}

}  // namespace

cudaError_t rows_32(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr Tiles kT = fa2_tiles(D);
    const size_t smem = smem_bytes(Step::rows_32, D, sizeof(T));
    return simt::launch(rows_32_kernel<T, D>, dim3((p.Lq + kT.Br - 1) / kT.Br, p.B * p.H),
                        dim3(block_threads(Step::rows_32, D)), smem, p);
  });
}

}  // namespace ch05
