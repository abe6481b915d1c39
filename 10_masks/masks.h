// masks.h: chapter 10, masks as data. One kernel, chapter 05's lean_loop, serves every pattern of
// kernels/mask_mod.h (and is_causal, as the rule CausalMod): the steps change how the pattern
// reaches it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <cuda_runtime.h>

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
