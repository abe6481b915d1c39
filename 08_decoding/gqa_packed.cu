// gqa_packed.cu: step c. The query rows that read one KV head, g x Lq of them (g = Hq / Hkv), are
// one block's (up to 8: more make more blocks): each 16-byte load of K or V serves every one.
// Why: step b read the cache once per query head; now once per KV head, the cache's own size (at
// Hq = 32, Hkv = 8: a quarter of the bytes). FlashAttention packs the same rows into the M rows of
// an mma tile (seqlenq_ngroups_swapped); at g x Lq <= 8 rows, CUDA cores keep up with the bytes.
// Cost: the grid shrinks by g: B x Hkv blocks, 8 at B = 1 on 132 SMs. Step d fills them again.
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

int rows_per_block(int group, int Lq) {
  const int rows = group * Lq;
  return rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8;
}

cudaError_t gqa_packed(const attn::DecodeParams& p) { return launch_packed<false, false>(p, nullptr, nullptr); }

}  // namespace ch08
