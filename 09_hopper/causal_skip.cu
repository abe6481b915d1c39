// causal_skip.cu: step g. Step f with chapter 06's causal policy: the K/V tiles above the diagonal
// are never copied nor multiplied, only the tiles the diagonal (or the end of the keys) crosses are
// masked, and under is_causal the heaviest Q tiles are launched first, a section of heads at a time.
//
// Steps b to f applied is_causal key by key on every K/V tile: about half of a causal problem's
// products and copies were thrown away. Here a block visits the tiles that chapter 06's
// tiles_to_visit gives for its 128 rows; the producer copies only those, and both consumers walk
// the same list (the ring's empty barrier counts both, and the turns need the same number of
// chains): consumer 0's rows end 64 rows earlier, so its last tile may be masked whole. Of the tiles
// visited, only those crossing a consumer's own diagonal or the last key (ch06::crosses_diagonal)
// go through the mask; the others take the scale into the exponent (softmax_s with masked =
// false), as chapter 05's step h does. And since a block's work now grows with its Q tile, under
// is_causal the grid is (heads, Q tiles) with the last Q tile first (chapter 06's balanced order),
// so that the last wave is made of light blocks; in sections of heads whose K/V fit in L2
// (FlashAttention-3's order: ch06::heaviest_first_grid, kv_section in hopper.h), since one block per
// SM and a ring of a few stages cannot hide K/V read again from DRAM, which every head's Q tiles in
// turn would force past 32 MB of K/V (at B = 16, H = 32, N = 1024, d = 64: 470 MB of 670). Without is_causal the blocks are alike, there is
// nothing to balance, and the grid stays step f's (Q tiles, heads): the blocks in flight together
// are then mostly one head's, reading the same K/V tiles while L2 holds them, where heads first
// would spread them over as many heads, each reading its K/V from DRAM. A grid's y holds 65535
// blocks, Lq = 8 388 480 in Q tiles of 128 rows: past that chapter 06's heaviest_first_grid spreads
// the Q tiles over y and z, in the same launch order, so that no grid dimension exceeds its limit
// for any Lq (the heads are at most 65535 by the registry, as for steps b to f). A block whose rows
// see no key (bottom-right, Lq > Lk) copies nothing and writes zeros; one the spread adds past the
// last row copies and writes nothing.
// Cost: a branch per tile; consumer 0 may multiply one tile that it masks whole; under is_causal,
// the last section's blocks past its heads (fewer than the sections per Q tile) start and return.
#include "06_causal/causal.h"
#include "ring.cuh"

namespace ch09 {
namespace {

// Whether the grid is heaviest first, (heads, Q tiles counted down): only where the blocks differ.
__host__ __device__ inline bool heaviest_first(const attn::AttentionParams& p) { return p.causal != attn::Causal::none; }

template <class T, int D>
__global__ void __launch_bounds__(kWsThreads, 1)
    causal_skip_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                       const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  constexpr int rows = kConsumers * kBr;
  const Ring<T, D, kRotatedStages> ring;  // a stage more: each is given back a tile later
  const int heads = p.B * p.H;
  const ch06::HeadTile at = heaviest_first(p) ? ch06::heaviest_first_block(blockIdx, gridDim, static_cast<unsigned>(heads))
                                              : ch06::HeadTile{static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
  if (at.head >= heads) return;  // past the last section's heads
  const int bh = at.head, q0 = at.tile * rows;
  const int tiles = ch06::tiles_to_visit(p, q0, rows, kBc);
  if (!split_roles(ring, &q_map, &k_map, &v_map, q0, bh, tiles)) return;  // the producer is done

  const int c = static_cast<int>(threadIdx.x) / kThreads - 1, warp = static_cast<int>(threadIdx.x / 32) % 4;
  const int row = q0 + c * kBr + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const float scale_log2 = p.scale * attn::kLog2e;
  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
  if (tiles == 0) {  // no row of this block sees a key (or it has no row): O = 0
    ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
    return;
  }
  // Raw scores only where no mask can remove a key (and for a positive scale: the maximum of the
  // raw scores is then the maximum of the scaled ones).
  const auto masked = [&](int j) {
    return j * kBc + kBc > p.Lk || !(scale_log2 > 0.f) ||
           (p.causal != attn::Causal::none && ch06::crosses_diagonal(p, q0 + c * kBr, j * kBc, kBc));
  };
  PingPong::start(c);  // consumer 0 goes first
  simt::mbarrier_wait_parity(ring.q_full, 0);
  const uint64_t q_desc = ring.q_desc(c);

  simt::WgmmaAccumulator<kBc> S;
  uint32_t pa[kBc / 16][4];  // P of the previous tile, waiting for its P V
  int s = ring.wait_tile(0);
  const PingPong first(c, 0, tiles);
  first.take();
  issue_s<T, D>(S, q_desc, ring.k_desc(s));
  first.pass();
  simt::wgmma_wait<0>(S);
  softmax_s(S, m, l, alpha, p, row, bh, 0, scale_log2, masked(0));  // O is still 0: no rescale
  ch05::pack_p<T, kBc>(pa, S.tiles());

  for (int j = 1; j < tiles; ++j) {
    const int prev = s;
    s = ring.wait_tile(j);
    const PingPong turn(c, j, tiles);
    turn.take();
    issue_s<T, D>(S, q_desc, ring.k_desc(s));  // S_j
    issue_pv<T, D>(O, pa, ring.v_desc(prev));  // O += P_{j-1} V_{j-1}
    turn.pass();
    simt::wgmma_wait<1>(S);  // S_j is done; P_{j-1} V_{j-1} may still run
    softmax_s(S, m, l, alpha, p, row, bh, j * kBc, scale_log2, masked(j));  // P_j, in fp32 in S
    simt::wgmma_wait_in_place<0>(O);  // P_{j-1} V_{j-1} is done (after the softmax: ptxas would
                                      // hoist a plain wait above it): P's registers and O are free
    simt::wgmma_fence_operand(pa);  // so P_j's packing stays after the wait (O's is in wgmma_wait)
    simt::mbarrier_arrive(&ring.empty[prev]);  // and so are K and V of tile j - 1
    ch05::rescale_o<D>(O.tiles(), alpha);
    ch05::pack_p<T, kBc>(pa, S.tiles());
  }
  issue_pv<T, D>(O, pa, ring.v_desc(s));
  simt::wgmma_wait<0>(O);
  simt::mbarrier_arrive(&ring.empty[s]);
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t causal_skip(const attn::AttentionParams& p) {
  return launch_ring<kRotatedStages>(
      p, [](auto t, auto d) { return causal_skip_kernel<decltype(t), decltype(d)::value>; }, heaviest_first(p));
}

}  // namespace ch09
