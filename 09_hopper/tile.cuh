// tile.cuh: what every step of this chapter does with one K/V tile once it lies in shared memory
// (step b's loop body): S = Q K^T as a chain of wgmma, chapter 05's softmax on S's tiles, and
// O += P V as a second chain, P from registers. The steps differ in how the tiles arrive and in
// what overlaps this, not in it.
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

// One warpgroup's rows (this thread's row and row + 8) against keys k0 .. k0 + kBc - 1: Q, K and V
// given by their k-step 0 descriptors (smem_tiles.cuh). O, m and l carry the online softmax.
template <class T, int D, class Turn = NoTurn>
__device__ __forceinline__ void attend_tile(simt::WgmmaAccumulator<D>& O, float (&m)[2], float (&l)[2],
                                            uint64_t q_desc, uint64_t k_desc, uint64_t v_desc,
                                            const attn::AttentionParams& p, int row, int bh, int k0,
                                            float scale_log2, const Turn& turn = {}) {
  simt::WgmmaAccumulator<kBc> S;
  turn.take();
  simt::wgmma_fence();
#pragma unroll
  for (int s = 0; s < D / 16; ++s)
    simt::wgmma_ss<T, kBc>(S, q_desc + k_major_step<kBr>(s), k_desc + k_major_step<kBc>(s), s > 0);
  simt::wgmma_commit();
  turn.pass();
  simt::wgmma_wait<0>(S);

  float (&s)[kBc / 8][4] = S.tiles();
  ch05::scale_and_mask<kBc, false>(s, row, p, bh / p.H, bh % p.H, k0, scale_log2);  // is_causal; no attn_mask
  ch05::online_softmax<kBc, D, ch05::Exp2Ftz>(s, O.tiles(), m, l);
  uint32_t pa[kBc / 16][4];
  ch05::pack_p<T, kBc>(pa, s);

  simt::wgmma_fence_operand(O);  // O's rescale stays before the fence
  simt::wgmma_fence();           // O was rescaled, P packed: the wgmma must see them
#pragma unroll
  for (int kk = 0; kk < kBc / 16; ++kk) simt::wgmma_rs<T, D, true>(O, pa[kk], v_desc + n_major_step(kk), true);
  simt::wgmma_commit();
  simt::wgmma_wait<0>(O);
}

}  // namespace ch09
