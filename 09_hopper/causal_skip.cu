// causal_skip.cu: step g. Step f with chapter 06's causal policy: the K/V tiles above the diagonal
// are never copied nor multiplied, only the tiles the diagonal (or the end of the keys) crosses are
// masked, and under is_causal the heaviest Q tiles are launched first, a section of heads at a time.
//
// Steps b to f applied is_causal key by key on every K/V tile: about half of a causal problem's
// products and copies were thrown away. Here a block visits the tiles that chapter 06's
// tiles_to_visit gives for its 128 rows; the producer copies only those, and each consumer
// multiplies those its own 64 rows see: consumer 0's rows end 64 rows earlier, and a last tile that
// it would mask whole it lets go by (causal_skip.cuh's let_go: it takes and passes its turn and
// gives the stage back, as the turns and the ring's empty barrier count on), as a consumer with no
// row (past Lq) or whose rows see no key lets go every tile. Of the tiles
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
// Cost: a branch per tile; a tile let go still costs a turn and a wait; under is_causal,
// the last section's blocks past its heads (fewer than the sections per Q tile) start and return.
#include "causal_skip.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kWsThreads, 1)
    causal_skip_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                       const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  causal_skip_block<T, D, kConsumers>(q_map, k_map, v_map, p);
}

}  // namespace

cudaError_t causal_skip(const attn::AttentionParams& p) {
  return launch_ring<kRotatedStages>(
      p, [](auto t, auto d) { return causal_skip_kernel<decltype(t), decltype(d)::value>; }, heaviest_first(p));
}

}  // namespace ch09
