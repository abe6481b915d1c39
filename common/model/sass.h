// sass.h: what the compiler made of each kernel for sm_90 (chapter 09's for sm_90a), and for other
// architectures where the build compiled them (kSassArchs), as the model needs it: the registers a
// thread holds (occupancy), the instructions a warp issues beside those the emulator sees, and the
// cycles one warp alone takes to issue them.
//
// The emulator counts the instructions that move data or synchronise (simt/counters.h): global
// and shared-memory requests, mma.sync and wgmma, TMA boxes, barriers, shuffles, votes. The FP32, integer, conversion
// and branch instructions around them take issue slots too: 4 per clock per SM, one per scheduler.
// tools/sass_issue.py counts them in each kernel's sm_90 SASS by control flow and writes
// sass_sm90.inc: parts, each its instructions per warp and the seen instructions of each kind in
// them. A launch's instructions issued are then
//
//   warps x fixed           the blocks outside every loop, once per warp (a warp-specialized
//                           kernel's, chapter 09's steps d onwards: the block's start)
//   + blocks x producer     its producer's own blocks outside the loops, once per block: only the
//                           warp of its one copying thread goes on past the start
//   + consumer warps x consumers   its consumers' own
//   + tiles x tile          the tile loop: tiles = the emulator's barriers beyond those parts',
//                           per barrier of an iteration (it counts every warp's), but no more than
//                           the wgmma left allow where it has some (a loop beside it may pass
//                           barriers too: chapter 09's let_go takes a turn at a tile with no
//                           product); an estimate either way, the parts before it being taken for
//                           every warp, whichever branch a warp takes;
//                           without a barrier, the fewest that any kind seen in an iteration allows
//   + sum trips x inner     the other loops, each its own part (a decoding kernel's key loop runs
//                           thousands of times, its append loop a few), from what the emulator
//                           counted beyond the first two parts: first each loop with an explicit
//                           kind (below) that no other unsolved loop has, its trips the fewest
//                           those kinds allow; their counts taken away, the next; the loops left,
//                           as one part, by the fewest trips any of its kinds allows; then those
//                           of them that hold none of the kinds that used up and access global
//                           memory, by what is left (loop_trips)
//   + trips x outer         the loops around the tile loop, their own blocks: the same, from what
//                           is left beyond the others (barriers apart: the tiles took them); in a
//                           persistent launch, once per work item and consumer warp, taken first
//
// "The fewest": the CPU compiler and nvcc may split or merge an access differently (a float4 read
// as one load or four), which inflates one kind's count; the kind that allows the fewest trips is
// the one least inflated. notes/performance_model.md explains it; CTest sass_data_fresh fails when
// a kernel's source changed since sass_sm90.inc was written.
// Each part also carries the cycles one warp alone takes to issue it (SassPart::cycles: the stalls
// in the instructions' control bits and the waits for variable-latency results), weighted by the
// same trips: model.h's latency floor.
// An explicit kind is one the source names instruction by instruction (cp.async, ldmatrix,
// mma.sync, shuffles: intrinsics), which both compilers emit one for one; loads and stores are not,
// so a loop is never counted by its loads or stores alone (the emulator's scalar reads of a loop
// nvcc reads with LDS.128 would make it run four times too often).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "simt/counters.h"

namespace attn {

// The kinds of instruction both the emulator and the SASS see, in sass_issue.py's KINDS order.
enum SeenKind { kSeenCpAsync, kSeenLd, kSeenSt, kSeenAtom, kSeenLdmatrix, kSeenLds, kSeenSts, kSeenMma, kSeenBar,
                kSeenShfl, kSeenWgmma, kSeenTma, kSeenKinds };

struct SassPart {
  double instructions;
  double seen[kSeenKinds];
  // The cycles one warp alone takes to issue them: the stalls the compiler encoded in each
  // instruction's control bits, and the waits for the variable-latency results it names
  // (tools/sass_issue.py, block_cycles) and for the wgmma groups a WARPGROUP.DEPBAR names (each
  // HGMMA on its sub-partition's tensor core at the peak's rate, no sooner than wgmma's latency),
  // with every global load hitting L2 (cycles) and with every one served by DRAM (cycles_dram).
  double cycles;
  double cycles_dram;
  // Of the instructions, those of the FMA pipes (tools/sass_issue.py's FP32_OPS and IMAD_OPS): FP32
  // adds, multiplies and multiply-adds, and integer multiply-adds (model.h's FMA term).
  double fp32;
  double imad;
  // The cycles one warp alone takes from the part's start to the first arrival that gives a ring's
  // stage back (an mbarrier arrival without bytes: chapter 09's consumers), with it, global loads
  // hitting L2; 0 without one. How long into its iteration a consumer holds the stage it frees
  // (model.h's ring: notes/performance_model.md, "Chapter 09's SASS").
  double release;
};

inline constexpr int kSassLoops = 20;  // inner parts a kernel may have (sass_issue.py's MAX_LOOPS)

struct SassKernel {
  const char* name;  // demangled, as the emulator names a launch's kernel
  int registers;     // per thread (ptxas)
  bool lockstep;     // its tile loop, or a loop around it, waits at __syncthreads: its warps meet every tile
  SassPart fixed, tile;           // per warp: outside the loops; one tile iteration
  SassPart outer;                 // one trip of the loops around the tile loop (their own blocks)
  // A warp-specialized kernel's roles (chapter 09's steps d onwards): the blocks outside the loops on
  // the producer's own branch (run by the one thread that copies) and on the consumers'; `fixed` is
  // then the block's start.
  SassPart producer, consumers;
  SassPart inner[kSassLoops];     // one trip of each other loop; unused ones all zero
  unsigned producer_loops;        // bit j: inner[j] is on the producer's branch
};

inline constexpr SassKernel kSassSm90[] = {
#include "sass_sm90.inc"
};

// A source file and its hash (tools/sass_issue.py's file_hash; sass_fresh.h).
struct SassSource {
  const char* path;  // from the repository's root
  uint64_t hash;
};

// The rows the counters build compiled itself for the kernels edited since sass_sm90.inc was written
// (tools/sass_issue.py --live, into the build folder's generated/sass_live.cpp; empty in other
// builds): each edited source with its hash then, and the rows of every kernel built from one.
// find_sass takes a kernel's rows from here when it has them. `why`: what kept the build from
// compiling them ("" when nothing did).
struct SassLive {
  const SassKernel* rows;
  int count;
  const SassSource* edited;
  int edited_count;
  const char* why;
};
extern const SassLive kSassLive;

// The rows for the architectures of the other GPUs gpus.h names (sm_75 to sm_120 but sm_90), which
// the counters build compiles itself for those FLASHSTEPS_SASS_ARCHS lists (tools/sass_issue.py
// --archs, into the build folder's generated/sass_archs.cpp, each source's rows cached by hash: an
// edit recompiles what it reaches). None by default: a GPU without its own rows is modelled with
// sm_90's, a stand-in the profile names. `why`: what kept the build from compiling them ("" when
// nothing did).
struct SassArchTable {
  int cc;  // 80 for sm_80
  const SassKernel* rows;
  int count;
};
struct SassArchs {
  const SassArchTable* tables;
  int count;
  const char* why;
};
extern const SassArchs kSassArchs;

// The table of rows that models a GPU of compute capability cc: its own architecture's where the
// build has it; else the newest the build has of the same major version below it (the default GPU
// build's sm_80 code is what an sm_86 or sm_89 GPU runs); else none, and sm_90's rows stand in.
inline const SassArchTable* sass_table(int cc, const SassArchs& archs = kSassArchs) {
  const SassArchTable* best = nullptr;
  for (int i = 0; i < archs.count; ++i) {
    const SassArchTable& t = archs.tables[i];
    if (t.cc == cc) return &t;
    if (t.cc / 10 == cc / 10 && t.cc < cc && (!best || t.cc > best->cc)) best = &t;
  }
  return best;
}
// Its architecture (90: sm_90's rows).
inline int sass_cc(int cc, const SassArchs& archs = kSassArchs) {
  const SassArchTable* t = sass_table(cc, archs);
  return t ? t->cc : 90;
}

// The problem's mask and score mods as the SASS data's rows name them (harness/problem.h's
// causal_name, mask_name, mod_name and score_name; null for none).
struct SassPath {
  const char* causal = nullptr;
  const char* mask = nullptr;
  const char* mod = nullptr;
  const char* score = nullptr;
};

// Rows that come before sm_90's (find_sass's `first`): a kernel's rows as an earlier commit
// compiled it, to model what a GPU measured before the kernel changed (tests/counters/
// h200_sass_as_run.inc).
struct SassRows {
  const SassKernel* rows = nullptr;
  int count = 0;
};

// The kernel's data for a GPU of compute capability cc, or nullptr for a kernel the data does not
// know (a test's own kernel; chapter 09's off sm_90): from sass_table(cc)'s rows where the build has
// them, else sm_90's: from `first` when it holds the kernel, else from the build's own rows
// (kSassLive) when they do, all its rows from there, else sass_sm90.inc's. A kernel
// whose path depends on the problem's mask or score mods has a row for each kind besides
// (tools/sass_issue.py): "<kernel> causal=<kind>", "<kernel> mask=<kind>", "<kernel>
// mask_mod=<kind>", "<kernel> score_mod=<mods>", and a mask's kind with score mods where both matter.
// The row naming the most of the path's kinds is taken (on a tie, the one naming the earlier), else
// the kernel's.
inline const SassKernel* find_sass(const std::string& kernel, const SassPath& path = {}, int cc = 90,
                                   const SassArchs& archs = kSassArchs, const SassRows& first = {}) {
  const std::pair<const char*, const char*> parts[] = {
      {" causal=", path.causal}, {" mask=", path.mask}, {" mask_mod=", path.mod}, {" score_mod=", path.score}};
  constexpr int n = sizeof parts / sizeof parts[0];
  const SassKernel* table = kSassSm90;
  int rows = sizeof kSassSm90 / sizeof kSassSm90[0];
  if (const SassArchTable* t = sass_table(cc, archs)) {
    table = t->rows, rows = t->count;
  } else {
    for (int i = 0; i < kSassLive.count; ++i)
      if (kernel == kSassLive.rows[i].name) table = kSassLive.rows, rows = kSassLive.count;
    for (int i = 0; i < first.count; ++i)
      if (kernel == first.rows[i].name) table = first.rows, rows = first.count;
  }
  for (int named = n; named >= 0; --named)
    for (int keep = (1 << n) - 1; keep >= 0; --keep) {  // from the subsets naming the earlier parts
      if (__builtin_popcount(keep) != named) continue;
      std::string name = kernel;
      bool given = true;
      for (int i = 0; i < n && given; ++i)
        if (keep >> (n - 1 - i) & 1) given = parts[i].second != nullptr, name += std::string(parts[i].first) + (given ? parts[i].second : "");
      if (!given) continue;
      for (int i = 0; i < rows; ++i)
        if (name == table[i].name) return &table[i];
    }
  return nullptr;
}

// What the emulator counted of each kind (every request a cp.async once, on its global side).
inline void seen_instructions(const simt::Counters& c, double (&out)[kSeenKinds]) {
  out[kSeenCpAsync] = c.global[simt::kCpAsyncSource].requests;
  out[kSeenLd] = c.global[simt::kGlobalLoad].requests;
  out[kSeenSt] = c.global[simt::kGlobalStore].requests;
  out[kSeenAtom] = c.global[simt::kGlobalAtomic].requests + c.shared[simt::kSharedAtomic].requests;
  out[kSeenLdmatrix] = 0;
  for (int k = simt::kLdmatrixX1; k <= simt::kLdmatrixX4Trans; ++k) out[kSeenLdmatrix] += c.shared[k].requests;
  out[kSeenLds] = c.shared[simt::kSharedLoad32].requests + c.shared[simt::kSharedLoad64].requests +
                  c.shared[simt::kSharedLoad128].requests;
  out[kSeenSts] = c.shared[simt::kSharedStore32].requests + c.shared[simt::kSharedStore64].requests +
                  c.shared[simt::kSharedStore128].requests;
  out[kSeenMma] = c.mma;
  out[kSeenBar] = c.barriers;
  out[kSeenShfl] = c.shuffles + c.votes;
  out[kSeenWgmma] = c.wgmma;
  out[kSeenTma] = c.global[simt::kTmaLoad].requests;
}

// How many times a part runs to account for what is left (kind by kind), at most: the fewest any
// kind it contains allows; 0 for a part without a seen instruction.
inline double trips(const double (&left)[kSeenKinds], const SassPart& part) {
  double n = -1;
  for (int k = 0; k < kSeenKinds; ++k)
    if (part.seen[k] > 0) n = n < 0 ? left[k] / part.seen[k] : std::min(n, left[k] / part.seen[k]);
  return std::max(0.0, n);
}

inline constexpr bool kSeenExplicit[kSeenKinds] = {true, false, false, false, true, false, false, true, false, true, true, true};

// Whether a part accesses global memory (cp.async, loads, stores, atomics, TMA).
inline bool seen_global(const SassPart& part) {
  return part.seen[kSeenCpAsync] > 0 || part.seen[kSeenLd] > 0 || part.seen[kSeenSt] > 0 || part.seen[kSeenAtom] > 0 ||
         part.seen[kSeenTma] > 0;
}

inline void take(double (&left)[kSeenKinds], double trips, const SassPart& part) {
  for (int i = 0; i < kSeenKinds; ++i) left[i] = std::max(0.0, left[i] - trips * part.seen[i]);
}

// How many times each part runs in a launch (see above): fixed once per warp, a producer's once per
// block, the consumers' once per consumer warp, the tile part per tile, each other loop its trips,
// the loops around the tile loop theirs.
struct PartTrips {
  double fixed = 0, tile = 0, outer = 0, producer = 0, consumers = 0;
  double inner[kSassLoops] = {};
};

// The trips of the other loops, loop by loop (see above); takes their counts from `left`.
inline void loop_trips(double (&left)[kSeenKinds], const SassPart (&loops)[kSassLoops], double (&out)[kSassLoops]) {
  bool solved[kSassLoops] = {};
  for (bool progress = true; progress;) {
    progress = false;
    double n[kSassLoops];
    for (int j = 0; j < kSassLoops; ++j) {
      n[j] = -1;
      if (solved[j]) continue;
      for (int k = 0; k < kSeenKinds; ++k) {
        bool own = kSeenExplicit[k] && loops[j].seen[k] > 0;
        for (int o = 0; own && o < kSassLoops; ++o) own = o == j || solved[o] || loops[o].seen[k] == 0;
        if (own) n[j] = n[j] < 0 ? left[k] / loops[j].seen[k] : std::min(n[j], left[k] / loops[j].seen[k]);
      }
    }
    for (int j = 0; j < kSassLoops; ++j)  // explicit kinds of their own: no two of these share one
      if (n[j] >= 0) {
        solved[j] = progress = true;
        out[j] = n[j];
        take(left, n[j], loops[j]);
      }
  }
  // The loops left run as one part, by the kind that allows the fewest trips. The loops that hold
  // none of the kinds that used up, and some global access, then run on together by what is left,
  // and so on: a loop of loads alone beside one that also stores (chapter 08's combine: its loop
  // over the splits beside its loop over the columns, which stores) runs as often as its loads say
  // once the stores are spent, not as often as the stores say. Only a global access carries a loop
  // on: nvcc merges shared-memory accesses the emulator counts apart (four scalar reads of a row
  // where it issues one LDS.128), and a loop counted by those alone would run up to four times too
  // often; a global pointer's alignment it does not know, so its scalar loads stay one for one.
  for (int j = 0; j < kSassLoops; ++j)
    if (!solved[j]) out[j] = 0;
  for (bool first = true;; first = false) {
    SassPart rest{};
    for (int j = 0; j < kSassLoops; ++j) {
      if (solved[j]) continue;
      if (!first && !seen_global(loops[j])) {
        solved[j] = true;
        continue;
      }
      for (int k = 0; k < kSeenKinds; ++k) rest.seen[k] += loops[j].seen[k];
    }
    const double n = trips(left, rest);
    if (n > 0) {
      take(left, n, rest);
      for (int j = 0; j < kSassLoops; ++j)
        if (!solved[j]) out[j] += n;
    }
    // Done: the loops that hold a kind now spent (less than one request left), and after the first
    // round those that hold no seen kind at all (nothing says they run on).
    bool progress = false;
    for (int j = 0; j < kSassLoops; ++j) {
      if (solved[j]) continue;
      bool any = false, done = false;
      for (int k = 0; k < kSeenKinds; ++k)
        if (loops[j].seen[k] > 0) any = true, done = done || left[k] < 0.5;
      if (done || (first && !any)) solved[j] = progress = true;
    }
    if (!progress) break;
  }
}

inline PartTrips part_trips(const simt::Counters& c, const SassKernel& k) {
  PartTrips t;
  t.fixed = c.blocks * std::ceil(c.threads_per_block / 32);  // warps
  if (k.producer.instructions > 0 || k.consumers.instructions > 0) {
    // Each block keeps one consumer warp at least (as model.h's groups do).
    const double producers = std::min(c.producer_warps, t.fixed - c.blocks);
    t.producer = producers > 0 ? c.blocks : 0;
    t.consumers = t.fixed - producers;
  }
  double left[kSeenKinds];
  seen_instructions(c, left);
  take(left, t.fixed, k.fixed);
  take(left, t.producer, k.producer);
  take(left, t.consumers, k.consumers);
  // A persistent launch (Counters::work_items): its consumer warps go round the loop around the tile
  // loop once per work item, a count known, not solved for, and taken first: its first and last
  // tile's products (a warpgroup's consumers part where a block runs one item) are then not the
  // tile loop's. Its barriers apart, as below: its blocks on every branch hold more than a warp passes.
  SassPart outer = k.outer;
  outer.seen[kSeenBar] = 0;
  const bool persistent = c.items_per_block() > 1 && k.outer.instructions > 0;
  if (persistent) {
    t.outer = c.work_items * (t.consumers > 0 ? t.consumers / c.blocks : std::ceil(c.threads_per_block / 32));
    take(left, t.outer, outer);
  }
  t.tile = k.tile.seen[kSeenBar] > 0 ? left[kSeenBar] / k.tile.seen[kSeenBar] : trips(left, k.tile);
  if (k.tile.seen[kSeenBar] > 0 && k.tile.seen[kSeenWgmma] > 0)
    t.tile = std::min(t.tile, left[kSeenWgmma] / k.tile.seen[kSeenWgmma]);
  take(left, t.tile, k.tile);
  loop_trips(left, k.inner, t.inner);
  // A barrier of a loop around the tile loop was counted as the tiles' (a fraction of a tile too
  // many per trip of it): its other kinds give its trips.
  if (!persistent) t.outer = trips(left, outer);
  return t;
}

// A field of the parts (instructions, cycles) summed over a launch's trips of them; without the
// producer's parts (its start and branch, its loops) when `producer` is false.
inline double over_launch(const SassKernel& k, const PartTrips& t, double SassPart::*field, bool producer = true) {
  double sum = t.fixed * k.fixed.*field + t.tile * k.tile.*field + t.outer * k.outer.*field + t.consumers * k.consumers.*field;
  if (producer) sum += t.producer * k.producer.*field;
  for (int j = 0; j < kSassLoops; ++j)
    if (producer || !(k.producer_loops >> j & 1)) sum += t.inner[j] * k.inner[j].*field;
  return sum;
}

// The warp instructions a launch issues (see above).
inline double issued_instructions(const simt::Counters& c, const SassKernel& k) {
  return over_launch(k, part_trips(c, k), &SassPart::instructions);
}

// Of them, the FP32 and the IMAD instructions (the FMA pipes' work: model.h).
inline std::pair<double, double> fma_instructions(const simt::Counters& c, const SassKernel& k) {
  const PartTrips t = part_trips(c, k);
  return {over_launch(k, t, &SassPart::fp32), over_launch(k, t, &SassPart::imad)};
}

// The global-load latencies the parts' cycles were counted with (tools/sass_issue.py's L2_LATENCY
// and DRAM_LATENCY, the H100 SXM5's of gpus.h; tests/test_sass_issue.py holds them equal).
inline constexpr double kSassL2Latency = 272, kSassDramLatency = 484;

// The cycles its warps take, summed, each warp as if it ran alone on its scheduler (SassPart::cycles),
// when a global load waits `latency` cycles (a GPU's L2-hit and DRAM latencies, mixed in the share of
// the loads each serves: model.h). The parts hold their cycles at two latencies (L2's and DRAM's
// above); a part's cycles grow with the latency by as many waits as its longest chain holds, which
// those two points give, so another latency is taken on the line through them: outside the two a
// lower bound, between them an upper one (a longer latency can only put more waits on the longest
// chain). A warp-specialized kernel's producer is left out: it waits for its consumers, not they for
// it (model.h: it is no group).
inline double warp_cycles(const simt::Counters& c, const SassKernel& k, double latency = kSassL2Latency) {
  const PartTrips t = part_trips(c, k);
  const double l2 = over_launch(k, t, &SassPart::cycles, false);
  const double per_cycle = (over_launch(k, t, &SassPart::cycles_dram, false) - l2) / (kSassDramLatency - kSassL2Latency);
  return std::max(0.0, l2 + (latency - kSassL2Latency) * per_cycle);
}

}  // namespace attn
