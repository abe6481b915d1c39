// tensor_cores.cu: step c. Both products on tensor cores; P never leaves the registers.
//
// Step b computed every score and every output element with scalar fp32 multiply-adds. Here the
// 16 x 8 x 16 matrix products of mma.sync do the work, on fp16 or bf16 operands with fp32
// accumulation: each warp owns 16 rows of the 64-row Q tile (Q's fragments loaded once, with
// ldmatrix) and, for every 64-key tile,
//   S (16 x 64) = Q K^T      8 column tiles x d/16 steps of mma; K's fragments by ldmatrix
//   m, alpha, P = exp2(S - m) on the accumulators: a lane holds 2 rows; the 4 lanes of a quad
//                            share them and meet in two shuffles (quad_max)
//   O (16 x d) += P V        P's accumulators are already A fragments (mma.cuh): no trip
//                            through shared memory; V's fragments by ldmatrix.trans
// The products are in products.cuh and the softmax on the accumulators in fa2_tile.cuh: every
// later step of the chapter, and chapter 06, reuses them. K and V tiles are plain loads into
// shared-memory rows padded by 8 halves (pipeline.cuh), so that ldmatrix's 8 rows fall on
// different banks.
// Cost: P is rounded to fp16/bf16 before P V (the mma's inputs), as FlashAttention-2 does; the
// row sums l are kept in fp32. The tensor cores wait while the tiles load: step d overlaps them.
#include "flash_v2.h"
#include "pipeline.cuh"
#include "products.cuh"

namespace ch05 {
namespace {

// At least one block per SM: without it ptxas for sm_80 held this kernel to 128 registers and spilled
// at d = 32 (results/static-sm90/tile-experiments.md).
template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps, 1) tensor_cores_kernel(const attn::AttentionParams p) {
  using L = Padded<D>;
  T* Qs = simt::dynamic_smem<T>();  // [kBr] rows
  T* Ks = Qs + L::elems(kBr);       // [kBc] rows
  T* Vs = Ks + L::elems(kBc);       // [kBc] rows
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, g = tid % 32 / 4;
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, q0 = static_cast<int>(blockIdx.x) * kBr;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;

  for (int e = tid; e < kBr * D; e += 32 * kWarps) {
    const int r = e / D, c = e % D;
    Qs[L::at(r, c)] = q0 + r < p.Lq ? Q[static_cast<size_t>(q0 + r) * D + c] : T{};
  }
  __syncthreads();
  uint32_t qa[D / 16][4];  // this warp's 16 rows of Q as A fragments, one per 16 columns
  load_q<T, D, L>(qa, Qs, warp * 16);
  RowState<D> st;                      // this lane's two rows: their O, m and l
  const int row = q0 + warp * 16 + g;  // this lane's rows: row and row + 8
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int k0 = 0; k0 < p.Lk; k0 += kBc) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    for (int e = tid; e < kBc * D; e += 32 * kWarps) {
      const int r = e / D, c = e % D;
      const bool in = k0 + r < p.Lk;
      Ks[L::at(r, c)] = in ? K[static_cast<size_t>(k0 + r) * D + c] : T{};
      Vs[L::at(r, c)] = in ? V[static_cast<size_t>(k0 + r) * D + c] : T{};
    }
    __syncthreads();
    float s[kBc / 8][4];  // S = Q K^T: 8 tiles of 16 x 8
    scores_x2<T, D, kBc, L>(s, qa, Ks);
    scale_and_mask<kBc>(s, row, p, b, h, k0, scale_log2);  // base 2; masked keys -inf
    online_softmax<kBc>(s, st);                            // m, alpha applied to l and O, s = P
    accumulate_pv_x2<T, D, kBc, L>(st.o, s, Vs);           // O += P V
  }
  store_rows<T>(st, row, p, bh);
}

}  // namespace

cudaError_t tensor_cores(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    const size_t smem = smem_bytes(Step::tensor_cores, D, sizeof(T));
    return simt::launch(tensor_cores_kernel<T, D>, dim3((p.Lq + kBr - 1) / kBr, p.B * p.H), dim3(32 * kWarps), smem, p);
  });
}

}  // namespace ch05
