// gqa_packed.cu: step d. The query rows that read one KV head, g x Lq of them (g = Hq / Hkv), are
// one block's (up to 8: more make more blocks): each 16-byte load of K or V serves every one.
// Why: steps b and c read the cache once per query head; now once per KV head, the cache's own
// size (at Hq = 32, Hkv = 8: a quarter of the bytes). FlashAttention packs the same rows into the
// M rows of an mma tile (seqlenq_ngroups_swapped); at g x Lq <= 8 rows, CUDA cores keep up with the
// bytes.
// Cost: the grid shrinks by up to 8: B x Hkv blocks at Lq = 1. Without step c's splits that would
// leave the GPU idle at small B; with them, the heuristic splits further (4 x the splits at g = 4).
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

int rows_per_block(int group, int Lq) {
  const int rows = group * Lq;
  return rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8;
}

cudaError_t gqa_packed(const attn::DecodeParams& p) {
  if (p.splits <= 1) return launch_packed<false, false>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_packed<true, false>(p, part.o, part.lse);
}

}  // namespace ch08
