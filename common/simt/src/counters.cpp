// counters.cpp: from every lane's accesses to the requests of a warp, and their cost.
//
// Each lane appends its global and shared accesses to its own stream, in program order, with a
// marker at each barrier and warp collective it enters. A marker carries the lane's epoch:
// (barriers passed) << 16 | (collectives since the last barrier). It depends on the lane's own
// path only, never on the order in which the emulator ran the lanes, so grouping by it is
// deterministic: the requests of a warp in one epoch are the lanes' executions of one instruction,
// matched by position when every lane ran the same instructions, else the k-th execution of each
// instruction with the k-th of the others (the way a GPU runs the branches of a divergent warp one
// after the other, and loop iterations that only some lanes make). A warp's streams are grouped
// whenever all its lanes meet at a collective, a block's at each barrier and at its end.
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "counters_state.h"
#include "symbols.h"
#include "simt/cpu/counters_hooks.h"

namespace simt {
namespace detail::counters {

thread_local constinit Hot t_hot = {};

namespace {

// Integer counts of one worker (OS thread) for the launch in progress. g and s are grouped
// requests, of the sampled blocks only; the rest covers every block.
struct Raw {
  uint64_t g[kGlobalKinds][5];  // requests, lanes, bytes, sectors, lines
  uint64_t s[kSharedKinds][3];  // requests, wavefronts, ideal
  uint64_t block_load_sectors, blocks_counted;
  uint64_t fill_sectors, drain_sectors;
  uint64_t mma, mma_flop, mufu, barriers, shuffles, votes, syncwarps;
  uint64_t wgmma, wgmma_flop;
  uint64_t producer_warps;
  uint64_t ring_stages, ring_lag, ring_stage_bytes, ring_tiles, ring_refills;  // the first three: the most of any block
  uint64_t reread_l1[kReuseBuckets], reread_l2[kReuseBuckets];
};

// The block's global sectors (Counters::block_load_sectors) and reuse distances (reread_l1,
// reread_l2): for each sector it touched, when it last did (its accesses so far count the time)
// and whether it loaded it, by ld or at all; and a Fenwick tree over the times that marks each
// sector's latest, so that the distinct sectors touched since a time are a difference of two
// prefix sums.
class ReuseStack {
 public:
  static constexpr uint64_t kLoaded = 1, kByLd = 2;  // the flags, below the time in when_
  static constexpr int kFlags = 2;
  // Touches s (a load when load, by ld when by_ld): the distinct other sectors touched since s
  // last was, or -1 when this is not a load of a sector loaded before.
  long long touch(uint64_t s, bool load, bool by_ld) {
    if (now_ + 1 >= tree_.size()) grow();
    const uint64_t key = s + 1;  // 0 marks an empty slot
    if (2 * (slots_.size() + 1) > keys_.size()) rehash(std::max<size_t>(1024, 2 * keys_.size()));
    size_t i = slot(key);
    long long distance = -1;
    uint64_t flags = (load ? kLoaded : 0) | (by_ld ? kByLd : 0);
    if (keys_[i] == key) {
      const uint64_t then = when_[i] >> kFlags;
      if (load && (when_[i] & kLoaded)) distance = static_cast<long long>(prefix(now_) - prefix(then));
      add(then, -1);
      flags |= when_[i] & ((1 << kFlags) - 1);
    } else {
      keys_[i] = key, slots_.push_back(i);
    }
    when_[i] = (++now_) << kFlags | flags;
    add(now_, 1);
    return distance;
  }
  // The distinct sectors the block loaded by ld: what its SM's L1 asks L2 for.
  uint64_t loaded_by_ld() const {
    uint64_t n = 0;
    for (size_t i : slots_) n += (when_[i] & kByLd) != 0;
    return n;
  }
  void clear() {  // the slots and marks used, not the whole tables: most blocks touch few sectors
    for (size_t i : slots_) add(when_[i] >> kFlags, -1), keys_[i] = 0;
    slots_.clear();
    now_ = 0;
  }

 private:
  size_t slot(uint64_t key) const {
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & (keys_.size() - 1);
    while (keys_[i] != 0 && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    return i;
  }
  void rehash(size_t n) {
    std::vector<uint64_t> keys(n, 0), when(n, 0);
    keys.swap(keys_), when.swap(when_);
    std::vector<size_t> used;
    used.swap(slots_);
    for (size_t j : used) {
      const size_t i = slot(keys[j]);
      keys_[i] = keys[j], when_[i] = when[j], slots_.push_back(i);
    }
  }
  void add(uint64_t t, int v) {
    for (; t < tree_.size(); t += t & (~t + 1)) tree_[t] += static_cast<uint32_t>(v);
  }
  uint64_t prefix(uint64_t t) const {
    uint64_t n = 0;
    for (; t > 0; t &= t - 1) n += tree_[t];
    return n;
  }
  // Twice the times, the tree built again from each sector's latest.
  void grow() {
    tree_.assign(std::max<size_t>(1 << 16, 2 * tree_.size()), 0);
    for (size_t i : slots_) add(when_[i] >> kFlags, 1);
  }
  std::vector<uint64_t> keys_, when_;  // open addressing: sector + 1, and (time << kFlags | flags)
  std::vector<size_t> slots_;          // the slots in use
  std::vector<uint32_t> tree_;         // 1-based
  uint64_t now_ = 0;
};

// One warp-level request being assembled: the record of each lane taking part.
struct Group {
  uint32_t mask = 0;
  uint64_t word[32];
};

}  // namespace

struct Worker {
  std::vector<std::vector<Rec>> streams;
  std::vector<uint32_t> epoch;  // per thread of the block
  int threads = 0;
  Raw raw{};
  // The block's global sector touches, kept to its end and then put in an order no schedule
  // changes (count_rereads) before they go through `reuse`: a warp's accesses are grouped when it
  // meets the others or exits, in the order the emulator ran them.
  struct Touch {
    uint64_t epoch;
    uint32_t warp, seq;  // the sequence (a warp, or its TMA rows: next_seq) and the position in it
    uint64_t sector;
    Kind kind;
  };
  std::vector<Touch> touches;
  std::vector<uint32_t> warp_seq;     // per warp: its touches so far in warp_epoch (TMA's: warps + its warp)
  std::vector<uint64_t> warp_epoch;
  uint64_t group_epoch = 0;           // the request being grouped: its epoch and warp
  uint32_t group_warp = 0;
  ReuseStack reuse;
  // The block's fill and drain (Counters::fill_sectors): the barriers passed by the epoch being
  // grouped, the most any grouped access had passed, and the sectors at none and at that most.
  uint64_t barriers_now = 0, barriers_last = 0, fill = 0, drain = 0;
  // A block that loads by TMA fills with what its first wgmma waits for: the TMA sectors it had
  // asked for when the last mbarrier phase its threads waited for before that wgmma completed
  // (the TMA unit serves its boxes in order). tma_sectors: asked for so far; completed_at: at each
  // mbarrier's last phase completion.
  bool computed = false;
  uint64_t tma_fill = 0, tma_sectors = 0;
  std::vector<std::pair<const void*, uint64_t>> completed_at;
  // The block's ring of stages (Counters::ring_stages): each mbarrier's phases that carried TMA bytes,
  // and those bytes; and per warp (its lane 0 stands for it), at each of its first kRingProbes
  // arrivals without bytes (a stage given back), how often it had waited on each mbarrier.
  static constexpr size_t kRingProbes = 8;
  struct RingBar {
    const void* bar;
    uint64_t tx_phases, tx_bytes;
  };
  using Waits = std::vector<std::pair<const void*, uint32_t>>;
  struct RingWarp {
    Waits waits;
    std::vector<Waits> probes;
  };
  std::vector<RingBar> ring_bars;
  std::vector<RingWarp> ring_warps;
  // Each block's work, by its linear index (LaunchCounters::block_work): the running block's index,
  // and its operations so far at its start.
  uint64_t linear = 0, ops_at_begin = 0;
  std::vector<std::pair<uint64_t, float>> block_work;
  // scratch of the grouping
  struct Key {
    uintptr_t pc;
    uint32_t occurrence, lane;
    const Rec* rec;
  };
  std::vector<Key> keys;
};

namespace {

std::mutex g_mu;  // what follows, outside a launch
std::map<uintptr_t, std::unique_ptr<Alloc>> g_allocs;
std::vector<Worker*> g_workers;
std::vector<LaunchCounters> g_done;
bool g_enabled = false;
int g_sample = 1;
bool g_dry = false;

// The launch in progress (written before its blocks run, read by them).
bool g_counting = false;
std::vector<Alloc*> g_launch_allocs;  // sorted by address
std::string g_kernel;
dim3 g_grid, g_block;
size_t g_smem = 0;
long long g_smem_static = 0;

// ---- the cost of one request ------------------------------------------------------------------

// The distinct values among at most 128 (a request's sectors, lines or words): a small open-
// addressing table, emptied by bumping its stamp.
class Distinct {
 public:
  // true when x is new
  bool add(uint64_t x) {
    size_t i = (x * 0x9E3779B97F4A7C15ull) >> 56;  // 256 slots
    for (;; i = (i + 1) & 255) {
      if (stamp_[i] != now_) {
        stamp_[i] = now_, key_[i] = x;
        return true;
      }
      if (key_[i] == x) return false;
    }
  }
  void clear() {
    if (++now_ == 0) {  // after 2^32 clears: forget the old stamps for real
      std::fill(std::begin(stamp_), std::end(stamp_), 0u);
      now_ = 1;
    }
  }

 private:
  uint64_t key_[256] = {};
  uint32_t stamp_[256] = {};
  uint32_t now_ = 1;
};

// The position of a touch among those of sequence q (a warp's, or its TMA rows') in this epoch.
uint32_t next_seq(Worker& w, uint32_t q, uint64_t epoch) {
  if (w.warp_epoch[q] != epoch) w.warp_epoch[q] = epoch, w.warp_seq[q] = 0;
  return w.warp_seq[q]++;
}

void global_cost(Worker& w, const Group& g, Kind k) {
  thread_local Distinct sectors_seen, lines_seen;
  sectors_seen.clear(), lines_seen.clear();
  uint64_t sectors[128];
  int ns = 0, nl = 0;
  uint64_t lanes = 0, bytes = 0, last_sector = ~uint64_t{0}, last_line = ~uint64_t{0};
  for (int l = 0; l < 32; ++l) {
    if (!(g.mask >> l & 1u)) continue;
    const uintptr_t a = addr_of(g.word[l]);
    const unsigned size = size_of(g.word[l]);
    if (size == 0) continue;  // a cp.async that only zero-fills reads nothing
    ++lanes, bytes += size;
    for (uintptr_t s = a >> 5; s <= (a + size - 1) >> 5; ++s)
      if (s != last_sector && (last_sector = s, sectors_seen.add(s)) && ns < 128) sectors[ns++] = s;
    for (uintptr_t s = a >> 7; s <= (a + size - 1) >> 7; ++s)
      if (s != last_line && (last_line = s, lines_seen.add(s))) ++nl;
  }
  if (lanes == 0) return;
  const int kind = k == kLd ? kGlobalLoad : k == kSt ? kGlobalStore : k == kAtom ? kGlobalAtomic : kCpAsyncSource;
  uint64_t* c = w.raw.g[kind];
  c[0] += 1, c[1] += lanes, c[2] += bytes, c[3] += static_cast<uint64_t>(ns), c[4] += static_cast<uint64_t>(nl);
  for (int i = 0; i < ns; ++i) w.touches.push_back({w.group_epoch, w.group_warp, next_seq(w, w.group_warp, w.group_epoch), sectors[i], k});
  if (w.barriers_now == 0) w.fill += static_cast<uint64_t>(ns);
  if (w.barriers_now > w.barriers_last) w.barriers_last = w.barriers_now, w.drain = 0;  // an earlier epoch was not the last
  if (w.barriers_now == w.barriers_last) w.drain += static_cast<uint64_t>(ns);
}

// Lanes [first, first + count) of g, one phase: the most distinct words a bank must deliver.
// The same word for several lanes is one access (a broadcast).
int phase_wavefronts(const Group& g, int first, int count) {
  thread_local Distinct words_seen;
  words_seen.clear();
  int per_bank[32] = {}, most = 0;
  for (int l = first; l < first + count; ++l) {
    if (!(g.mask >> l & 1u)) continue;
    const uintptr_t a = addr_of(g.word[l]);
    const unsigned size = size_of(g.word[l]);
    if (size == 0) continue;
    for (uintptr_t x = a >> 2; x <= (a + size - 1) >> 2; ++x)
      if (words_seen.add(x)) most = std::max(most, ++per_bank[x & 31]);
  }
  return most;
}

void shared_cost(Worker& w, const Group& g, Kind k) {
  unsigned size = 0;
  for (int l = 0; l < 32; ++l)
    if (g.mask >> l & 1u) size = std::max(size, size_of(g.word[l]));
  if (size == 0) return;
  int kind, lanes_per_phase;
  const int width = size <= 4 ? 0 : size <= 8 ? 1 : 2;
  switch (k) {
    case kLd: kind = kSharedLoad32 + width, lanes_per_phase = 32 >> width; break;
    case kSt: kind = kSharedStore32 + width, lanes_per_phase = 32 >> width; break;
    case kAtom: kind = kSharedAtomic, lanes_per_phase = 32 >> width; break;
    case kCpDst: kind = kCpAsyncDestination, lanes_per_phase = 8; break;
    default: kind = kLdmatrixX1 + (k - kLdsmX1), lanes_per_phase = 8; break;  // a matrix: 8 rows of 16 bytes
  }
  uint64_t* c = w.raw.s[kind];
  c[0] += 1;
  for (int first = 0; first < 32; first += lanes_per_phase) {
    const int wf = phase_wavefronts(g, first, lanes_per_phase);
    if (wf > 0) c[1] += static_cast<uint64_t>(wf), c[2] += 1;
  }
}

void cost(Worker& w, const Group& g) {
  int first = 0;
  while (!(g.mask >> first & 1u)) ++first;
  const Kind k = kind_of(g.word[first]);
  const Space sp = space_of(g.word[first]);
  bool one_space = true;
  for (int l = first + 1; l < 32 && one_space; ++l) one_space = !(g.mask >> l & 1u) || space_of(g.word[l]) == sp;
  if (one_space) return sp == kGlobal ? global_cost(w, g, k) : shared_cost(w, g, k);
  // An instruction reaching both spaces through a generic pointer: one request in each.
  Group glob, shar;
  for (int l = first; l < 32; ++l) {
    if (!(g.mask >> l & 1u)) continue;
    Group& to = space_of(g.word[l]) == kGlobal ? glob : shar;
    to.mask |= 1u << l;
    to.word[l] = g.word[l];
  }
  if (glob.mask) global_cost(w, glob, k);
  if (shar.mask) shared_cost(w, shar, k);
}

// ---- grouping ----------------------------------------------------------------------------------

struct Segment {
  int lane;
  const Rec* begin;
  const Rec* end;
};

// Divergent lanes: the k-th execution of an instruction by each lane forms one request.
void group_divergent(Worker& w, const Segment* seg, int n) {
  auto& keys = w.keys;
  keys.clear();
  for (int i = 0; i < n; ++i)
    for (const Rec* r = seg[i].begin; r != seg[i].end; ++r)
      keys.push_back({r->pc, 0, static_cast<uint32_t>(seg[i].lane), r});
  std::sort(keys.begin(), keys.end(), [](const Worker::Key& a, const Worker::Key& b) {
    return a.pc != b.pc ? a.pc < b.pc : a.lane != b.lane ? a.lane < b.lane : a.rec < b.rec;
  });
  for (size_t i = 1; i < keys.size(); ++i)
    if (keys[i].pc == keys[i - 1].pc && keys[i].lane == keys[i - 1].lane) keys[i].occurrence = keys[i - 1].occurrence + 1;
  std::sort(keys.begin(), keys.end(), [](const Worker::Key& a, const Worker::Key& b) {
    return a.pc != b.pc ? a.pc < b.pc : a.occurrence != b.occurrence ? a.occurrence < b.occurrence : a.lane < b.lane;
  });
  Group g;
  for (size_t i = 0; i < keys.size();) {
    g.mask = 0;
    size_t j = i;
    for (; j < keys.size() && keys[j].pc == keys[i].pc && keys[j].occurrence == keys[i].occurrence; ++j)
      g.mask |= 1u << keys[j].lane, g.word[keys[j].lane] = keys[j].rec->word;
    cost(w, g);
    i = j;
  }
}

// Groups the streams of threads [first, first + lanes) (one warp) and empties them, keeping each
// lane's current epoch.
void flush_warp(Worker& w, int first, int lanes) {
  struct Cursor {
    const Rec* p;
    const Rec* end;
    uint64_t epoch;
  };
  Cursor c[32];
  auto skip_markers = [](Cursor& x) {
    while (x.p != x.end && x.p->pc == 0) x.epoch = x.p->word, ++x.p;
  };
  auto at_marker = [](const Cursor& x, const Rec* r) { return r == x.end || r->pc == 0; };
  for (int l = 0; l < lanes; ++l) {
    const std::vector<Rec>& s = w.streams[static_cast<size_t>(first + l)];
    c[l] = {s.data(), s.data() + s.size(), 0};
    skip_markers(c[l]);
  }
  Group g;
  for (;;) {
    // The lanes with accesses left in the earliest epoch: one segment each, up to their next marker.
    uint64_t e = ~uint64_t{0};
    for (int l = 0; l < lanes; ++l)
      if (c[l].p != c[l].end) e = std::min(e, c[l].epoch);
    if (e == ~uint64_t{0}) break;
    int in[32], n = 0;
    for (int l = 0; l < lanes; ++l)
      if (c[l].p != c[l].end && c[l].epoch == e) in[n++] = l;
    w.barriers_now = e >> 16;
    w.group_epoch = e, w.group_warp = static_cast<uint32_t>(first / 32);
    // In step while every lane runs the same instruction: the j-th accesses form one request.
    ptrdiff_t j = 0;
    bool same = true;
    for (;; ++j) {
      const Rec* r0 = c[in[0]].p + j;
      const bool done = at_marker(c[in[0]], r0);
      for (int i = 1; i < n && same; ++i) {
        const Rec* r = c[in[i]].p + j;
        same = done ? at_marker(c[in[i]], r) : !at_marker(c[in[i]], r) && r->pc == r0->pc;
      }
      if (done || !same) break;
      g.mask = 0;
      for (int i = 0; i < n; ++i) g.mask |= 1u << in[i], g.word[in[i]] = c[in[i]].p[j].word;
      if ((j & 3) == 0)  // 32 streams read side by side: more than the hardware prefetcher follows
        for (int i = 0; i < n; ++i) __builtin_prefetch(c[in[i]].p + j + 32);
      cost(w, g);
    }
    Segment seg[32];
    for (int i = 0; i < n; ++i) {
      Cursor& x = c[in[i]];
      x.p += j;
      const Rec* b = x.p;
      while (!at_marker(x, x.p)) ++x.p;
      seg[i] = {in[i], b, x.p};
      skip_markers(x);
    }
    // The rest of the epoch, where the lanes' instructions differ (what came before was the same
    // in every lane, so the k-th executions still match).
    if (!same) group_divergent(w, seg, n);
  }
  for (int l = 0; l < lanes; ++l) {
    std::vector<Rec>& s = w.streams[static_cast<size_t>(first + l)];
    s.clear();
    s.push_back(Rec{0, w.epoch[static_cast<size_t>(first + l)]});
  }
}

void flush_block(Worker& w) {
  for (int first = 0; first < w.threads; first += 32) flush_warp(w, first, std::min(32, w.threads - first));
}

void push_marker(Worker& w, unsigned linear) {
  std::vector<Rec>& s = w.streams[linear];
  const uint64_t e = w.epoch[linear];
  if (!s.empty() && s.back().pc == 0)
    s.back().word = e;
  else
    s.push_back(Rec{0, e});
}

// ---- the worker's view of the executable's thread-local block ---------------------------------

int find_tls(dl_phdr_info* info, size_t, void* out) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_TLS && info->dlpi_tls_modid == 1) {
      // x86-64 (TLS variant II): the executable's block ends at the thread pointer.
      auto* r = static_cast<uintptr_t*>(out);
      const uintptr_t align = ph.p_align ? ph.p_align : 1;
      r[1] = (ph.p_memsz + align - 1) / align * align;
      r[0] = reinterpret_cast<uintptr_t>(__builtin_thread_pointer()) - r[1];
      return 1;
    }
  }
  return 0;
}

Worker& worker() {
  Hot& h = t_hot;
  if (!h.worker) {
    h.worker = new Worker();  // lives as long as its OS thread, which the emulator keeps
    uintptr_t r[2] = {0, 0};
    dl_iterate_phdr(find_tls, r);
    const uintptr_t own[4] = {reinterpret_cast<uintptr_t>(&t_thread), reinterpret_cast<uintptr_t>(&t_block_idx),
                              reinterpret_cast<uintptr_t>(&t_block_dim), reinterpret_cast<uintptr_t>(&t_grid_dim)};
    const uintptr_t own_len[4] = {sizeof t_thread, sizeof t_block_idx, sizeof t_block_dim, sizeof t_grid_dim};
    bool inside = r[1] > 0;
    for (uintptr_t a : own) inside &= a - r[0] < r[1];
    if (!inside) {  // not the layout this was written for: static __shared__ goes uncounted
      static std::once_flag warned;
      std::call_once(warned, [] {
        std::fprintf(stderr, "simt counters: the thread-local block was not found; static __shared__ is not counted\n");
      });
      r[0] = r[1] = 0;
    }
    h.tls_lo = r[0], h.tls_len = r[1];
    for (int i = 0; i < 4; ++i) h.skip_lo[i] = own[i], h.skip_len[i] = own_len[i];
    std::lock_guard<std::mutex> g(g_mu);
    g_workers.push_back(h.worker);
  }
  return *h.worker;
}

uint64_t popcount(const std::atomic<uint64_t>* bits, size_t words) {
  uint64_t n = 0;
  for (size_t i = 0; i < words; ++i) n += static_cast<uint64_t>(__builtin_popcountll(bits[i].load(std::memory_order_relaxed)));
  return n;
}

}  // namespace

Alloc* find_alloc(uintptr_t a) {
  const auto it = std::upper_bound(g_launch_allocs.begin(), g_launch_allocs.end(), a,
                                   [](uintptr_t x, const Alloc* al) { return x < al->lo; });
  if (it == g_launch_allocs.begin()) return nullptr;
  Alloc* al = *std::prev(it);
  return a < al->hi ? al : nullptr;
}

// ---- the hooks -----------------------------------------------------------------------------------

void allocated(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  auto al = std::make_unique<Alloc>();
  al->lo = reinterpret_cast<uintptr_t>(p);
  al->hi = al->lo + bytes;
  g_allocs[al->lo] = std::move(al);
}
void freed(const void* p) {
  std::lock_guard<std::mutex> g(g_mu);
  g_allocs.erase(reinterpret_cast<uintptr_t>(p));
}

// Calls f(sector) for each sector of al the launch read (its bit set in al.read).
template <class F>
void each_read(const Alloc& al, F&& f) {
  for (size_t w = 0; w < al.words; ++w)
    for (uint64_t bits = al.read[w].load(std::memory_order_relaxed); bits; bits &= bits - 1)
      f(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
}

// The sectors of al that more than one block read (its part of Counters::shared_sectors): by the
// highest grid dimension along which the lowest and highest reader differ, the readers counted as
// the blocks between them along it (every K/V tile is read by a run of Q tiles' blocks: all of them,
// or under is_causal those from the diagonal on). The highest reader's index is the larger, so along
// the dimension where the two first differ (z, then y, then x) its coordinate is the larger too.
void shared_reads(const Alloc& al, AllocationSectors& c) {
  const uint64_t gx = g_grid.x, gy = g_grid.y;
  each_read(al, [&](size_t s) {
    const uint32_t lo = al.first_reader[s].load(std::memory_order_relaxed), hi = al.last_reader[s].load(std::memory_order_relaxed);
    if (lo == hi) return;  // read by one block
    const uint64_t a = lo - 1, b = hi - 1;
    const uint64_t ax = a % gx, ay = a / gx % gy, az = a / (gx * gy), bx = b % gx, by = b / gx % gy, bz = b / (gx * gy);
    const int dim = az != bz ? 2 : ay != by ? 1 : 0;
    const uint64_t along = dim == 2 ? bz - az : dim == 1 ? by - ay : bx - ax;
    c.shared_sectors[dim] += 1, c.shared_reads[dim] += static_cast<double>(along + 1);
  });
}

// The block's ring (Counters::ring_stages). Its stages are the mbarriers whose phases carry a
// tile's bytes, the bytes the most of them carry per phase: Q's copy is one mbarrier, of another size
// (chapter 09's Q is a half or a quarter of a stage), copied once a block, or once per Q tile by a
// persistent block (step i), against as many stages as the ring has. A block with fewer tiles than
// twice its stages refills only some of them (4 tiles in 3 stages, chapters 09's steps f and g:
// one), the others taking one tile each. Its tiles are its stages' phases, one per tile (a block
// whose tiles no stage took twice has as many, and no refill: every count stays a polynomial in a
// sampled problem's rows); each stage's phases but its first are refills. A consumer gives each
// tile back by an arrival without bytes, in order. When a warp gives back its k-th tile (its k-th
// arrival, from 1) it has waited for W tiles, and holds W - k beyond the one it works on (the lag),
// at most over its first arrivals (its last ones, after the loop, hold fewer; a persistent block's
// arrival that gives Q back only lowers the later ones). Fixed once the block has ended: only then
// is a barrier known to have carried a second phase. A one-shot copy of exactly a stage's bytes
// would be taken for a stage.
void count_ring(Worker& w) {
  if (w.ring_bars.empty()) return;  // no TMA copy: no ring
  // A stage's phase carries a tile's bytes: the bytes a phase of the most mbarriers carries (Q's
  // mbarrier is one, against the ring's stages; a persistent block refills it too, once per Q tile).
  const auto per_phase = [](const Worker::RingBar& b) { return b.tx_bytes / b.tx_phases; };
  uint64_t tile_bytes = 0;
  size_t most = 0;
  bool refilled = false;
  for (const Worker::RingBar& b : w.ring_bars) {
    size_t alike = 0;
    bool again = false;
    for (const Worker::RingBar& o : w.ring_bars)
      if (per_phase(o) == per_phase(b)) ++alike, again |= o.tx_phases > 1;
    if (alike > most || (alike == most && again && !refilled)) most = alike, tile_bytes = per_phase(b), refilled = again;
  }
  const auto stage = [&](const void* bar) {
    for (const Worker::RingBar& b : w.ring_bars)
      if (b.bar == bar) return per_phase(b) == tile_bytes;
    return false;
  };
  uint64_t stages = 0, phases = 0, bytes = 0, lag = 0;
  for (const Worker::RingBar& b : w.ring_bars)
    if (stage(b.bar)) ++stages, phases += b.tx_phases, bytes += b.tx_bytes;
  for (const Worker::RingWarp& r : w.ring_warps)
    for (size_t k = 0; k < r.probes.size(); ++k) {
      uint64_t waited = 0;
      for (const auto& [bar, n] : r.probes[k])
        if (stage(bar)) waited += n;
      if (waited > k + 1) lag = std::max<uint64_t>(lag, waited - (k + 1));
    }
  Raw& raw = w.raw;
  raw.ring_tiles += phases;  // a phase of a stage per tile copied
  if (!refilled) return;     // no stage took a second tile: no ring to time
  raw.ring_stages = std::max(raw.ring_stages, stages), raw.ring_lag = std::max(raw.ring_lag, lag);
  raw.ring_stage_bytes = std::max(raw.ring_stage_bytes, bytes / phases);
  raw.ring_refills += phases - stages;
}

// The block's re-reads by reuse distance (Counters::reread_l1, reread_l2) and its distinct ld
// sectors (block_load_sectors), from its touches in an order no schedule changes: by epoch, and
// within one the warps side by side, the k-th sector each touched next to the others' k-th (warps
// running the same code keep pace, as a GPU's schedulers interleave them; one warp's whole epoch
// before the next's would put the sectors they share a warp's footprint apart). A TMA row counts
// as a cp.async: both go to L2.
void count_rereads(Worker& w) {
  std::sort(w.touches.begin(), w.touches.end(), [](const Worker::Touch& a, const Worker::Touch& b) {
    return a.epoch != b.epoch ? a.epoch < b.epoch : a.seq != b.seq ? a.seq < b.seq : a.warp < b.warp;
  });
  for (const Worker::Touch& t : w.touches) {
    const long long distance = w.reuse.touch(t.sector, t.kind == kLd || t.kind == kCpSrc, t.kind == kLd);
    if (distance >= 0) ++(t.kind == kLd ? w.raw.reread_l1 : w.raw.reread_l2)[reuse_bucket(static_cast<unsigned long long>(distance))];
  }
  w.raw.block_load_sectors += w.reuse.loaded_by_ld();
  w.touches.clear();
  w.reuse.clear();
}

bool launch_begin(const void* kernel, dim3 grid, dim3 block, size_t smem) {
  std::lock_guard<std::mutex> g(g_mu);
  g_counting = g_enabled;
  if (!g_counting) return true;
  g_launch_allocs.clear();
  if (g_dry) {  // nothing will be touched: no bitmaps to clear
    for (Worker* w : g_workers) w->raw = Raw{}, w->block_work.clear();
    g_kernel = kernel_name(kernel);
    g_grid = grid, g_block = block, g_smem = smem, g_smem_static = std::max(0LL, static_smem_bytes(kernel));
    return false;
  }
  for (auto& [lo, al] : g_allocs) {
    const size_t words = ((al->hi - al->lo + 31) / 32 + 63) / 64;
    if (al->words != words || !al->read) {
      al->words = words;
      al->read.reset(new std::atomic<uint64_t>[words]);
      al->written.reset(new std::atomic<uint64_t>[words]);
      al->first_reader.reset(new std::atomic<uint32_t>[words * 64]());
      al->last_reader.reset(new std::atomic<uint32_t>[words * 64]());
    } else {  // the readers of what the last launch read (a new array is zero already)
      each_read(*al, [&](size_t s) {
        al->first_reader[s].store(0, std::memory_order_relaxed), al->last_reader[s].store(0, std::memory_order_relaxed);
      });
    }
    for (size_t i = 0; i < words; ++i) al->read[i].store(0, std::memory_order_relaxed), al->written[i].store(0, std::memory_order_relaxed);
    g_launch_allocs.push_back(al.get());
  }
  for (Worker* w : g_workers) w->raw = Raw{}, w->block_work.clear();
  g_kernel = kernel_name(kernel);
  g_grid = grid, g_block = block, g_smem = smem, g_smem_static = std::max(0LL, static_smem_bytes(kernel));
  return true;
}

void launch_end(bool ok) {
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_counting) return;
  g_counting = false;
  if (!ok) return;  // a failed launch counts nothing
  Raw r{};
  for (const Worker* w : g_workers) {
    const Raw& x = w->raw;
    for (int k = 0; k < kGlobalKinds; ++k)
      for (int f = 0; f < 5; ++f) r.g[k][f] += x.g[k][f];
    for (int k = 0; k < kSharedKinds; ++k)
      for (int f = 0; f < 3; ++f) r.s[k][f] += x.s[k][f];
    r.block_load_sectors += x.block_load_sectors, r.blocks_counted += x.blocks_counted;
    r.fill_sectors += x.fill_sectors, r.drain_sectors += x.drain_sectors;
    r.mma += x.mma, r.mma_flop += x.mma_flop, r.mufu += x.mufu, r.barriers += x.barriers;
    r.shuffles += x.shuffles, r.votes += x.votes, r.syncwarps += x.syncwarps;
    r.wgmma += x.wgmma, r.wgmma_flop += x.wgmma_flop;
    r.producer_warps += x.producer_warps;
    r.ring_stages = std::max(r.ring_stages, x.ring_stages), r.ring_lag = std::max(r.ring_lag, x.ring_lag);
    r.ring_stage_bytes = std::max(r.ring_stage_bytes, x.ring_stage_bytes);
    r.ring_tiles += x.ring_tiles, r.ring_refills += x.ring_refills;
    for (int b = 0; b < kReuseBuckets; ++b) r.reread_l1[b] += x.reread_l1[b], r.reread_l2[b] += x.reread_l2[b];
  }
  Counters c;
  c.launches = 1;
  c.blocks = static_cast<double>(g_grid.x) * g_grid.y * g_grid.z;
  c.blocks_counted = static_cast<double>(r.blocks_counted);
  c.threads_per_block = static_cast<double>(g_block.x) * g_block.y * g_block.z;
  c.smem_bytes = static_cast<double>(g_smem);
  c.smem_static_bytes = static_cast<double>(g_smem_static);
  const double scale = r.blocks_counted ? c.blocks / c.blocks_counted : 0.0;
  for (int k = 0; k < kGlobalKinds; ++k) {
    GlobalOps& o = c.global[k];
    o.requests = scale * r.g[k][0], o.lanes = scale * r.g[k][1], o.bytes = scale * r.g[k][2];
    o.sectors = scale * r.g[k][3], o.lines = scale * r.g[k][4];
  }
  for (int k = 0; k < kSharedKinds; ++k)
    c.shared[k] = {scale * r.s[k][0], scale * r.s[k][1], scale * r.s[k][2]};
  c.block_load_sectors = scale * r.block_load_sectors;
  for (int b = 0; b < kReuseBuckets; ++b)
    c.reread_l1[b] = scale * static_cast<double>(r.reread_l1[b]), c.reread_l2[b] = scale * static_cast<double>(r.reread_l2[b]);
  c.fill_sectors = scale * r.fill_sectors, c.drain_sectors = scale * r.drain_sectors;
  c.grid_x = g_grid.x, c.grid_y = g_grid.y, c.grid_z = g_grid.z;
  std::vector<AllocationSectors> touched;
  for (const Alloc* al : g_launch_allocs) {
    const double rd = static_cast<double>(popcount(al->read.get(), al->words));
    const double wr = static_cast<double>(popcount(al->written.get(), al->words));
    c.dram_read_sectors += rd, c.dram_write_sectors += wr;
    if (rd == 0 && wr == 0) continue;
    touched.push_back({reinterpret_cast<const void*>(al->lo), static_cast<double>(al->hi - al->lo), rd, wr});
    if (rd > 0) shared_reads(*al, touched.back());
    for (int d = 0; d < 3; ++d)
      c.shared_sectors[d] += touched.back().shared_sectors[d], c.shared_reads[d] += touched.back().shared_reads[d];
  }
  c.mma = static_cast<double>(r.mma), c.mma_flop = static_cast<double>(r.mma_flop);
  c.mufu = static_cast<double>(r.mufu), c.barriers = static_cast<double>(r.barriers);
  c.shuffles = static_cast<double>(r.shuffles), c.votes = static_cast<double>(r.votes);
  c.syncwarps = static_cast<double>(r.syncwarps);
  c.wgmma = static_cast<double>(r.wgmma), c.wgmma_flop = static_cast<double>(r.wgmma_flop);
  c.producer_warps = static_cast<double>(r.producer_warps);
  c.ring_stages = static_cast<double>(r.ring_stages), c.ring_lag = static_cast<double>(r.ring_lag);
  c.ring_stage_bytes = static_cast<double>(r.ring_stage_bytes);
  c.ring_tiles = scale * static_cast<double>(r.ring_tiles), c.ring_refills = scale * static_cast<double>(r.ring_refills);
  std::vector<float> work;
  for (const Worker* w : g_workers)
    for (const auto& [linear, n] : w->block_work) {
      if (work.empty()) work.assign(static_cast<size_t>(c.blocks), 0.f);
      if (linear < work.size()) work[linear] = n;
    }
  g_done.push_back({g_kernel, c, std::move(touched), std::move(work)});
}

// What a block does that takes it time, for every block (not only those whose requests are
// grouped), in thread-level operations: its exponentials, and its warps' products, barriers and
// shuffles (32 each); with its loads and stores (Hot::accesses), LaunchCounters::block_work.
uint64_t warp_ops(const Raw& r) {
  return r.mufu + 32 * (r.mma + r.wgmma + r.barriers + r.shuffles + r.votes + r.syncwarps);
}

void block_begin(uint3 idx, int threads, const void* smem, size_t smem_bytes) {
  Hot& h = t_hot;
  h.counting = g_counting;
  if (!h.counting) return;
  Worker& w = worker();
  const unsigned long long linear = idx.x + static_cast<unsigned long long>(g_grid.x) * (idx.y + static_cast<unsigned long long>(g_grid.y) * idx.z);
  h.block = static_cast<uint32_t>(linear + 1);
  h.sampled = linear % static_cast<unsigned>(g_sample) == 0;
  w.linear = linear, w.ops_at_begin = warp_ops(w.raw), h.accesses = 0;
  h.smem_lo = reinterpret_cast<uintptr_t>(smem), h.smem_len = smem_bytes;
  for (int i = 0; i < 2; ++i) h.last_lo[i] = h.last_len[i] = 0, h.last[i] = nullptr;
  h.few = g_launch_allocs.size() <= static_cast<size_t>(Hot::kFew) ? static_cast<int>(g_launch_allocs.size()) : -1;
  for (int i = 0; i < h.few; ++i) {
    Alloc* al = g_launch_allocs[static_cast<size_t>(i)];
    h.few_lo[i] = al->lo, h.few_len[i] = al->hi - al->lo, h.few_alloc[i] = al;
  }
  w.threads = threads;
  if (!h.sampled) return;
  ++w.raw.blocks_counted;
  if (w.streams.size() < static_cast<size_t>(threads)) w.streams.resize(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) w.streams[static_cast<size_t>(i)].clear();
  w.epoch.assign(static_cast<size_t>(threads), 0);
  w.barriers_now = w.barriers_last = w.fill = w.drain = w.tma_fill = w.tma_sectors = 0;
  w.computed = false;
  w.touches.clear();
  w.warp_seq.assign(static_cast<size_t>(2 * ((threads + 31) / 32)), 0);
  w.warp_epoch.assign(w.warp_seq.size(), 0);
  w.completed_at.clear();
  w.ring_bars.clear();
  w.ring_warps.assign(static_cast<size_t>((threads + 31) / 32), {});
  h.streams = w.streams.data();
}

void block_end() {
  Hot& h = t_hot;
  if (!h.counting) return;
  Worker& w = *h.worker;
  w.block_work.emplace_back(w.linear, static_cast<float>(warp_ops(w.raw) - w.ops_at_begin + h.accesses) / 32);
  if (h.sampled) {
    flush_block(w);
    count_rereads(w);  // and the block's load sectors
    if (w.barriers_last > 0) w.raw.fill_sectors += w.fill, w.raw.drain_sectors += w.drain;
    w.raw.fill_sectors += w.tma_fill;
    count_ring(w);
  }
  h.counting = h.sampled = false;
}

void barrier_arrive(unsigned linear) {
  Hot& h = t_hot;
  if (!h.sampled) return;
  Worker& w = *h.worker;
  w.epoch[linear] = ((w.epoch[linear] >> 16) + 1) << 16;
  push_marker(w, linear);
}
void barrier_release(int warps) {
  Hot& h = t_hot;
  if (!h.counting) return;
  Worker& w = *h.worker;
  w.raw.barriers += static_cast<uint64_t>(warps);
  if (h.sampled) flush_block(w);  // every thread has arrived: its accesses so far are final
}

void named_barrier_release(int warps) {
  Hot& h = t_hot;
  if (h.counting) h.worker->raw.barriers += static_cast<uint64_t>(warps);
}

void mbarrier_completed(const void* bar, long long tx_bytes) {
  Hot& h = t_hot;
  if (!h.sampled) return;
  Worker& w = *h.worker;
  if (tx_bytes > 0) {
    auto it = std::find_if(w.ring_bars.begin(), w.ring_bars.end(), [&](const Worker::RingBar& b) { return b.bar == bar; });
    if (it == w.ring_bars.end()) it = w.ring_bars.insert(w.ring_bars.end(), {bar, 0, 0});
    ++it->tx_phases, it->tx_bytes += static_cast<uint64_t>(tx_bytes);
  }
  if (w.computed) return;
  for (auto& [b, at] : w.completed_at)
    if (b == bar) {
      at = w.tma_sectors;
      return;
    }
  w.completed_at.emplace_back(bar, w.tma_sectors);
}
void mbarrier_waited(const void* bar, unsigned linear) {
  Hot& h = t_hot;
  if (!h.sampled) return;
  Worker& w = *h.worker;
  if (linear % 32 == 0) {
    Worker::Waits& waits = w.ring_warps[linear / 32].waits;
    auto it = std::find_if(waits.begin(), waits.end(), [&](const auto& e) { return e.first == bar; });
    if (it == waits.end()) it = waits.insert(waits.end(), {bar, 0});
    ++it->second;
  }
  if (w.computed) return;
  for (const auto& [b, at] : w.completed_at)
    if (b == bar) w.tma_fill = std::max(w.tma_fill, at);
}

void mbarrier_arrived(const void*, unsigned linear) {
  Hot& h = t_hot;
  if (!h.sampled || linear % 32 != 0) return;
  Worker::RingWarp& r = h.worker->ring_warps[linear / 32];
  if (r.probes.size() < Worker::kRingProbes) r.probes.push_back(r.waits);
}

void registers_released() {
  Hot& h = t_hot;
  if (h.counting) h.worker->raw.producer_warps += 1;
}

void warp_exited(unsigned warp) {
  Hot& h = t_hot;
  if (h.sampled)  // its streams are final: group them while they are still in cache
    flush_warp(*h.worker, static_cast<int>(warp) * 32, std::min(32, h.worker->threads - static_cast<int>(warp) * 32));
}

void collective_arrive(unsigned linear) {
  Hot& h = t_hot;
  if (!h.sampled) return;
  Worker& w = *h.worker;
  ++w.epoch[linear];
  push_marker(w, linear);
}
void collective_done(const char* what, unsigned warp, bool whole_warp) {
  Hot& h = t_hot;
  if (!h.counting) return;
  Worker& w = *h.worker;
  if (std::strncmp(what, "mma", 3) == 0) {
    thread_local const char* last = nullptr;
    thread_local uint64_t flop = 0;
    if (what != last) {  // "mma.sync.m16n8k16": 2 * m * n * k operations
      int m = 0, n = 0, k = 0;
      const char* shape = std::strstr(what, ".m");
      flop = shape && std::sscanf(shape, ".m%dn%dk%d", &m, &n, &k) == 3 ? 2ull * m * n * k : 0;
      last = what;
    }
    ++w.raw.mma, w.raw.mma_flop += flop;
  } else if (std::strncmp(what, "__shfl", 6) == 0) {
    ++w.raw.shuffles;
  } else if (std::strncmp(what, "__syncwarp", 10) == 0) {
    ++w.raw.syncwarps;
  } else if (std::strncmp(what, "__ballot", 8) == 0 || std::strncmp(what, "__all", 5) == 0 ||
             std::strncmp(what, "__any", 5) == 0) {
    ++w.raw.votes;
  }
  if (h.sampled && whole_warp)
    flush_warp(w, static_cast<int>(warp) * 32, std::min(32, w.threads - static_cast<int>(warp) * 32));
}

void mufu() {
  Hot& h = t_hot;
  if (h.counting) ++h.worker->raw.mufu;
}

void tma_row(const void* src, unsigned bytes) {
  Hot& h = t_hot;
  if (!h.counting || bytes == 0) return;
  ++h.accesses;
  const uintptr_t s = reinterpret_cast<uintptr_t>(src);
  Space space;
  Alloc* al = nullptr;
  if (classify(h, s, space, al) && space == kGlobal) mark(al, s, bytes, kLd);
  if (!h.sampled) return;
  uint64_t* c = h.worker->raw.g[kTmaLoad];
  // Sectors counted per row: two rows share none unless narrower than a sector or off its boundary
  // (chapter 09's are 128-byte rows), where this would count a shared sector twice.
  const uint64_t sectors = ((s + bytes - 1) >> 5) - (s >> 5) + 1;
  c[2] += bytes, c[3] += sectors;
  h.worker->tma_sectors += sectors;
  Worker& w = *h.worker;
  const unsigned linear = t_thread->linear;
  // The warp's TMA rows: a sequence of their own, ordered as one more warp's (no two touches of a
  // block share epoch, sequence and position, so the order does not depend on the sort's).
  const uint32_t copies = static_cast<uint32_t>(w.warp_seq.size() / 2 + linear / 32);
  for (uint64_t sector = s >> 5; sector <= (s + bytes - 1) >> 5; ++sector)
    w.touches.push_back({w.epoch[linear], copies, next_seq(w, copies, w.epoch[linear]), sector, kCpSrc});
}
void tma_box(unsigned bytes) {
  Hot& h = t_hot;
  if (!h.sampled) return;
  Raw& r = h.worker->raw;
  r.g[kTmaLoad][0] += 1, r.g[kTmaLoad][1] += 1;
  const uint64_t wavefronts = (bytes + 127) / 128;
  r.s[kTmaDestination][0] += 1, r.s[kTmaDestination][1] += wavefronts, r.s[kTmaDestination][2] += wavefronts;
}
// A warp's part: its 16 rows of A (from shared memory or registers) and a quarter of B, whose N
// rows the warpgroup's 4 parts read once.
void wgmma(int n, bool a_shared) {
  Hot& h = t_hot;
  if (!h.counting) return;
  Raw& r = h.worker->raw;
  r.wgmma += 1, r.wgmma_flop += 2ull * 16 * static_cast<uint64_t>(n) * 16;
  if (!h.sampled) return;
  h.worker->computed = true;
  const uint64_t bytes = (a_shared ? 16 * 16 * 2 : 0) + static_cast<uint64_t>(n) * 16 * 2 / 4;
  r.s[kWgmmaOperands][0] += 1, r.s[kWgmmaOperands][1] += (bytes + 127) / 128, r.s[kWgmmaOperands][2] += (bytes + 127) / 128;
}

void atomic(const void* a, unsigned bytes, const void* pc) {
  on_access(reinterpret_cast<uintptr_t>(a), bytes, kAtom, reinterpret_cast<uintptr_t>(pc));
}

// A site of the shim (not an instruction of the kernel): a tag from the caller's file and line.
static uintptr_t shim_site(const char* file, int line, int which) {
  return uintptr_t{1} << 63 | reinterpret_cast<uintptr_t>(file) << 16 | (static_cast<uintptr_t>(line) & 0x3fff) << 2 |
         static_cast<uintptr_t>(which);
}

void ldmatrix_row(const void* row, int num, bool trans, const char* file, int line) {
  Hot& h = t_hot;
  if (h.counting) ++h.accesses;
  if (!h.sampled) return;
  const Kind k = static_cast<Kind>((trans ? kLdsmX1T : kLdsmX1) + (num == 1 ? 0 : num == 2 ? 1 : 2));
  h.streams[t_thread->linear].push_back(
      Rec{shim_site(file, line, 0), pack(reinterpret_cast<uintptr_t>(row), row ? 16 : 0, k, kShared)});
}

void cp_async(const void* dst, const void* src, int src_bytes, const char* file, int line) {
  Hot& h = t_hot;
  if (!h.counting) return;
  ++h.accesses;
  const uintptr_t s = reinterpret_cast<uintptr_t>(src);
  Space space;
  Alloc* al = nullptr;
  const bool global = src_bytes > 0 && classify(h, s, space, al) && space == kGlobal;
  if (global) mark(al, s, static_cast<unsigned>(src_bytes), kLd);
  if (!h.sampled) return;
  std::vector<Rec>& stream = h.streams[t_thread->linear];
  // Both records always, so that every lane runs the same sites; a zero-fill reads no bytes.
  stream.push_back(Rec{shim_site(file, line, 1), pack(s, global ? static_cast<unsigned>(src_bytes) : 0, kCpSrc, kGlobal)});
  stream.push_back(Rec{shim_site(file, line, 2), pack(reinterpret_cast<uintptr_t>(dst), 16, kCpDst, kShared)});
}

}  // namespace detail::counters

// ---- the public interface -----------------------------------------------------------------------

namespace counters {
void start(const Options& o) {
  std::lock_guard<std::mutex> g(detail::counters::g_mu);
  detail::counters::g_enabled = true;
  detail::counters::g_sample = std::max(1, o.sample_blocks);
  detail::counters::g_dry = o.dry_run;
  detail::counters::g_done.clear();
}
void stop() {
  std::lock_guard<std::mutex> g(detail::counters::g_mu);
  detail::counters::g_enabled = false;
}
bool counting() {
  std::lock_guard<std::mutex> g(detail::counters::g_mu);
  return detail::counters::g_enabled;
}
std::vector<LaunchCounters> take() {
  std::lock_guard<std::mutex> g(detail::counters::g_mu);
  std::vector<LaunchCounters> out;
  out.swap(detail::counters::g_done);
  return out;
}
}  // namespace counters

}  // namespace simt
