// mbarrier.cpp: the mbarrier objects of simt/mbarrier.cuh, kept by the block's runner by address.
// A thread that waits for a phase blocks like one at __syncthreads (a spinning fiber would never
// let the arrivals it waits for run); the phase's completion wakes it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "block_runner.h"
#include "simt/cpu/counters_hooks.h"

namespace simt::detail {

namespace {
// What an initialised barrier's 8 bytes hold on the CPU: a store over them shows at the next use.
constexpr uint64_t kTag = 0x5349'4d54'4d42'4152ull;
constexpr long long kLimit = (1ll << 20) - 1;  // PTX: counts within 1..2^20-1, transactions within +-(2^20-1)
}  // namespace

// On the stack, not the heap: fail() never returns to free a std::string of its caller's frame.
BlockRunner::Name BlockRunner::mbarrier_name(const void* bar) const {
  Name n;
  const auto* p = static_cast<const unsigned char*>(bar);
  if (p >= smem_ && p < smem_ + smem_bytes_)
    std::snprintf(n.s, sizeof n.s, "dynamic shared memory + %zu", static_cast<size_t>(p - smem_));
  else
    std::snprintf(n.s, sizeof n.s, "%p (static __shared__)", bar);
  return n;
}

void BlockRunner::mbarrier_init(void* bar, unsigned count, const char* file, int line) {
  require_arch(80, "mbarrier.init", file, line);
  if (reinterpret_cast<uintptr_t>(bar) % 8 != 0)
    fail("mbarrier_init (%s:%d): %p is not 8-byte aligned", file, line, bar);
  if (count < 1 || count > kLimit) fail("mbarrier_init (%s:%d): count %u is not in 1..%lld", file, line, count, kLimit);
  for (int i = 0; i < n_; ++i)
    if (state_[static_cast<size_t>(i)] == State::at_mbarrier && fibers_[static_cast<size_t>(i)]->t.mbarrier == bar)
      fail("mbarrier_init (%s:%d): thread %d waits on the mbarrier at %s", file, line, i, mbarrier_name(bar).s);
  Mbarrier& m = mbarriers_[bar];
  m.phase = ~0u;  // a new barrier: what the old one staged lands now
  land_staged(m);
  m = Mbarrier{};
  m.count = m.pending = count;
  m.file = file;
  m.line = line;
  m.initialiser = current_->t.linear;
  m.since = barriers_released_;
  std::memcpy(bar, &kTag, sizeof kTag);
}

Mbarrier& BlockRunner::mbarrier_at(void* bar, const char* what, const char* file, int line) {
  const auto it = mbarriers_.find(bar);
  if (it == mbarriers_.end())
    fail("%s (%s:%d): no mbarrier at %s: mbarrier_init has not made one there in this block (or not yet: a "
         "__syncthreads after the init orders it before every use)",
         what, file, line, mbarrier_name(bar).s);
  Mbarrier& m = it->second;
  uint64_t bytes;
  std::memcpy(&bytes, bar, sizeof bytes);
  if (bytes != kTag)
    fail("%s (%s:%d): the mbarrier at %s (initialised at %s:%d) was overwritten since: a store to its 8 bytes", what,
         file, line, mbarrier_name(bar).s, m.file, m.line);
  if (current_->t.linear != m.initialiser && barriers_released_ == m.since)
    fail("%s (%s:%d): thread %u initialised the mbarrier at %s (%s:%d) and no __syncthreads has followed: the "
         "initialisation is not visible to this thread yet (fence_mbarrier_init, then __syncthreads)",
         what, file, line, m.initialiser, mbarrier_name(bar).s, m.file, m.line);
  return m;
}

// The phase completes once its arrivals are all in and its transaction count is 0: the next begins,
// and the threads waiting for the completed one's parity run again.
void BlockRunner::mbarrier_advance(const void* bar, Mbarrier& m) {
  if (m.pending != 0 || m.tx != 0) return;
  ++m.phase;
  counters::mbarrier_completed(bar, m.expected);
  m.pending = m.count;
  m.expected = m.completed = 0;
  for (int i = 0; i < n_; ++i) {
    const Thread& t = fibers_[static_cast<size_t>(i)]->t;
    if (state_[static_cast<size_t>(i)] == State::at_mbarrier && t.mbarrier == bar && (m.phase & 1u) != t.parity)
      state_[static_cast<size_t>(i)] = State::ready;
  }
}

uint64_t BlockRunner::mbarrier_arrive(void* bar, unsigned tx_bytes, const char* what, const char* file, int line) {
  if (tx_bytes) require_arch(90, what, file, line);
  Mbarrier& m = mbarrier_at(bar, what, file, line);
  if (m.pending == 0)  // only while the phase waits for its bytes: with them, it would have completed
    fail("%s (%s:%d): one arrival more than the count %u of the mbarrier at %s (initialised at %s:%d): phase %u has "
         "all its arrivals and waits for %lld transaction bytes",
         what, file, line, m.count, mbarrier_name(bar).s, m.file, m.line, m.phase, m.tx);
  if (tx_bytes) mbarrier_tx(bar, tx_bytes, what, file, line);  // after the check: it may complete the phase
  else counters::mbarrier_arrived(bar, current_->t.linear);
  --m.pending;
  const uint64_t phase = m.phase;
  mbarrier_advance(bar, m);
  return phase;
}

void BlockRunner::mbarrier_tx(void* bar, long long delta, const char* what, const char* file, int line) {
  require_arch(90, what, file, line);
  Mbarrier& m = mbarrier_at(bar, what, file, line);
  if (m.tx + delta > kLimit || m.tx + delta < -kLimit)
    fail("%s (%s:%d): the transaction count of the mbarrier at %s would be %lld bytes, outside +-%lld", what, file, line,
         mbarrier_name(bar).s, m.tx + delta, kLimit);
  m.tx += delta;
  (delta > 0 ? m.expected : m.completed) += std::abs(delta);
  mbarrier_advance(bar, m);
}

void BlockRunner::mbarrier_wait_parity(void* bar, unsigned parity, const char* file, int line) {
  if (parity > 1) fail("mbarrier_wait_parity (%s:%d): parity %u is not 0 or 1", file, line, parity);
  Fiber& f = *current_;
  while ((mbarrier_at(bar, "mbarrier_wait_parity", file, line).phase & 1u) == parity) {
    f.t.mbarrier = bar;
    f.t.parity = parity;
    f.t.file = file;
    f.t.line = line;
    block(f, State::at_mbarrier);
    f.t.mbarrier = nullptr;
  }
  counters::mbarrier_waited(bar, f.t.linear);
  land_staged(mbarrier_at(bar, "mbarrier_wait_parity", file, line));
}

void BlockRunner::land_staged(Mbarrier& m) {
  size_t keep = 0;
  for (StagedCopy& c : m.staged) {
    if (c.phase < m.phase)
      std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
    else
      m.staged[keep++] = std::move(c);
  }
  m.staged.resize(keep);
}

std::string BlockRunner::mbarrier_report() const {
  std::map<std::tuple<const void*, unsigned, std::string, int>, int> waits;  // in address order: reproducible
  for (int i = 0; i < n_; ++i) {
    const Thread& t = fibers_[static_cast<size_t>(i)]->t;
    if (state_[static_cast<size_t>(i)] == State::at_mbarrier) ++waits[{t.mbarrier, t.parity, t.file, t.line}];
  }
  std::string s;
  for (const auto& [key, threads] : waits) {
    const auto& [bar, parity, file, line] = key;
    const Mbarrier& m = mbarriers_.at(bar);
    s += format("\n  %d thread(s) wait at mbarrier_wait_parity (%s:%d) for the phase of parity %u of the mbarrier at "
                "%s (initialised at %s:%d, count %u): its phase %u has %u of %u arrivals to come and %lld "
                "transaction bytes (%lld expected, %lld completed)",
                threads, file.c_str(), line, parity, mbarrier_name(bar).s, m.file, m.line, m.count, m.phase,
                m.pending, m.count, m.tx, m.expected, m.completed);
  }
  return s;
}

std::string BlockRunner::mbarrier_unfinished() const {
  std::map<const void*, const Mbarrier*> sorted;  // in address order: reproducible
  for (const auto& [bar, m] : mbarriers_) sorted[bar] = &m;
  for (const auto& [bar, m] : sorted)
    if (m->tx != 0)
      return format("block (%u,%u,%u): the mbarrier at %s (initialised at %s:%d) ends the block in its phase %u with "
                    "%lld transaction bytes %s (this phase: expect_tx announced %lld, complete_tx gave %lld; %u of "
                    "%u arrivals to come)",
                    t_block_idx.x, t_block_idx.y, t_block_idx.z, mbarrier_name(bar).s, m->file, m->line,
                    m->phase, std::abs(m->tx), m->tx > 0 ? "announced and never completed" : "completed beyond those announced",
                    m->expected, m->completed, m->pending, m->count);
  return {};
}

}  // namespace simt::detail
