// rows_ahead.cu: step g. Step f's kernel with each step's K and V rows asked for one step ahead:
// the next step's loads go out before this step's arithmetic (the first step's before the loop).
// Why: step f's step waits for its rows, then computes with no load of its own in flight, and two
// warps per scheduler (notes/08) cannot fill that wait. Now the cache's wait overlaps a step of
// arithmetic. The next step's table entries are read in this step, before its rows can be asked
// for: that wait stays on the step's chain (reading the table a step further ahead would take it
// off: notes/08, exercise 11).
// Cost: a second step's 2U rows in registers, 8 x 16 bytes a lane; the last step asks for a step
// past the range (the range's last row again, unused).
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

cudaError_t rows_ahead(const attn::DecodeParams& p) {
  if (p.block_table == nullptr) return gqa_packed(p);  // an unpaged cache: step d's kernels, as steps e and f
  if (p.splits <= 1) return launch_packed<false, true, true, true>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_packed<true, true, true, true>(p, part.o, part.lse);
}

}  // namespace ch08
