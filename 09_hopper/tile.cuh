// tile.cuh: what every step of this chapter does with one K/V tile once it lies in shared memory
// (step b's loop body): S = Q K^T as a chain of wgmma, chapter 05's softmax on S's tiles, and
// O += P V as a second chain, P from registers. Steps b to e run the three one after another
// (attend_tile) and differ in how the tiles arrive and who issues when; step f reorders them
// (intra_overlap.cu).
#pragma once
#include "05_flash_v2/products.cuh"  // and fa2_tile.cuh
#include "hopper.h"
#include "smem_tiles.cuh"

namespace ch09 {

// Who may issue the S chain when: steps b to d issue it at once (NoTurn); step e's consumers take
// turns (ping_pong.cu).
struct NoTurn {
  __device__ __forceinline__ void take() const {}
  __device__ __forceinline__ void pass() const {}
};

// S = Q K^T for one K/V tile, issued as one group: Q and K given by their k-step 0 descriptors
// (smem_tiles.cuh).
template <class T, int D>
__device__ __forceinline__ void issue_s(simt::WgmmaAccumulator<kBc>& S, uint64_t q_desc, uint64_t k_desc) {
  simt::wgmma_fence_operand(S);  // the last tile's reads of S (its softmax) stay before the fence
  simt::wgmma_fence();
#pragma unroll
  for (int s = 0; s < D / 16; ++s)
    simt::wgmma_ss<T, kBc>(S, q_desc + k_major_step<kBr>(s), k_desc + k_major_step<kBc>(s), s > 0);
  simt::wgmma_commit();
}

// S's scores scaled and masked (is_causal; no attn_mask), then the first half of chapter 05's
// online softmax on them: new m and l, S holding P in fp32, and alpha, what O must be multiplied by
// (the second half, ch05::rescale_o). This thread's rows are row and row + 8, its keys k0 .. k0 +
// kBc - 1. Step g passes masked = false for a tile that neither the diagonal nor the end of the
// keys crosses: the scale then goes into the exponent's FFMA, as in chapter 05's step h.
__device__ __forceinline__ void softmax_s(simt::WgmmaAccumulator<kBc>& S, float (&m)[2], float (&l)[2],
                                          float (&alpha)[2], const attn::AttentionParams& p, int row, int bh,
                                          int k0, float scale_log2, bool masked = true) {
  float (&s)[kBc / 8][4] = S.tiles();
  if (masked) ch05::scale_and_mask<kBc, false>(s, row, p, bh / p.H, bh % p.H, k0, scale_log2);
  ch05::softmax_scores<kBc, ch05::Exp2Ftz>(s, m, l, alpha, masked ? 1.f : scale_log2);
}

// O += P V, P from registers, V by its k-step 0 descriptor, issued as one group.
template <class T, int D>
__device__ __forceinline__ void issue_pv(simt::WgmmaAccumulator<D>& O, uint32_t (&pa)[kBc / 16][4],
                                         uint64_t v_desc) {
  simt::wgmma_fence_operand(O);   // O's rescale stays before the fence
  simt::wgmma_fence_operand(pa);  // and so does P's packing
  simt::wgmma_fence();            // O was rescaled, P packed: the wgmma must see them
#pragma unroll
  for (int kk = 0; kk < kBc / 16; ++kk) simt::wgmma_rs<T, D, true>(O, pa[kk], v_desc + n_major_step(kk), true);
  simt::wgmma_commit();
}

// One warpgroup's rows against one K/V tile, each part waiting for the one before: the S chain
// (in this warpgroup's turn, when the step has turns), the softmax, the P V chain. O, m and l
// carry the online softmax.
template <class T, int D, class Turn = NoTurn>
__device__ __forceinline__ void attend_tile(simt::WgmmaAccumulator<D>& O, float (&m)[2], float (&l)[2],
                                            uint64_t q_desc, uint64_t k_desc, uint64_t v_desc,
                                            const attn::AttentionParams& p, int row, int bh, int k0,
                                            float scale_log2, const Turn& turn = {}) {
  simt::WgmmaAccumulator<kBc> S;
  turn.take();
  issue_s<T, D>(S, q_desc, k_desc);
  turn.pass();
  simt::wgmma_wait<0>(S);
  float alpha[2];
  softmax_s(S, m, l, alpha, p, row, bh, k0, scale_log2);
  ch05::rescale_o<D>(O.tiles(), alpha);
  uint32_t pa[kBc / 16][4];
  ch05::pack_p<T, kBc>(pa, S.tiles());
  issue_pv<T, D>(O, pa, v_desc);
  simt::wgmma_wait<0>(O);
}

}  // namespace ch09
