// masks.h: chapter 10, masks as data. One kernel, chapter 05's lean_loop, serves every pattern of
// kernels/mask_mod.h (and is_causal, as the rule CausalMod): the steps change how the pattern
// reaches it.
#pragma once
#include <cstddef>
#include <cstdint>
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

// The block mask's lists, FlexAttention's names: for Q tile r, kv_num_blocks[r] partial K/V tiles
// (kv_indices[r][...]) and full_kv_num_blocks[r] wholly visible ones (full_kv_indices[r][...]), in
// key order. One set for every (batch, head): the book's rules do not depend on b, h.
template <class Int>
struct BlockMaskLists {
  Int *kv_num_blocks, *kv_indices, *full_kv_num_blocks, *full_kv_indices;
  int kv_tiles;
  ATTN_HOST_DEVICE BlockMaskLists(Int* base, int q_tiles, int kv_tiles_)
      : kv_num_blocks(base), kv_indices(base + q_tiles), full_kv_num_blocks(base + q_tiles + q_tiles * kv_tiles_),
        full_kv_indices(base + 2 * q_tiles + q_tiles * kv_tiles_), kv_tiles(kv_tiles_) {}
  ATTN_HOST_DEVICE static size_t bytes(int q_tiles, int kv_tiles) {
    return sizeof(int) * 2 * static_cast<size_t>(q_tiles) * (1 + static_cast<size_t>(kv_tiles));
  }
};
}  // namespace ch10
