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
#include "05_flash_v2/lean_loop.cuh"
#include "causal.h"

namespace ch06 {
namespace {

enum class Mode { none, causal, mask };

template <Mode kMode, bool kHeaviestFirst>
struct SkipTiles {
  static constexpr bool kAttnMask = kMode == Mode::mask;
  using Block = ch05::EveryTile::Block;
  // Heaviest first: grid (heads, Q tiles over y and z), the Q tile counting down from the last
  // (causal.h: heaviest_first_grid).
  __device__ static Block block(const attn::AttentionParams&, int /*q_tiles*/) {
    if (!kHeaviestFirst) return {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
    return {static_cast<int>(blockIdx.x), heaviest_first_tile(blockIdx.y, blockIdx.z, gridDim.y, gridDim.z)};
  }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int Br, int Bc) {
    return kMode == Mode::causal ? tiles_to_visit(p, q0, Br, Bc) : (p.Lk + Bc - 1) / Bc;
  }
  __device__ static int kv_tile(const attn::AttentionParams&, int /*q0*/, int j) { return j; }
  // Only a tile crossing the diagonal (its last key past the first row's limit), the end of the
  // keys, or any tile under an attn_mask needs masking.
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int /*j*/, int k0, int Bc) {
    return kMode == Mode::mask || tile_needs_mask(p, q0, k0, Bc, kMode == Mode::causal);
  }
};

template <class T, int D, Mode kMode, bool kHeaviestFirst>
cudaError_t launch(const attn::AttentionParams& p) {
  constexpr int Br = ch05::fa2_tiles(D).Br;
  const unsigned q_tiles = static_cast<unsigned>((p.Lq + Br - 1) / Br), heads = static_cast<unsigned>(p.B * p.H);
  const dim3 grid = kHeaviestFirst ? heaviest_first_grid(heads, q_tiles) : dim3(q_tiles, heads);
  const size_t smem = ch05::smem_bytes(ch05::Step::lean_loop, D, sizeof(T));
  return simt::launch(ch05::lean_loop_kernel<T, D, SkipTiles<kMode, kHeaviestFirst>>, grid,
                      dim3(ch05::block_threads(ch05::Step::lean_loop, D)), smem, p);
}

}  // namespace

cudaError_t skip_tiles(const attn::AttentionParams& p, bool heaviest_first) {
  return ch05::dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    // Only skipped tiles make Q tiles unequal: with an attn_mask (every tile visited) or without
    // is_causal there is no order to balance, and the grid-order kernel serves both variants.
    if (p.mask_kind != attn::MaskKind::none) return launch<T, D, Mode::mask, false>(p);
    if (p.causal == attn::Causal::none) return launch<T, D, Mode::none, false>(p);
    return heaviest_first ? launch<T, D, Mode::causal, true>(p) : launch<T, D, Mode::causal, false>(p);
  });
}

}  // namespace ch06
