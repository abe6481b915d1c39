// kv_together.cu: step f. Step e's kernel with each step's V rows loaded beside its K rows: a lane
// asks for the U keys' K and V rows, 2 U loads of 16 bytes, before it uses the first.
// Why: steps b to e load V only after the softmax, so each step of the key loop waits on memory
// twice, once for K and once for V, and a decoding kernel's time is that chain of waits (its few
// warps cannot hide them: notes/08). Now one wait covers both.
// Cost: U x E more registers per thread to hold V until the softmax has its weights (fewer blocks
// per SM); the bytes and the loads are step e's.
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

cudaError_t kv_together(const attn::DecodeParams& p) {
  if (p.block_table == nullptr) return gqa_packed(p);  // an unpaged cache: step d's kernels, as step e
  if (p.splits <= 1) return launch_packed<false, true, true>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_packed<true, true, true>(p, part.o, part.lse);
}

}  // namespace ch08
