// decode_params.h: what every decoding kernel of the book receives (chapter 08). Plain data, no
// harness. The layout and the semantics are flash_attn_with_kvcache's:
//
//   q, o         [B, Lq, Hq, d]          the new tokens' queries and their outputs (Lq = 1 ... 128)
//   k/v_cache    [pages, page_size, Hkv, d]   a pool of pages; sequence b's key j lives in page
//                block_table[b][j / page_size], row j % page_size. An unpaged cache has no table
//                (block_table null), page_size = the capacity and max_pages = 1: [B, capacity, Hkv, d],
//                sequence b in page b. Steps b to d read only that; step e reads either.
//   k/v_new      [B, Lq, Hkv, d] or null  the new tokens' keys and values, written into the cache at
//                positions cache_seqlens[b] + t before attention (in place)
//   cache_seqlens [B]                     keys in sequence b's cache before that append
//
// Sequence b attends over L_b = cache_seqlens[b] (+ Lq when k_new is given) keys. Query head h uses
// KV head h / (Hq / Hkv) (GQA; PyTorch's enable_gqa and FlashAttention's mapping). With causal,
// new token t sees key j when j <= t + L_b - Lq: the diagonal aligned bottom-right, as FlashAttention
// aligns it (PyTorch's is_causal aligns it top-left; causal_lower_right matches).
#pragma once
#include "params.h"

namespace attn {

struct DecodeParams {
  const void* q;
  void* k_cache;
  void* v_cache;
  const void* k_new;
  const void* v_new;
  void* o;
  const int* block_table;    // [B, max_pages]; null: the cache is unpaged (above)
  const int* cache_seqlens;  // [B]
  const int* host_seqlens;   // the same on the host, for launchers that size grids by them (step a checks them)
  DType dtype;
  int B, Hq, Hkv, Lq, d;
  int page_size, max_pages;  // the pool holds B * max_pages pages or more
  float scale;
  bool causal;
  int splits;       // of each sequence's keys, across blocks (1: unsplit); chosen by the host
  void* workspace;  // what the variant asked for (partial outputs of the splits, gathered copies)

  ATTN_HOST_DEVICE int group() const { return Hq / Hkv; }  // query heads per KV head
  // Keys sequence b attends over, given its cache length.
  ATTN_HOST_DEVICE int keys(int cache_len) const { return cache_len + (k_new != nullptr ? Lq : 0); }
  // The cache row of sequence b's key j: in a paged cache, row j % page_size of page
  // block_table[b][j / page_size]; unpaged, row j of page b.
  ATTN_HOST_DEVICE long long paged_row(int b, int j) const {
    return static_cast<long long>(block_table[b * max_pages + j / page_size]) * page_size + j % page_size;
  }
  ATTN_HOST_DEVICE long long unpaged_row(int b, int j) const { return static_cast<long long>(b) * page_size + j; }
  // Either, as block_table says: for kernels that find a row once (the append, step a's copy); the
  // key loops of steps b to i are compiled for one kind (decode.cuh's key_row).
  ATTN_HOST_DEVICE long long cache_row(int b, int j) const { return block_table ? paged_row(b, j) : unpaged_row(b, j); }
};

}  // namespace attn
