// skip_tiles.cu: causal attention that skips what the mask removes, on chapter 05's fast step.
//
// Chapter 05's kernel (lean_loop.cuh) applies is_causal key by key: every K/V tile of every Q tile
// is loaded, multiplied and masked, and about half of that work is thrown away. A Q tile of rows
// [q0, q0 + Br) sees keys up to q_last + offset only (offset 0 for top-left, Lk - Lq for
// bottom-right): the K/V tiles past that are skipped (the loop simply ends earlier), and of the
// tiles it visits, only those that cross the diagonal, or the end of the sequence, need the mask.
// The others take chapter 05's unmasked path (scale folded into exp2). An attn_mask, when given,
// goes through the same kernel but is applied on every tile; the mode is a template parameter,
// so the kernels of the other modes carry no attn_mask code at all.
// With the work per Q tile now proportional to its position, the order of the blocks matters:
// blocks are launched in the order of their index, and the heavy tiles of the last head would
// otherwise run alone at the end. heaviest_first launches the heaviest Q tile of every head
// first, then the next heaviest of every head, and so on, so the last wave is made of short blocks.
// All of it is a Policy of chapter 05's kernel: which Q tile a block runs, which K/V tiles it
// visits, which need the mask.
// Cost: none over chapter 05 on the tiles that run; a block whose rows see no key (bottom-right
// alignment with Lq > Lk) writes zeros without loading anything.
#include "skip_tiles.cuh"

namespace ch06 {

cudaError_t skip_tiles(const attn::AttentionParams& p, bool heaviest_first) {
  return ch05::dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    // Only skipped tiles make Q tiles unequal: with an attn_mask (every tile visited) or without
    // is_causal there is no order to balance, and the grid-order kernel serves both variants.
    if (p.mask_kind != attn::MaskKind::none) return launch_tiles<T, D, SkipTiles<Mode::mask, false>>(p);
    if (p.causal == attn::Causal::none) return launch_tiles<T, D, SkipTiles<Mode::none, false>>(p);
    return heaviest_first ? launch_tiles<T, D, SkipTiles<Mode::causal, true>>(p)
                          : launch_tiles<T, D, SkipTiles<Mode::causal, false>>(p);
  });
}

}  // namespace ch06
