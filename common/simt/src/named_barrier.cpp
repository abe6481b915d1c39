// named_barrier.cpp: bar.sync and bar.arrive with a barrier id and a thread count
// (simt/named_barrier.cuh), which let some warps of a block wait for others while the rest run
// on: FlashAttention-3's two consumer warpgroups take turns this way. The hardware counts warps,
// not threads: a warp arrives when all its lanes did (those that have returned apart), adding 32.
#include "block_runner.h"
#include "simt/cpu/counters_hooks.h"

namespace simt::detail {

void BlockRunner::named_barrier(unsigned id, unsigned threads, bool wait_here, const char* file, int line) {
  const char* what = wait_here ? "named_barrier_sync" : "named_barrier_arrive";
  if (id < 1 || id > 15)
    fail("%s (%s:%d): barrier id %u is not in 1..15 (id 0 is __syncthreads')", what, file, line, id);
  const unsigned block_threads = static_cast<unsigned>(warps_.size()) * 32;
  if (threads == 0 || threads % 32 != 0 || threads > block_threads)
    fail("%s (%s:%d): %u threads: the count must be a positive multiple of 32, at most the block's %u", what, file,
         line, threads, block_threads);
  NamedBarrier& b = named_[id];
  bool in_use = b.warps != 0;
  for (unsigned l : b.lanes) in_use |= l != 0;
  if (!in_use) {
    b.count = threads;
    b.file = file;
    b.line = line;
  } else if (b.count != threads) {
    fail("%s (%s:%d): barrier %u for %u threads, while its use begun at %s:%d is for %u", what, file, line, id, threads,
         b.file, b.line, b.count);
  }
  Fiber& f = *current_;
  const unsigned w = f.t.warp;
  if ((b.lanes[w] >> f.t.lane & 1u) || (b.warps >> w & 1u))
    fail("%s (%s:%d): lane %u of warp %u arrives twice at barrier %u before it completes", what, file, line, f.t.lane,
         w, id);
  // bar.sync and bar.arrive are .aligned: the lanes of a warp must all execute the same one (PTX
  // ISA, barrier: behaviour undefined otherwise). Lanes that reach it by different paths, say some
  // waiting and some only arriving, or waiting at two different lines, are a divergent barrier.
  if (b.lanes[w] == 0) {
    b.lane_file[w] = file, b.lane_line[w] = line, b.lane_sync[w] = wait_here;
  } else if (b.lane_sync[w] != wait_here || !same_site(b.lane_file[w], b.lane_line[w], file, line)) {
    fail("divergent named barrier in warp %u: lane %u is at %s (%s:%d) while lanes 0x%08x of its warp arrived at "
         "barrier %u by %s (%s:%d); bar.sync and bar.arrive are .aligned: every lane of a warp executes the same one",
         w, f.t.lane, what, file, line, b.lanes[w], id, b.lane_sync[w] ? "named_barrier_sync" : "named_barrier_arrive",
         b.lane_file[w], b.lane_line[w]);
  }
  counters::barrier_arrive(f.t.linear);
  const unsigned long long use = b.uses;
  b.lanes[w] |= 1u << f.t.lane;
  named_warp_check(id, w);
  if (!wait_here || b.uses != use) return;  // bar.arrive runs on; so does the arrival that completed it
  f.t.named = id;
  f.t.file = file;
  f.t.line = line;
  block(f, State::at_named_barrier);  // until the release wakes it
}

void BlockRunner::named_warp_check(unsigned id, unsigned w) {
  NamedBarrier& b = named_[id];
  // Every lane that has not returned has arrived (those that returned after arriving count too).
  if (!b.lanes[w] || (warps_[w].present & ~warps_[w].exited & ~b.lanes[w]) != 0) return;
  b.lanes[w] = 0;
  b.warps |= 1u << w;
  if (32u * static_cast<unsigned>(__builtin_popcount(b.warps)) < b.count) return;
  counters::named_barrier_release(static_cast<int>(b.count / 32));
  const unsigned released = b.warps;  // lanes of a warp still arriving wait for the next use
  b.warps = 0;
  ++b.uses;
  for (int i = 0; i < n_; ++i) {
    const Thread& t = fibers_[static_cast<size_t>(i)]->t;
    if (state_[static_cast<size_t>(i)] == State::at_named_barrier && t.named == id && (released >> t.warp & 1u))
      state_[static_cast<size_t>(i)] = State::ready;
  }
}

std::string BlockRunner::named_report() const {
  std::string s;
  for (unsigned id = 1; id < 16; ++id) {
    const NamedBarrier& b = named_[id];
    int waiting = 0;
    for (int i = 0; i < n_; ++i)
      waiting += state_[static_cast<size_t>(i)] == State::at_named_barrier && fibers_[static_cast<size_t>(i)]->t.named == id;
    if (waiting)
      s += format("\n  %d thread(s) wait at named barrier %u (use begun at %s:%d) for %u threads: %u arrived in whole "
                  "warps",
                  waiting, id, b.file, b.line, b.count, 32u * static_cast<unsigned>(__builtin_popcount(b.warps)));
  }
  return s;
}

}  // namespace simt::detail
