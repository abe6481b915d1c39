// sass.h: what the compiler made of each kernel for sm_90, as the model needs it: the registers a
// thread holds (occupancy) and the instructions a warp issues beside those the emulator sees.
//
// The emulator counts the instructions that move data or synchronise (simt/counters.h): global
// and shared-memory requests, mma.sync, barriers, shuffles, votes. The FP32, integer, conversion
// and branch instructions around them take issue slots too: 4 per clock per SM, one per scheduler.
// tools/sass_issue.py counts them in each kernel's sm_90 SASS by control flow and writes
// sass_sm90.inc: three parts, each its instructions per warp and the seen instructions of each
// kind in them. A launch's instructions issued are then
//
//   warps x fixed           the blocks outside every loop, once per warp
//   + tiles x tile          the tile loop: tiles = the emulator's barriers beyond the fixed part's,
//                           per barrier of an iteration (it counts every warp's); without one, the
//                           fewest that any kind seen in an iteration allows
//   + trips x inner         the other loops: the fewest trips that any kind seen in them allows,
//                           from what the emulator counted beyond the first two parts
//   + trips x outer         the loops around the tile loop, their own blocks: the same, from what
//                           is left beyond the first three (barriers apart: the tiles took them)
//
// "The fewest": the CPU compiler and nvcc may split or merge an access differently (a float4 read
// as one load or four), which inflates one kind's count; the kind that allows the fewest trips is
// the one least inflated. notes/performance_model.md explains it; CTest sass_data_fresh fails when
// a kernel's source changed since sass_sm90.inc was written.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "simt/counters.h"

namespace attn {

// The kinds of instruction both the emulator and the SASS see, in sass_issue.py's KINDS order.
enum SeenKind { kSeenCpAsync, kSeenLd, kSeenSt, kSeenAtom, kSeenLdmatrix, kSeenLds, kSeenSts, kSeenMma, kSeenBar,
                kSeenShfl, kSeenKinds };

struct SassPart {
  double instructions;
  double seen[kSeenKinds];
};

struct SassKernel {
  const char* name;  // demangled, as the emulator names a launch's kernel
  int registers;     // per thread (ptxas)
  SassPart fixed, tile, inner;  // per warp: outside the loops; one tile iteration; one trip of the other loops
  SassPart outer;               // one trip of the loops around the tile loop (their own blocks)
};

inline constexpr SassKernel kSassSm90[] = {
#include "sass_sm90.inc"
};

// The kernel's data, or nullptr for a kernel the file does not know (a test's own kernel).
inline const SassKernel* find_sass(const std::string& kernel) {
  for (const SassKernel& k : kSassSm90)
    if (kernel == k.name) return &k;
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
}

// How many times a part runs to account for what is left (kind by kind), at most: the fewest any
// kind it contains allows; 0 for a part without a seen instruction.
inline double trips(const double (&left)[kSeenKinds], const SassPart& part) {
  double n = -1;
  for (int k = 0; k < kSeenKinds; ++k)
    if (part.seen[k] > 0) n = n < 0 ? left[k] / part.seen[k] : std::min(n, left[k] / part.seen[k]);
  return std::max(0.0, n);
}

// The warp instructions a launch issues (see above).
inline double issued_instructions(const simt::Counters& c, const SassKernel& k) {
  const double warps = c.blocks * std::ceil(c.threads_per_block / 32);
  double left[kSeenKinds];
  seen_instructions(c, left);
  for (int i = 0; i < kSeenKinds; ++i) left[i] = std::max(0.0, left[i] - warps * k.fixed.seen[i]);
  const double tiles = k.tile.seen[kSeenBar] > 0 ? left[kSeenBar] / k.tile.seen[kSeenBar] : trips(left, k.tile);
  for (int i = 0; i < kSeenKinds; ++i) left[i] = std::max(0.0, left[i] - tiles * k.tile.seen[i]);
  const double inner = trips(left, k.inner);
  for (int i = 0; i < kSeenKinds; ++i) left[i] = std::max(0.0, left[i] - inner * k.inner.seen[i]);
  // A barrier of a loop around the tile loop was counted as the tiles' (a fraction of a tile too
  // many per trip of it): its other kinds give its trips.
  SassPart outer = k.outer;
  outer.seen[kSeenBar] = 0;
  return warps * k.fixed.instructions + tiles * k.tile.instructions + inner * k.inner.instructions +
         trips(left, outer) * k.outer.instructions;
}

}  // namespace attn
