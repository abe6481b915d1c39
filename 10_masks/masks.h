// masks.h: chapter 10, masks as data. One kernel, chapter 05's lean_loop, serves every pattern of
// kernels/mask_mod.h (and is_causal, as the rule CausalMod): the steps change how the pattern
// reaches it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <cuda_runtime.h>

#include "06_causal/causal.h"
#include "kernels/params.h"

namespace ch10 {

// a: the rule written out as a boolean [Lq, Lk] tensor (write_mask, into `mask`), which the
// kernel then reads as any attn_mask: every tile visited, every score masked from memory.
cudaError_t write_mask(const attn::AttentionParams& p, uint8_t* mask);
cudaError_t mask_tensor(const attn::AttentionParams& p, const uint8_t* mask);
// b: the rule as a functor, evaluated per score in registers: no mask bytes, still every tile.
cudaError_t mask_mod(const attn::AttentionParams& p);
// c: FlexAttention's BlockMask at the kernel's tile sizes (write_block_mask, into `lists`), then the
// kernel visits the listed tiles only, and evaluates the rule on the partial ones only.
cudaError_t write_block_mask(const attn::AttentionParams& p, void* lists);
cudaError_t block_mask(const attn::AttentionParams& p, const void* lists);
// d: step c's kernel with a score_mod (softcap, ALiBi: kernels/score_mod.h) applied to every score of
// every visited tile; without one, step c's kernel.
cudaError_t score_mod(const attn::AttentionParams& p, const void* lists);
// e: a packed batch (ModKind::varlen, flash_attn_varlen_func's cu_seqlens): write_tile_map lists the
// sequences' Q tiles (into `map`: tile_slots entries, below), then one launch runs them, each block one Q
// tile of one sequence as a problem of its own, no padding. varlen() returns cudaErrorInvalidValue for
// another mask_mod (a window in each sequence, varlen_window, is step f's); write_tile_map serves both.
cudaError_t write_tile_map(const attn::AttentionParams& p, void* map);
cudaError_t varlen(const attn::AttentionParams& p, const void* map);
// f: a window (ModKind::window, FlashAttention-2's window_size) in closed form: each Q tile's K/V
// tiles are a range (window_tiles), the rule only on tiles that cross its edges, no lists; the Q
// tiles launched from the end whose tiles the window's cut at the sequence's ends lightens less
// (window_from_end). With a score_mod, step d's on every visited tile. cudaErrorInvalidValue for
// another mask_mod, is_causal (the window (left, 0) is it) or an attn_mask.
cudaError_t window(const attn::AttentionParams& p);
// f in a packed batch (ModKind::varlen_window: flash_attn_varlen_func with window_size): step e's tile
// map (write_tile_map) and blocks, in its order, each sequence's K/V tiles the window's range in that
// sequence. The table (mod.doc) must hold the sides after the offsets (Problem::mod_table, params.h:
// window_sides): the device's table cannot be checked here. cudaErrorInvalidValue for is_causal.
cudaError_t packed_window(const attn::AttentionParams& p, const void* map);

// BookMod (mask_mod.h) has no rule for a packed batch, whose blocks must each hold one sequence: steps
// a to d refuse one (cudaErrorInvalidValue) rather than run it unmasked; steps e and f run it.
inline bool has_rule(const attn::AttentionParams& p) { return !attn::is_packed(p.mod.kind); }
// Whether a launch has a score_mod (softcap, ALiBi): steps d, e and f choose their kernel by it.
inline bool has_score_mod(const attn::AttentionParams& p) { return p.softcap > 0.f || p.mod.alibi; }
// A packed batch as steps e and f take it: B = 1 (its sequences are the batch), no attn_mask.
inline bool packed_batch(const attn::AttentionParams& p) {
  return attn::is_packed(p.mod.kind) && p.B == 1 && p.mask_kind == attn::MaskKind::none;
}

// Step f's closed form, for p.mod a window (params.h: left = mod.arg, right = mod.right, a side of -1
// unbounded). A Q tile of rows [q0, q0 + rows) visits K/V tiles [first, first + count): from the tile
// of the first key its first row sees to that of the last key its last row sees (rows see ranges of
// keys that move on by one per row: together, one range); count 0 when no row sees a key. In 64
// bits: q0 + Lk - Lq - left may pass an int.
struct TileRange {
  int first, count;
};
ATTN_HOST_DEVICE inline TileRange window_tiles(const attn::AttentionParams& p, int q0, int rows, int Bc) {
  if (q0 >= p.Lq) return {0, 0};
  const long long offset = static_cast<long long>(p.Lk) - p.Lq, last_row = (q0 + rows < p.Lq ? q0 + rows : p.Lq) - 1;
  long long lo = p.mod.arg < 0 ? 0 : q0 + offset - p.mod.arg, hi = p.mod.right < 0 ? p.Lk - 1 : last_row + offset + p.mod.right;
  lo = lo < 0 ? 0 : lo, hi = hi > p.Lk - 1 ? p.Lk - 1 : hi;
  if (lo > hi) return {0, 0};
  return {static_cast<int>(lo / Bc), static_cast<int>(hi / Bc - lo / Bc + 1)};
}
// The visits j in [first, first + count) of a Q tile whose K/V tile every row sees whole, which need
// no rule: from the first tile past the last row's first key (k0 >= last_row + Lk - Lq - left) to
// the last before the first row's last key (k0 + Bc - 1 <= q0 + Lk - Lq + right) and within Lk. A
// range like the visits, computed once per Q tile, so that a tile's test is two comparisons of j.
ATTN_HOST_DEVICE inline TileRange window_full(const attn::AttentionParams& p, int q0, int rows, int Bc) {
  const TileRange visits = window_tiles(p, q0, rows, Bc);
  if (visits.count == 0) return {0, 0};
  const long long offset = static_cast<long long>(p.Lk) - p.Lq, last_row = (q0 + rows < p.Lq ? q0 + rows : p.Lq) - 1;
  const long long from = p.mod.arg < 0 ? 0 : last_row + offset - p.mod.arg;  // the first full tile's first key, at least
  const long long lo = from <= 0 ? 0 : (from + Bc - 1) / Bc;
  long long hi = p.Lk / Bc - 1;  // the last whole tile
  if (p.mod.right >= 0) {
    const long long to = q0 + offset + p.mod.right + 1 - Bc;  // its first key, at most
    hi = to < 0 ? -1 : to / Bc < hi ? to / Bc : hi;
  }
  return {static_cast<int>(lo - visits.first), static_cast<int>(hi >= lo ? hi - lo + 1 : 0)};
}
// The order of the Q tiles. Their work is equal but where the window is cut by the keys' start (the
// first rows, when left bounds it: rows i < left - (Lk - Lq); all of them when it does not) or by
// their end (the last rows i > Lq - 1 - right; all when right does not bound it), and there it
// shrinks towards the sequence's end. Launching from the end with the shorter cut sends the other
// end's tiles last, the lightest last: the last wave is made of light blocks (chapter 06's heaviest
// first, in either direction).
ATTN_HOST_DEVICE inline bool window_from_end(const attn::AttentionParams& p) {
  const long long offset = static_cast<long long>(p.Lk) - p.Lq;
  long long start = p.mod.arg < 0 ? p.Lq : p.mod.arg - offset, end = p.mod.right < 0 ? p.Lq : p.mod.right;
  start = start < 0 ? 0 : start > p.Lq ? p.Lq : start, end = end > p.Lq ? p.Lq : end;  // rows cut, of Lq
  return start >= end;
}

// Step e's tile map: one entry per slot of the grid (a block of every head), the sequence and its Q
// tile the slot runs, or seq -1 for a slot past the last tile. The grid is sized without reading
// cu_seqlens (on the device): a sequence of n queries has ceil(n / Br) <= n / Br + 1 tiles, so the
// sequences of Lq queries in all have at most Lq / Br + (their number) tiles, which chapter 06's
// grid lays over y and z (rounding up by fewer than z). The slots past the last tile are empty and
// cost a block start each.
struct SeqTile {
  int seq, tile;
};
inline dim3 tile_map_grid(int heads, int Lq, int sequences, int Br) {
  return ch06::heaviest_first_grid(static_cast<unsigned>(heads), static_cast<unsigned>(Lq / Br + sequences));
}
inline size_t tile_slots(int Lq, int sequences, int Br) {
  const dim3 g = tile_map_grid(1, Lq, sequences, Br);
  return static_cast<size_t>(g.y) * g.z;
}

// The block mask's lists, FlexAttention's names: for Q tile r, full_kv_num_blocks[r] wholly visible
// K/V tiles (full_kv_indices(r)[...]) and kv_num_blocks[r] partial ones (kv_indices(r)[...]), each
// in key order. The two lists of a Q tile are stored end to end in one row, the full ones first:
// the j-th tile the kernel visits is row(r)[j], one load that depends on nothing (a kernel that
// read a list's start from its count first would wait for two loads in a row). Then one byte per
// (Q tile, K/V tile) that write_block_mask's first kernel classifies them into. One set for every
// (batch, head): the book's rules do not depend on b, h.
struct BlockMaskShape {
  int q_tiles, kv_tiles;
  ATTN_HOST_DEVICE BlockMaskShape(int Lq, int Lk, int Br, int Bc) : q_tiles((Lq + Br - 1) / Br), kv_tiles((Lk + Bc - 1) / Bc) {}
  ATTN_HOST_DEVICE size_t pairs() const { return static_cast<size_t>(q_tiles) * kv_tiles; }
  ATTN_HOST_DEVICE size_t bytes() const { return sizeof(int) * (2 * static_cast<size_t>(q_tiles) + pairs()) + pairs(); }
};
template <class Int>
struct BlockMaskLists : BlockMaskShape {
  enum Class : uint8_t { empty, partial, full };
  Int *kv_num_blocks, *full_kv_num_blocks, *rows;
  ATTN_HOST_DEVICE BlockMaskLists(Int* base, int Lq, int Lk, int Br, int Bc)
      : BlockMaskShape(Lq, Lk, Br, Bc), kv_num_blocks(base), full_kv_num_blocks(base + q_tiles),
        rows(base + 2 * static_cast<size_t>(q_tiles)) {}
  ATTN_HOST_DEVICE Int* row(int r) const { return rows + static_cast<size_t>(r) * kv_tiles; }
  ATTN_HOST_DEVICE Int* full_kv_indices(int r) const { return row(r); }
  ATTN_HOST_DEVICE Int* kv_indices(int r) const { return row(r) + full_kv_num_blocks[r]; }
  // The classes, after the rows (uint8_t, or const uint8_t for const lists).
  ATTN_HOST_DEVICE auto* classes() const {
    using Byte = std::conditional_t<std::is_const_v<Int>, const uint8_t, uint8_t>;
    return reinterpret_cast<Byte*>(rows + pairs());
  }
};

}  // namespace ch10
