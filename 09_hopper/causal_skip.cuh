// causal_skip.cuh: step g's block, its producer and its Consumers consumer warpgroups of kBr rows
// each (causal_skip.cu says what step g changed): step g launches it with two consumers, step h
// with consumers_for(d) (head_dim_tiles.cu). The producer copies the tiles the block's last row
// sees; each consumer multiplies those its own rows see (none past Lq) and lets the block's later
// ones go by (let_go), so that the turns and the ring's empty barrier count every consumer on
// every tile.
#pragma once
#include "06_causal/causal.h"
#include "ring.cuh"

namespace ch09 {

// Whether the grid is heaviest first, (heads, Q tiles counted down): only where the blocks differ.
__host__ __device__ inline bool heaviest_first(const attn::AttentionParams& p) {
  return p.causal != attn::Causal::none;
}

// Tiles j0 to tiles - 1, of which a consumer's rows see no key (under is_causal the block's last,
// seen by the consumers after it; every tile for a consumer with no row, past Lq, or whose rows see
// no key, bottom-right with Lq > Lk): it issues nothing, but takes and passes its turns, which the
// other consumers wait for, and gives the stages back, which the producer waits for. It waits for
// each tile first, so that its arrival counts for that tile's phase of empty, not for the phase of
// the tile before it in the same stage.
template <class Ring>
__device__ __forceinline__ void let_go(const Ring& ring, int c, int j0, int tiles, int consumers, int t0) {
  for (int j = j0; j < tiles; ++j) {
    const int s = ring.wait_tile(t0 + j);
    const PingPong turn(c, j, tiles, consumers);
    turn.take();
    turn.pass();
    simt::mbarrier_arrive(&ring.empty[s]);
  }
}

// The block of the grid's block b: its head and Q tile (a head >= heads is past the last section's).
__device__ __forceinline__ ch06::HeadTile block_tile(const attn::AttentionParams& p, uint3 b, dim3 grid) {
  return heaviest_first(p) ? ch06::heaviest_first_block(b, grid, static_cast<unsigned>(p.B * p.H))
                           : ch06::HeadTile{static_cast<int>(b.y), static_cast<int>(b.x)};
}

// A consumer's part of the Q tile from q0 of head bh, whose block visits `tiles` K/V tiles. A
// persistent block (step i) runs many: t0 is the tiles its ring took before, n the Q tiles it
// copied before; every consumer then waits for Q, so as to follow q_full's phases, and gives it
// back (q_empty) once its last S is done, so that the next Q's copy runs under its last P V.
template <class T, int D, int Consumers, bool Persistent = false, class R>
__device__ __forceinline__ void consume(const R& ring, const attn::AttentionParams& p, int q0, int bh, int tiles,
                                        int t0 = 0, int n = 0) {
  // The consumer, broadcast from lane 0: the same value, but ptxas then knows it is the warp's, as
  // from threadIdx alone it does not, and keeps what follows from it on the uniform datapath: Q's
  // descriptors, this consumer's tiles (the loop's trip count) and its tiles' descriptor arithmetic.
  // Without it, 536 instructions a warp along an unmasked tile at d = 128, not 510 (notes/09, "Each
  // consumer its own tiles").
  const int c = __shfl_sync(~0u, static_cast<int>(threadIdx.x) / kThreads - 1, 0), warp = static_cast<int>(threadIdx.x / 32) % 4;
  const int row = q0 + c * kBr + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const float scale_log2 = p.scale * attn::kLog2e;
  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
  if (tiles == 0) {  // no row of this block sees a key (or it has no row): O = 0
    ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
    return;
  }
  // This consumer's tiles: the block's, or fewer (its last row's; none past Lq).
  const int own = ch06::tiles_to_visit(p, q0 + c * kBr, kBr, kBc);
  // Raw scores only where no mask can remove a key (and for a positive scale: the maximum of the
  // raw scores is then the maximum of the scaled ones).
  const auto masked = [&](int j) {
    return j * kBc + kBc > p.Lk || !(scale_log2 > 0.f) ||
           (p.causal != attn::Causal::none && ch06::crosses_diagonal(p, q0 + c * kBr, j * kBc, kBc));
  };
  PingPong::start(c, Consumers);  // consumer 0 goes first
  if constexpr (Persistent) simt::mbarrier_wait_parity(ring.q_full, static_cast<unsigned>(n) & 1u);
  // A consumer none of whose rows sees a key (or with no row) multiplies nothing: O = 0.
  if (own > 0) {
    if constexpr (!Persistent) simt::mbarrier_wait_parity(ring.q_full, 0);
    const uint64_t q_desc = ring.q_desc(c);

    simt::WgmmaAccumulator<kBc> S;
    uint32_t pa[kBc / 16][4];  // P of the previous tile, waiting for its P V
    int s = ring.wait_tile(t0);
    const PingPong first(c, 0, tiles, Consumers);
    first.take();
    issue_s<T, D>(S, q_desc, ring.k_desc(s));
    first.pass();
    simt::wgmma_wait<0>(S);
    softmax_s(S, m, l, alpha, p, row, bh, 0, scale_log2, masked(0));  // O is still 0: no rescale
    ch05::pack_p<T, kBc>(pa, S.tiles());

    for (int j = 1; j < own; ++j) {
      const int prev = s;
      s = ring.wait_tile(t0 + j);
      const PingPong turn(c, j, tiles, Consumers);
      turn.take();
      issue_s<T, D>(S, q_desc, ring.k_desc(s));  // S_j
      issue_pv<T, D>(O, pa, ring.v_desc(prev));  // O += P_{j-1} V_{j-1}
      turn.pass();
      simt::wgmma_wait<1>(S);  // S_j is done; P_{j-1} V_{j-1} may still run
      softmax_s(S, m, l, alpha, p, row, bh, j * kBc, scale_log2, masked(j));  // P_j, in fp32 in S
      simt::wgmma_wait_in_place<0>(O);           // P_{j-1} V_{j-1} is done (after the softmax: ptxas would
                                                 // hoist a plain wait above it): P's registers and O are free
      simt::wgmma_fence_operand(pa);             // so P_j's packing stays after the wait (O's is in wgmma_wait)
      simt::mbarrier_arrive(&ring.empty[prev]);  // and so are K and V of tile j - 1
      ch05::rescale_o<D>(O.tiles(), alpha);
      ch05::pack_p<T, kBc>(pa, S.tiles());
    }
    if constexpr (Persistent) simt::mbarrier_arrive(ring.q_empty);  // its last S is done: Q is free
    issue_pv<T, D>(O, pa, ring.v_desc(s));
    simt::wgmma_wait<0>(O);
    simt::mbarrier_arrive(&ring.empty[s]);
  } else if constexpr (Persistent) {
    simt::mbarrier_arrive(ring.q_empty);  // no product of its reads Q
  }
  let_go(ring, c, own, tiles, Consumers, t0);
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

template <class T, int D, int Consumers>
__device__ __forceinline__ void causal_skip_block(const CUtensorMap& q_map, const CUtensorMap& k_map,
                                                  const CUtensorMap& v_map, const attn::AttentionParams& p) {
  const Ring<T, D, kRotatedStages, Consumers> ring;  // a stage more: each is given back a tile later
  const ch06::HeadTile at = block_tile(p, blockIdx, gridDim);
  if (at.head >= p.B * p.H) return;  // past the last section's heads
  const int q0 = at.tile * Consumers * kBr, tiles = ch06::tiles_to_visit(p, q0, Consumers * kBr, kBc);
  if (!split_roles(ring, &q_map, &k_map, &v_map, q0, at.head, tiles)) return;  // the producer is done
  consume<T, D, Consumers>(ring, p, q0, at.head, tiles);
}

}  // namespace ch09
