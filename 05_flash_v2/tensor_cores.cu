// tensor_cores.cu: step c. Both products on tensor cores; P never leaves the registers.
//
// Step b computed every score and every output element with scalar fp32 multiply-adds. Here the
// 16 x 16 x 8 matrix products of mma.sync do the work, on fp16 or bf16 operands with fp32
// accumulation: each warp owns 16 rows of the 64-row Q tile (Q's fragments loaded once, with
// ldmatrix) and, for every 64-key tile,
//   S (16 x 64) = Q K^T      8 column tiles x d/16 steps of mma; K's fragments by ldmatrix
//   m, alpha, P = exp2(S - m) on the accumulators: a lane holds 2 rows; the 4 lanes of a quad
//                            share them and meet in two shuffles (quad_max)
//   O (16 x d) += P V        P's accumulators are already A fragments (kernels/mma.cuh): no trip
//                            through shared memory; V's fragments by ldmatrix.trans
// Scores are in base 2, scale * log2(e) applied to the accumulators; the softmax steps on the
// accumulators are in fa2_tile.cuh, shared with step d and chapter 06. K and V tiles are plain
// loads into padded shared-memory rows (d + 8 halves: ldmatrix's 8 rows fall on different banks).
// Cost: P is rounded to fp16/bf16 before P V (the mma's inputs), as FlashAttention-2 does; the
// row sums l are kept in fp32. The tiles are loaded while the tensor cores wait: step d overlaps.
#include "fa2_tile.cuh"
#include "flash_v2.h"
#include "simt/ptx.cuh"
#include "simt/simt.h"

namespace ch05 {
namespace {

constexpr int kWarps = 4, Br = 16 * kWarps, Bc = 64;

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) tensor_cores_kernel(const attn::AttentionParams p) {
  constexpr int LD = D + 8;  // padded rows, in elements
  T* Qs = simt::dynamic_smem<T>();  // [Br][LD]
  T* Ks = Qs + Br * LD;             // [Bc][LD]
  T* Vs = Ks + Bc * LD;             // [Bc][LD]
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4;
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, q0 = static_cast<int>(blockIdx.x) * Br;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;

  for (int e = tid; e < Br * D; e += 32 * kWarps) {
    const int r = e / D, c = e % D;
    Qs[r * LD + c] = q0 + r < p.Lq ? Q[static_cast<size_t>(q0 + r) * D + c] : T{};
  }
  __syncthreads();
  uint32_t qa[D / 16][4];  // this warp's 16 rows of Q as A fragments, one per 16 columns
  #pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) simt::ldmatrix_x4(qa[kk], &Qs[(warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8]);

  RowState<D> st;  // this lane's two rows: their O, m and l
  st.row[0] = q0 + warp * 16 + g, st.row[1] = st.row[0] + 8;
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int k0 = 0; k0 < p.Lk; k0 += Bc) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    for (int e = tid; e < Bc * D; e += 32 * kWarps) {
      const int r = e / D, c = e % D;
      const bool in = k0 + r < p.Lk;
      Ks[r * LD + c] = in ? K[static_cast<size_t>(k0 + r) * D + c] : T{};
      Vs[r * LD + c] = in ? V[static_cast<size_t>(k0 + r) * D + c] : T{};
    }
    __syncthreads();

    float s[Bc / 8][4];  // S = Q K^T: 8 tiles of 16 x 8
    #pragma unroll
    for (int nt = 0; nt < Bc / 8; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
      #pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t kb[2];  // K rows nt*8 .. +7, columns kk*16 .. +15: B = K^T, "column-major"
        simt::ldmatrix_x2(kb, &Ks[(nt * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) % 2) * 8]);
        simt::mma_m16n8k16<T>(s[nt], qa[kk], kb, s[nt]);
      }
    }
    scale_and_mask<Bc>(s, st, p, b, h, k0, scale_log2);  // base 2; masked keys -inf
    online_softmax<Bc>(s, st);                           // m, alpha applied to l and O, s = P

    #pragma unroll
    for (int kk = 0; kk < Bc / 16; ++kk) {  // O += P V, 16 keys at a time
      uint32_t pa[4];
      attn::p_fragment<T>(pa, s[2 * kk], s[2 * kk + 1]);
      #pragma unroll
      for (int nt = 0; nt < D / 8; ++nt) {
        uint32_t vb[2];  // V rows kk*16 .. +15, columns nt*8 .. +7, transposed on the way
        simt::ldmatrix_x2_trans(vb, &Vs[(kk * 16 + lane % 16) * LD + nt * 8]);
        simt::mma_m16n8k16<T>(st.o[nt], pa, vb, st.o[nt]);
      }
    }
  }
  store_rows<T>(st, p, bh);
}

}  // namespace

cudaError_t tensor_cores(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    const size_t smem = (Br + 2 * Bc) * (D + 8) * sizeof(T);
    return simt::launch(tensor_cores_kernel<T, D>, dim3((p.Lq + Br - 1) / Br, p.B * p.H), dim3(32 * kWarps), smem, p);
  });
}

}  // namespace ch05
