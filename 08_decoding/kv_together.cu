// kv_together.cu: step f. Step e's kernel with each step's loads asked for before any is used:
// first every key's row (on a paged cache its U table entries, read together), then the U keys' K
// and V rows, 2 U loads of 16 bytes, then the products.
// Why: a decoding kernel's time is its chain of waits on memory (its few warps cannot hide them:
// notes/08). In step e each key's cache row waited for its table entry, and V's rows came after
// the softmax: the compiled loop waits 12 times per step at R = 4 (sass_sm90.inc). With no branch
// among them the compiler issues the table reads together, then K's rows (V's it moves below the
// softmax's start), and the step waits twice: for the table, and for the cache.
// Cost: V's rows held through the softmax (ptxas: 168 registers at R = 4, d = 128, against step
// e's 153: still 3 blocks per SM); a key past the range reads the range's last row again, unused,
// where step e branched around it.
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
