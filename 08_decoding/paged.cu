// paged.cu: step e. The cache as a pool of pages of any size (1, 16, 256, ...): key j of sequence
// b is row j % page_size of page block_table[b][j / page_size]. A sequence grows a page at a time,
// from any free page, and no sequence reserves its longest length up front (vLLM's PagedAttention).
// Why: steps b to d read a cache [B, capacity, Hkv, d], each sequence's capacity reserved whether used or not.
// Cost: a table read and a division per key and group (the table stays in L1); a page shorter than
// a group's 4 keys breaks a lane's 4 loads over several pages, which costs nothing in sectors: a key
// row (Hkv x d values) is whole in one page whatever its size.
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

cudaError_t paged(const attn::DecodeParams& p) {
  if (p.block_table == nullptr) return gqa_packed(p);  // an unpaged cache: step d's kernels
  if (p.splits <= 1) return launch_packed<false, true>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_packed<true, true>(p, part.o, part.lse);
}

}  // namespace ch08
