// setmaxnreg.cpp: the checks of simt/setmaxnreg.cuh. Registers are not emulated; what a GPU
// requires of the calls is: whole warpgroups, the same calls in the same order in each of their
// 4 warps, and each call moving the count the way its name says.
#include "block_runner.h"
#include "simt/cpu/counters_hooks.h"

namespace simt::detail {

void BlockRunner::register_change(unsigned warp, bool inc, unsigned regs, const char* file, int line) {
  require_arch(90, "setmaxnreg", file, line, true);
  const char* what = inc ? "inc" : "dec";
  if (n_ % 128 != 0)
    fail("setmaxnreg.%s %u (%s:%d): the block's %d threads are not whole warpgroups (4 warps of 32)", what, regs, file,
         line, n_);
  Warp& w = warps_[warp];
  if (w.regs != 0 && (inc ? regs < w.regs : regs > w.regs))
    fail("setmaxnreg.%s %u (%s:%d): warp %u has %u registers per thread; .inc may not lower that, nor .dec raise it", what,
         regs, file, line, warp, w.regs);
  std::vector<RegisterRecord>& made = register_records_[warp / 4];
  const unsigned k = w.reg_changes++;
  if (k == made.size()) {
    made.push_back({inc, regs, warp, file, line});
  } else if (made[k].inc != inc || made[k].regs != regs) {
    fail("setmaxnreg.%s %u (%s:%d) in warp %u, where warp %u of the same warpgroup made setmaxnreg.%s %u (%s:%d) as its "
         "call %u: the 4 warps of a warpgroup must make the same calls",
         what, regs, file, line, warp, made[k].warp, made[k].inc ? "inc" : "dec", made[k].regs, made[k].file,
         made[k].line, k + 1);
  }
  w.regs = regs;
  if (!inc) counters::registers_released();
  // The SM's 64K registers: an .inc beyond them waits forever on a GPU (only checked once every
  // warpgroup has set its count: the compiler's is unknown here).
  unsigned long long held = 0;
  for (size_t g = 0; g * 4 < warps_.size(); ++g) {
    const unsigned r = warps_[4 * g].regs;
    if (r == 0) return;
    held += 128ull * r;
  }
  if (held > 65536)
    fail("setmaxnreg.%s %u (%s:%d): the block's warpgroups would hold %llu registers, more than an SM's 65536: on a "
         "GPU the .inc waits for them forever",
         what, regs, file, line, held);
}

std::string BlockRunner::registers_unfinished() const {
  for (size_t g = 0; g < register_records_.size(); ++g) {
    const std::vector<RegisterRecord>& made = register_records_[g];
    for (size_t w = 4 * g; w < std::min(4 * g + 4, warps_.size()); ++w)
      if (warps_[w].reg_changes < made.size())
        return format("block (%u,%u,%u): warp %zu made %u setmaxnreg where warp %u of its warpgroup made %zu (the "
                      "next: setmaxnreg.%s %u at %s:%d); the 4 warps of a warpgroup must make the same calls",
                      t_block_idx.x, t_block_idx.y, t_block_idx.z, w, warps_[w].reg_changes,
                      made[warps_[w].reg_changes].warp, made.size(), made[warps_[w].reg_changes].inc ? "inc" : "dec",
                      made[warps_[w].reg_changes].regs, made[warps_[w].reg_changes].file,
                      made[warps_[w].reg_changes].line);
  }
  return {};
}

}  // namespace simt::detail
