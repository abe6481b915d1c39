// occupancy.cu: step h. Step g's kernel held to the registers with which an SM holds three of its
// blocks (at R = 4 rows a block: 168 a thread, where step g takes 213 and an SM holds two;
// decoding.h's occupancy_blocks for every R), and the keys split to give every SM that many.
// Why: step g took the cache's wait off its chain, which is now one wait on the block table and a
// step of arithmetic (shuffles, exponentials, FMAs), about 2600 cycles a warp, with two warps a
// scheduler to take turns (notes/08). A third block is a third warp on each scheduler, issuing while
// the other two wait.
// ptxas fits step g's loop in 168 registers without a spill; the split heuristic (harness/decode)
// fills the blocks an SM holds, three, where it filled two.
// Cost: ptxas schedules in fewer registers; more splits, each of fewer keys, and so more partial
// results for the combine to read (49 splits where step g has 33 at B = 1, 32k keys).
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

cudaError_t occupancy(const attn::DecodeParams& p) {
  if (p.block_table == nullptr) return gqa_packed(p);  // an unpaged cache: step d's kernels, as steps e to g
  if (p.splits <= 1) return launch_packed<false, true, true, true, true>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_packed<true, true, true, true, true>(p, part.o, part.lse);
}

}  // namespace ch08
