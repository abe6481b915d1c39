// sampling.h: a problem too large to emulate whole, modelled from a few of its heads.
//
// Every attention kernel of the book treats the (batch, head) pairs alike and apart: the same
// grid of blocks per head (full Q tiles, the last partial one, causal tiles skipped, on the
// diagonal and below), the same accesses at the same offsets within the head's tensors. So the
// emulator runs every block of a few heads, a problem with B = 1 and H = the heads emulated, and
// their counts times (heads of the problem / heads emulated) are the counts of the whole problem.
// The exception is memory that every head shares: an attn_mask broadcast over (batch, head)
// crosses from DRAM once whatever the number of heads, so its sectors are not multiplied.
// What sampling leaves out: the heads not emulated are not checked against the reference.
#pragma once
#include <algorithm>
#include <vector>

#include "simt/counters.h"

namespace attn {

struct HeadSample {
  long long emulated = 1, total = 1;  // heads (B * H) run by the emulator, and of the problem
  bool sampled() const { return emulated < total; }
  double factor() const { return static_cast<double>(total) / static_cast<double>(emulated); }
};

// One launch over the emulated heads, as the launch over every head would count. shared: the
// allocations every head reads alike (their DRAM sectors are counted once).
inline simt::Counters scaled(const simt::LaunchCounters& l, const HeadSample& s, const std::vector<const void*>& shared) {
  simt::Counters c = l.counters;
  if (!s.sampled()) return c;
  c *= s.factor();
  for (const simt::AllocationSectors& a : l.allocations)
    if (std::find(shared.begin(), shared.end(), a.base) != shared.end()) {
      c.dram_read_sectors -= (s.factor() - 1) * a.read_sectors;
      c.dram_write_sectors -= (s.factor() - 1) * a.written_sectors;
    }
  return c;
}

}  // namespace attn
