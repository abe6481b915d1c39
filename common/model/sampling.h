// sampling.h: a problem too large to emulate whole, modelled from a part of it.
//
// Heads. Every attention kernel of the book treats the (batch, head) pairs alike and apart: the
// same grid of blocks per head (full Q tiles, the last partial one, causal tiles skipped, on the
// diagonal and below), the same accesses at the same offsets within the head's tensors. So the
// emulator runs every block of a few heads, a problem with B = 1 and H = the heads emulated, and
// their counts times (heads of the problem / heads emulated) are the counts of the whole problem.
// The exception is memory that every head shares: an attn_mask broadcast over (batch, head)
// crosses from DRAM once whatever the number of heads, so its sectors are not multiplied, and each
// of them is read by the blocks of every head, not by the sample's readers times the heads (scaled).
//
// Rows. Within a head, the query rows come in groups of kRowGroup (a multiple of a kernel's rows
// per block) and a last partial group of Lq mod kRowGroup rows. A problem with m groups
// (Lq = m * kRowGroup + the same remainder, the same keys) counts c(m), and c is a polynomial in
// m: a line when every group costs the same (K/V read once per block or per head is the constant
// term, so chapter 04's block per head fits too), a quadratic under top-left is_causal when the
// kernel skips the tiles past the diagonal (a group's cost grows linearly with its position). The
// emulator runs m = 1, 2 (, 3) and the counts at the problem's own m come from the polynomial
// through them, exactly when the counts are that polynomial. Blocks are not extrapolated: a dry
// run of the whole problem (simt::counters::Options::dry_run) gives every launch's grid.
//
// What sampling leaves out: the heads and rows not emulated are not checked against the reference.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "simt/counters.h"

namespace attn {

// Rows per group: 256 is a multiple of every kernel's rows per block (chapter 05's largest tile
// has Br = 256) but chapter 09's step h at d = 64 (192), which names a group of its own
// (Variant::row_group: 768), so that a group is whole blocks in every chapter.
inline constexpr int kRowGroup = 256;

struct HeadSample {
  long long emulated = 1, total = 1;  // heads (B * H) run by the emulator, and of the problem
  bool sampled() const { return emulated < total; }
  double factor() const { return static_cast<double>(total) / static_cast<double>(emulated); }
};

// One launch over the emulated heads, as the launch over every head would count; whole: that
// launch's shape (a dry run of every head at the emulated rows), for its grid. shared: the
// allocations every head reads alike. Their DRAM sectors count once, and their sharing is the whole
// launch's, not the sample's times the heads: every sector of one is read by the blocks of every
// head, its lowest reader in the first head and its highest in the last, so it is shared along the
// highest grid dimension h the heads occupy (the highest along which the whole grid exceeds the
// sample's), and its readers counted as counters.cpp counts them, from the lowest to the highest
// along h, are the sample's (1 for a sector it did not share along h) and the whole grid's blocks
// along h that the sample lacks. A sector the sample shares along a dimension above h shares as the
// sample does, and so do all of them where the grid does not grow with the heads.
// span: how many of the sample's copies read one copy of `shared` (0: all of them, as an attn_mask
// broadcast over (batch, head)). Decoding's block table and lengths are a sequence's, read by its
// KV heads alone (span = Hkv, decode.cpp): the launch then holds factor / span groups, each its run
// of the blocks along h (the sequences are h's slowest part), each group sharing as above, and
// counted once per group. A group no longer along h than the sample shares as the sample does.
inline simt::Counters scaled(const simt::LaunchCounters& l, const HeadSample& s, const std::vector<const void*>& shared,
                             const simt::Counters& whole, double span = 0) {
  simt::Counters c = l.counters;
  if (!s.sampled()) return c;
  const double factor = s.factor(), groups = span > 0 ? factor / span : 1;
  c *= factor;
  const double sample_grid[3] = {l.counters.grid_x, l.counters.grid_y, l.counters.grid_z};
  const double whole_grid[3] = {whole.grid_x, whole.grid_y, whole.grid_z};
  int h = -1;
  for (int d = 0; d < 3; ++d)
    if (whole_grid[d] > sample_grid[d]) h = d;
  const double extent = h < 0 ? 0 : whole_grid[h] / groups;  // a group's blocks along h
  if (h >= 0 && extent <= sample_grid[h]) h = -1;
  for (const simt::AllocationSectors& a : l.allocations) {
    if (std::find(shared.begin(), shared.end(), a.base) == shared.end()) continue;
    c.dram_read_sectors -= (factor - groups) * a.read_sectors;
    c.dram_write_sectors -= (factor - groups) * a.written_sectors;
    double moved = a.read_sectors;  // the sectors shared along h in a group
    for (int d = 0; d < 3; ++d) {
      const double counted = d > h ? factor - groups : factor;  // of the sample's sharing, multiplied above
      c.shared_sectors[d] -= counted * a.shared_sectors[d], c.shared_reads[d] -= counted * a.shared_reads[d];
      if (d > h) moved -= a.shared_sectors[d];
    }
    if (h < 0) continue;
    c.shared_sectors[h] += groups * moved;
    c.shared_reads[h] += groups * (a.shared_reads[h] + (moved - a.shared_sectors[h]) + moved * (extent - sample_grid[h]));
  }
  return c;
}

// One launch of a sampled run (the first few heads of a problem, run alone), as `whole`, the same
// launch of the whole problem (a dry run's), counts: its work times s.factor() (the copies of
// the sample the whole launch holds), `shared` and `span` as scaled() takes them. The grid and the
// blocks are the whole launch's, and so is each block's work: the sample's block at the same place
// in each dimension (the heads are each dimension's slowest part in every kernel sampled so:
// chapter 07's grids of (tiles, B * H), of a warp per row over B * H * Lq and of cells over
// (columns, rows, B * H); chapter 08's x = (b, hk, chunk)), times the factor over the blocks the
// launch gained (chapter 08's append: one block per token, copying every head). Chapter 08's
// decode.cpp and chapter 07's backward/profile.cpp sample so.
inline simt::LaunchCounters as_whole(const simt::LaunchCounters& l, const simt::Counters& whole, const HeadSample& s,
                                     const std::vector<const void*>& shared, double span = 0) {
  simt::LaunchCounters w = l;
  w.counters = scaled(l, s, shared, whole, span);
  const double factor = s.factor();
  const simt::Counters& c = l.counters;
  w.counters.blocks = whole.blocks;
  w.counters.grid_x = whole.grid_x, w.counters.grid_y = whole.grid_y, w.counters.grid_z = whole.grid_z;
  const auto n = [](double g) { return static_cast<size_t>(std::max(1.0, g)); };
  const size_t sx = n(c.grid_x), sy = n(c.grid_y), sz = n(c.grid_z);
  if (l.block_work.size() != sx * sy * sz) return w;  // no blocks' work to place (none ran)
  const float per_block = static_cast<float>(factor * std::max(1.0, c.blocks) / std::max(1.0, whole.blocks));
  w.block_work.clear();
  for (size_t z = 0; z < n(whole.grid_z); ++z)
    for (size_t y = 0; y < n(whole.grid_y); ++y)
      for (size_t x = 0; x < n(whole.grid_x); ++x)
        w.block_work.push_back(per_block * l.block_work[(z % sz * sy + y % sy) * sx + x % sx]);
  return w;
}

// The counts at x of the polynomial through (xs[i], at[i]) (Lagrange's form): every count of work
// alike; the launch's shape (launches, threads, shared memory, blocks counted) from the first.
// The grid's dimensions too, each a polynomial in x where the counts are (a lab's grid grows with
// its problem; profile.cpp takes a sampled problem's from a dry run instead).
inline simt::Counters extrapolate(const std::vector<simt::Counters>& at, const std::vector<double>& xs, double x) {
  simt::Counters sum;
  double grid[3] = {};
  for (size_t i = 0; i < at.size(); ++i) {
    double w = 1;
    for (size_t j = 0; j < at.size(); ++j)
      if (j != i) w *= (x - xs[j]) / (xs[i] - xs[j]);
    simt::Counters term = at[i];
    term *= w;
    sum += term;
    grid[0] += w * at[i].grid_x, grid[1] += w * at[i].grid_y, grid[2] += w * at[i].grid_z;
  }
  sum.grid_x = std::round(grid[0]), sum.grid_y = std::round(grid[1]), sum.grid_z = std::round(grid[2]);
  sum.launches = at.front().launches, sum.blocks_counted = at.front().blocks_counted;
  sum.threads_per_block = at.front().threads_per_block, sum.smem_bytes = at.front().smem_bytes;
  sum.smem_static_bytes = at.front().smem_static_bytes;
  return sum;
}

}  // namespace attn
