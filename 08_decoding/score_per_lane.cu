// score_per_lane.cu: step i. Step h's kernel with each score of a step summed once, by one lane:
// a group's lanes reduce-scatter their R x U partial dot products (reduce.cuh's group_sum_scatter),
// so that at R = 4 (16 scores over 16 lanes at d = 128) each lane holds one score, masks it, finds
// its row's maximum with two shuffles and takes its exponential; then every lane fetches the R x U
// probabilities it needs for P V.
// Why: step h's group_sum gave every lane of a group every score, and every lane masked them and
// took their maxima and exponentials: the group's softmax 16 times over, on the chain of
// instructions that now bounds the step (notes/08).
// Cost: the scatter's selects (two a value sent), a shuffle per probability fetched and per row's
// maximum, and a copy of m per row a lane holds scores of. At 8 rows, where step h takes all 255
// registers, step i is step h (decode.cuh's launch_packed).
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

cudaError_t score_per_lane(const attn::DecodeParams& p) {
  if (p.block_table == nullptr) return gqa_packed(p);  // an unpaged cache: step d's kernels, as steps e to h
  if (p.splits <= 1) return launch_packed<false, true, true, true, true, true>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_packed<true, true, true, true, true, true>(p, part.o, part.lse);
}

}  // namespace ch08
