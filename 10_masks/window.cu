// window.cu: step f, a sliding window in closed form. FlashAttention-2's window_size = (left,
// right): a query sees the keys from `left` before its diagonal to `right` after it, the diagonal
// bottom-right as FlashAttention aligns it (params.h). Step c found a pattern's tiles by evaluating
// its rule on every (query, key) pair and listing them; a window needs no list. A Q tile sees keys
// from its first row's first to its last row's last: its K/V tiles are one range, two divisions
// away (masks.h: window_tiles), and a tile needs the rule only where it crosses one of the window's
// two edges or the end of the keys: the others are a range of visits too (window_full), so a tile's
// test is two comparisons. The kernel is chapter 05's lean_loop again, with that Policy: the rule is
// the Window functor itself, not BookMod's switch over the kinds.
// With the window cut by the sequence's start (and end), the Q tiles there have less work, and the
// blocks are launched from the end where the cut is shorter (window_from_end), so that the lighter
// tiles close the launch, as chapter 06 launched its causal tiles heaviest first.
// The same range serves a window in each sequence of step e's packed batch (flash_attn_varlen_func
// with window_size): step e's blocks and part, the sequence's own diagonal, this Policy's tiles.
// Step d's score mods apply on every visited tile, as there.
// Cost: nothing is written or read beyond Q, K, V and O; per block, a few integer instructions for the
// two ranges and the order; in a packed batch, step e's map and two loads more, the window's sides.
#include "kernels/mask_mod.h"
#include "sequence_tiles.cuh"

namespace ch10 {
namespace {

// The window's K/V tiles of a Q tile as a range (masks.h), over the blocks Base gives: step f's grid
// of Q tiles (FromEnd, below) or step e's packed batch, a sequence per block (InSequence).
template <int Br, int Bc, class Base>
struct WindowRange : Base {
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int /*Br*/, int /*Bc*/) {
    return window_tiles(p, q0, Br, Bc).count;
  }
  __device__ static int kv_tile(const attn::AttentionParams& p, int q0, int j) { return window_tiles(p, q0, Br, Bc).first + j; }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int j, int /*k0*/, int /*Bc*/) {
    const TileRange full = window_full(p, q0, Br, Bc);
    return j < full.first || j >= full.first + full.count;
  }
  __device__ static attn::Window mask_mod(const attn::AttentionParams& p) { return {p.mod.arg, p.mod.right, p.Lk - p.Lq}; }
};

// Grid (heads, Q tiles over y and z), chapter 06's: the Q tiles counted down from the last, or up.
struct FromEnd : ch05::EveryTile {
  __device__ static Block block(const attn::AttentionParams& p, int /*q_tiles*/) {
    const int head = static_cast<int>(blockIdx.x);
    if (window_from_end(p)) return {head, ch06::heaviest_first_tile(blockIdx.y, blockIdx.z, gridDim.y, gridDim.z)};
    return {head, static_cast<int>(blockIdx.y + gridDim.y * blockIdx.z)};  // past the last tile: nothing to visit
  }
};
using ScoredFromEnd = attn::WithBookScore<FromEnd>;

// A packed batch's sequence (step e's part, Sequences) with the window in it: the part's mod becomes
// the window, its sides read from after the offsets (params.h: varlen_window), so that WindowRange
// finds them where step f's launch has them, and the diagonal is the sequence's own (the part's
// Lk - Lq).
template <class Sequences>
struct InSequence : Sequences {
  __device__ static attn::AttentionParams part(const attn::AttentionParams& p) {
    attn::AttentionParams one = Sequences::part(p);
    const int* sides = attn::window_sides(p.mod);
    one.mod.kind = attn::ModKind::window;
    one.mod.arg = sides[0], one.mod.right = sides[1];
    return one;
  }
};
template <class T, int Br, int Bc>
using PackedWindow = WindowRange<Br, Bc, InSequence<SequenceTiles<T, Br, Bc>>>;
template <class T, int Br, int Bc>
using ScoredPackedWindow = WindowRange<Br, Bc, InSequence<ScoredSequenceTiles<T, Br, Bc>>>;

}  // namespace

cudaError_t window(const attn::AttentionParams& p) {
  // Its Policy reads the window's sides, and masks by them alone: is_causal is the window (left, 0).
  if (p.mod.kind != attn::ModKind::window || p.causal != attn::Causal::none || p.mask_kind != attn::MaskKind::none)
    return cudaErrorInvalidValue;
  const bool scored = has_score_mod(p);  // chosen at launch, as step d chooses
  return ch05::dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr ch05::Tiles kT = ch05::fa2_tiles(D);
    const auto q_tiles = static_cast<unsigned>((p.Lq + kT.Br - 1) / kT.Br), heads = static_cast<unsigned>(p.B * p.H);
    const dim3 grid = ch06::heaviest_first_grid(heads, q_tiles);
    if (scored) return ch05::launch_policy<T, D, WindowRange<kT.Br, kT.Bc, ScoredFromEnd>>(p, grid);
    return ch05::launch_policy<T, D, WindowRange<kT.Br, kT.Bc, FromEnd>>(p, grid);
  });
}

cudaError_t packed_window(const attn::AttentionParams& p, const void* map) {
  // Its Policy reads cu_seqlens and the sides after them; is_causal is the window (left, 0).
  if (!packed_batch(p) || p.mod.kind != attn::ModKind::varlen_window || p.causal != attn::Causal::none)
    return cudaErrorInvalidValue;
  return launch_sequences<PackedWindow, ScoredPackedWindow>(p, map);
}

}  // namespace ch10
