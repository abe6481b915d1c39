// model.h: the time a GPU would take for a kernel launch, modelled from what the emulator counted
// (simt/counters.h) on the GPU of gpu.h. This is the whole model of `flashsteps profile`;
// notes/performance_model.md explains it with a worked example.
//
// A launch takes at least as long as its busiest unit needs for its work:
//
//   t = max( DRAM bytes        / DRAM bandwidth (what a copy reaches of it: gpus.h's [copy]),
//            L2 bytes          / L2 bandwidth,
//            L1 wavefronts     / (1 per clock per SM),      shared-memory and global-load passes
//            instructions      / (4 per clock per SM),      every warp instruction issued (sass.h)
//            FMA pipes' work   / their rate (below),
//            MUFU operations   / (16 per clock per SM),     exponentials and friends
//            mma.sync FLOP     / mma.sync peak )
//       / busy  +  launch
//
// busy: the share of the SMs' time the grid keeps working. The GPU starts the blocks in launch
// order (x fastest), each on an SM that has finished the work it was given: the SM with the least
// (greedy list scheduling); the launch lasts as long as the SM given the most, and busy = the
// blocks' work / (SMs x that most). A block's work is what the emulator counted it doing
// (LaunchCounters::block_work: its operations, per warp). Blocks alike give busy = blocks /
// (SMs x ceil(blocks / SMs)): a grid of 8 blocks keeps 8 of 132 SMs working (busy 0.06); one of 133
// blocks runs 2 on one SM while 131 run 1 (busy 0.50), the tail of wave quantization. Blocks that
// differ (is_causal's Q tiles skip different numbers of K/V tiles) leave a tail of the blocks
// started last: short when they are the lightest (chapter 06's heaviest-first grid), long when
// the heaviest are started last. Without the blocks' work (none counted), blocks alike. How many
// blocks an SM holds at once (occupancy: threads, registers and shared memory) does not change a
// throughput: it gives the waves, printed, and the warps an SM has to issue from. A warp lives in
// one of the SM's 4 schedulers, each with its own issue slot, tensor core and MUFU, so an SM
// holding fewer than 4 warps leaves some of them idle: those terms (and the FMA pipes', below) are
// divided by min(1, warps resident / 4) as well.
//
// The FMA pipes take the FP32 adds, multiplies and multiply-adds and the integer multiply-adds
// (IMAD, IDP: sass.h counts both). On an sm_75 or sm_80 GPU one pipe of 16 lanes per scheduler takes
// all of them; from sm_86 on, a second takes FP32 alone. With F FP32 and I IMAD warp instructions,
// an SM needs max((F + I) x 32 / fp32_per_clk, I x 32 / imad_per_clk) clocks (gpus.h's rates): half
// the issue slots on an A100 or a T4, all of them from sm_86 on, where only an IMAD-heavy kernel
// finds the term above its issue term.
//
// The instructions issued come from the compiler's sm_90 SASS (sm_90a for chapter 09's kernels: wgmma,
// TMA, setmaxnreg), counted by control flow and weighted
// by what the emulator counted (sass.h); a kernel the SASS data does not know has no issue term, and
// its occupancy ignores registers.
//
// Latency. The SASS also says how long one warp alone takes to issue its instructions: the stall
// the compiler encoded after each one and the waits for the results that come back later (shared
// memory, global loads, MUFU, shuffles; sass.h's SassPart::cycles). A global load waits for L2's
// hit latency or DRAM's, in the proportion of the bytes the launch reads from DRAM, with the reads
// that hit those misses in flight (dram_in_flight_hits), to those its load requests ask for; each
// the GPU's own (gpus.h's [lat]: cycles, at its clock). A scheduler
// hides one warp's waits behind another's work only if the other is somewhere else in its loop.
// Warps that meet at a __syncthreads every tile are not: they reach the same phase together (the
// products, then the softmax) and queue behind one another for the same pipe, so one block's warps
// on a scheduler take the sum of their chains, but for their global loads' waits: they ask for
// their loads together and wait for them together, so the part of a chain that grows with the load
// latency (warp_cycles at the latency less at none) counts once among them, not once per warp.
// Blocks are independent of each other, and so are the warps of a kernel whose loops have no barrier.
//
// groups: when the kernel synchronises its block inside its loops (__syncthreads, SassKernel::
// lockstep), each block the SM holds at once is one group on each scheduler it has warps on; else
// every warp the SM holds is one, but a producer's (a warp that gave its registers back with
// setmaxnreg.dec: it only issues copies and hides no other warp's waits). Chapter 09's named
// barriers pass turns between two warpgroups rather than gather the block: not lockstep. With one
// group per scheduler, the time is the sum of its warps' chains (a lockstep block's load waits
// counted once among them, above). With G groups on a scheduler, a group waits for the others
// only where they hold what it needs: the issue slot (one cycle per instruction but an HMMA) and
// the tensor pipe (or the MUFUs, the busier), `held`. While one group waits out its latencies, the
// others use those pipes, so G groups go through G chains in
//
//   latency = (chains + (G - 1) x held) / G          chains: one group's on a scheduler, as just said
//
// which is the chains' time at G = 1 and tends to the pipes' at large G. It is a floor like the
// other terms, not added to them.
//
// Fill and drain. A block's chain starts with the loads its loop needs (Q and the first K/V tiles)
// and ends with stores no loop waits for (O): the sectors it moves before its first barrier and
// after its last (Counters::fill_sectors, drain_sectors). Its warps wait meanwhile, and the other
// blocks, of equal work and launched together, are in the same phase on every SM at once: those
// sectors cross L2 (and DRAM, for the loads, in the launch's share) at the whole GPU's rates, a
// wait that joins the chains. Groups on a scheduler hide it as any other wait (above): not at all
// with one block per SM; with several, as if their phases drifted apart (the optimistic end).
// Only kernels whose loops synchronise the block have such phases: a kernel whose loops have no
// barrier (chapter 08's key loops) streams its loads before its one barrier, overlapped as it goes.
// Blocks of unequal work (chapter 06's causal tiles) drift apart and hide more of it. A block that
// loads by TMA (chapter 09's steps c onwards) has phases too, though no barrier gathers it in its
// loop: its first products wait for Q and the first K/V tile (the TMA unit serves boxes in the
// order asked: Counters::fill_sectors), and it ends with O's stores. A warp-specialized block's two
// consumer groups on a scheduler wait for its fill and drain at once (no other block on the SM has
// work for them): a wait of each group, not one they share.
//
// The ring. A block that copies its K/V tiles by TMA into a ring of S stages (chapter 09's steps c
// onwards; Counters::ring_stages) refills a stage only once its consumers have given it back, so a
// tile holds its stage from its copy's start to its release: the copy (its latency, longer as the
// bandwidth fills: ring_period), then `lag` tile periods (a consumer that frees tile j - 1 while on
// tile j, steps f and g, holds one), then its consumers' iteration up to the release: the SASS's
// cycles to it (SassPart::release), the last consumer's behind the others' products on the tensor
// pipe (the consumers take turns at it). S stages give a tile every (copy + hold) / (S - lag) at
// most (Little's law); where that is longer than the chains' own period per tile, each refill waits
// the difference (Modelled::ring), on top of the latency; a warp-specialized block adds its
// producer's iteration up to the copy (hold_us). Nothing new is fitted: the latencies and rates are
// gpus.h's. A copy from DRAM takes longer than one from L2, so the ring binds first where the
// grid's order makes K/V cross DRAM (chapter 09's step g heads first at d = 128, as the H200 ran it).
//
// The model is still a max of floors, each unit at its peak. Its DRAM traffic is one read of each
// sector per launch, the re-reads the grid's order forces and a block's re-reads of its own data
// that L2 no longer holds (dram_rereads, below), and it stands for
// sm_90's SASS on every GPU. So it says which kernel should be faster and why, within a factor, not
// the time to 10% (tests/counters/test_published.cpp scores it against published measurements).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "gpus/gpus.h"
#include "sass.h"
#include "simt/counters.h"

namespace attn {

// One launch's modelled time, term by term, in microseconds.
struct Modelled {
  double dram = 0, l2 = 0, l1 = 0, issue = 0, fma = 0, mufu = 0, tensor = 0;  // each at the share of the GPU the grid keeps busy
  double latency = 0;        // the warps' own chains over the groups that hide each other's, and fill and drain (above)
  double fill_drain = 0;     // in it: the blocks' fill and drain traffic (above), before hiding
  double dram_rereads = 0;   // bytes read from DRAM again, by the grid's order and the blocks' own re-reads (dram_rereads), in the DRAM term
  double l2_rereads = 0;     // bytes loaded through L1 again that L2 no longer held either, in the L2 term
  double launch = 0;
  double share = 0;          // busy (above): blocks / (SMs x ceil(blocks / SMs)) for blocks alike
  double blocks_per_sm = 0;  // occupancy, from threads, registers (when known) and dynamic shared memory
  double waves = 0;          // ceil(blocks / (SMs x blocks_per_sm))
  double instructions = 0;   // warp instructions issued (0 when the SASS data does not know the kernel)
  bool sass_known = false;   // the issue term and the registers come from the SASS data
  bool beyond_l2 = false;    // the launch touches more than L2 holds: its re-reads are modelled (dram_rereads), not counted
  double groups = 0;         // per SM: groups of warps that hide each other's waits (above)
  double waits_dram = 0;     // of the chains' load waits, the share at DRAM's latency (crossings and hits in flight)
  double ring = 0;           // in the latency: what the ring's refills wait for their stages beyond the chains (ring_period)
  double total() const { return std::max({dram, l2, l1, issue, fma, mufu, tensor, latency}) + launch; }
  // "DRAM", "L2", "L1", "issue", "FMA", "MUFU", "tensor", "latency", or "launch" when the launch costs more than all of them.
  const char* bound() const {
    const double t = std::max({dram, l2, l1, issue, fma, mufu, tensor, latency});
    if (launch > t) return "launch";
    return t == dram ? "DRAM" : t == l2 ? "L2" : t == l1 ? "L1" : t == issue ? "issue" : t == fma ? "FMA" : t == mufu ? "MUFU" : t == tensor ? "tensor" : "latency";
  }
};

// What the model counts, in the units above, from the emulator's counters.
inline double dram_bytes(const simt::Counters& c) { return 32 * (c.dram_read_sectors + c.dram_write_sectors); }
// Loads cached in the block's L1 (each sector once per block); stores, atomics, cp.async (which
// bypasses L1 with .cg) and TMA boxes all go to L2.
inline double l2_bytes(const simt::Counters& c) {
  return 32 * (c.block_load_sectors + c.global[simt::kGlobalStore].sectors + c.global[simt::kGlobalAtomic].sectors +
               c.global[simt::kCpAsyncSource].sectors + c.global[simt::kTmaLoad].sectors);
}
// The L1/shared-memory data path: every shared-memory wavefront, and one pass per 128-byte line
// a global load or store touches.
inline double l1_wavefronts(const simt::Counters& c) { return c.shared_wavefronts() + c.global_lines(); }

// Blocks one SM holds at once: the fewest that its threads, its blocks, its registers (registers
// per thread; 0: not known) and its shared memory allow.
inline double blocks_per_sm(double threads_per_block, double smem_bytes, int registers, const gpus::Gpu& g) {
  const double by_threads = std::floor(g.max_threads_per_sm / std::max(1.0, threads_per_block));
  const double by_smem = std::floor(g.smem_per_sm_bytes / (smem_bytes + g.smem_reserved_bytes));
  const double by_regs = registers > 0 ? std::floor(g.registers_per_sm / static_cast<double>(gpus::block_registers(
                                                       std::llround(threads_per_block), registers)))
                                       : g.max_blocks_per_sm;
  return std::max(1.0, std::min({by_threads, by_smem, by_regs, static_cast<double>(g.max_blocks_per_sm)}));
}

// Why g would refuse the launch ("" when it fits, as far as the counts say), by gpus.h's rule: its
// threads, its shared memory (dynamic and static), and the registers its warps ask of the register
// file, which only the SASS data knows (k: the kernel's row for g's architecture, or nullptr). The
// emulator refuses a launch by the same rule for the GPU it stands for; this remodels it for another.
inline std::string launch_refusal(const simt::Counters& c, const SassKernel* k, const gpus::Gpu& g) {
  return gpus::refusal(g, {.threads = std::llround(c.threads_per_block),
                           .dynamic_smem = std::llround(c.smem_bytes),
                           .static_smem = std::llround(c.smem_static_bytes),
                           .registers = k ? k->registers : 0})
      .why;
}

// L2's capacity in sectors (gpus.h's l2_mb: an assumption for the H100 and H200).
inline double l2_sectors(const gpus::Gpu& g) { return g.l2_mb * 1e6 / 32; }

// How many of a block's own re-reads (Counters::reread_l1 or reread_l2) a cache of `held` sectors
// has lost: those whose reuse distance D (the distinct sectors the block touched in between) times
// the blocks resident beside it passes `held`. Each of those blocks touches as many of its own
// meanwhile (chapter 04's blocks per head share nothing), and a cache taken as least recently used
// has lost the sector. A bucket counts from its smallest distance (a quarter octave: counters.h's
// reuse_bucket).
inline double rereads_beyond(const double (&reread)[simt::kReuseBuckets], double held, double resident) {
  double n = 0;
  for (int b = 0; b < simt::kReuseBuckets; ++b)
    if (reread[b] > 0 && resident * simt::reuse_distance(b) > held) n += reread[b];
  return n;
}

// DRAM re-reads by the grid's order. A sector several blocks read crosses from DRAM once only if
// L2 still holds it when the next of them asks. The model assumes the GPU starts blocks in the order
// of their linear index (x fastest: what GPUs do in practice, which CUDA does not promise),
// `resident` at a time (SMs x blocks per SM), the next as one ends, and that blocks of equal work
// started together stay in step. So the readers of a sector shared along x (stride 1),
// y (stride grid_x) or z (grid_x x grid_y) come in groups: the readers resident at once, about
// resident / stride of them (at least 1, at most all k), ask for it together and cross DRAM once
// (a hit on a miss in flight waits for that miss); the next group starts max(resident, stride)
// blocks later. Meanwhile the blocks in between read their own data, and a block shares each
// sector it reads with the readers of it in the window: the window's distinct bytes are its blocks
// x what each reads of each kind (unshared; shared along x, y, z) over its sharers in the window,
// at most the launch's footprint. Past L2's capacity the sector is gone (L2 taken as least recently
// used: a sweep longer than the cache hits nothing, a shorter one everything), and each later group
// reads it again. The readers are taken as every block from the lowest to the highest along the
// highest dimension they differ in (Counters::shared_reads), k their mean over the sectors.
// A heads-first grid (chapter 09's step g as the H200 ran it: x = batch x head) puts a head's Q
// tiles grid_x blocks apart: at B = 4, H = 16, N = 4096, d = 128 its 2048 blocks read each head's K/V in groups of
// about 2, and the 64 heads between (134 MB of K/V) pass L2's 50 MB, so K/V cross DRAM about 16
// times: 2.15 GB, where Nsight Compute read 2.22 GB on an H200 (results/nvidia-h200/ncu). A grid
// with the Q tiles in x (chapter 05) keeps every reader of a head's K/V resident at once: once.
// Step g now launches Q tiles first without is_causal, and with it heads first a section at a time
// (x: the heads of a section, z: the sections): the window then holds a section's K/V, 32 MB at
// most, and each crosses once.
// The L2 capacity is gpus.h's (an assumption for the H100 and H200: 50 MB).
// And a block's own re-reads (rereads_beyond, above): chapter 04's block per head reads its K/V
// once per Q tile, at B = 4, H = 16, N = 4096, d = 128 2 MB between two reads of a sector, 128 MB
// for the 64 blocks resident together: past L2, every read again from DRAM (Nsight Compute: 4.4
// GB where each sector once is 0.2 GB). Not counted: re-reads that L2 holds but L1 does not (the
// L2 term takes a block's loads through L1 once each, and those re-reads past L2 again).
// Of the sectors shared along each dimension d (above): k their mean readers, `together` the
// readers that ask for one together, `crossings` how often each crosses DRAM (1, or k / together
// when L2 loses it between groups). A dimension no sector is shared along (its sampled count may be
// below 0) keeps one reader crossing once: it adds no re-read and no hit.
struct SharedReads {
  double k[3] = {}, together[3] = {1, 1, 1}, crossings[3] = {1, 1, 1};
};
inline SharedReads shared_reads(const simt::Counters& c, const gpus::Gpu& g, double resident) {
  const double blocks = std::max(1.0, c.blocks), stride[3] = {1, c.grid_x, c.grid_x * c.grid_y};
  double shared = 0;
  for (double s : c.shared_sectors) shared += s;
  const double unshared = std::max(0.0, c.dram_read_sectors - shared) / blocks;  // sectors per block, read by it alone
  const auto sharers = [&](int d, double window) {  // of a sector shared along d, its readers in a window of blocks
    const double k = c.shared_reads[d] / c.shared_sectors[d];
    return std::clamp(window / std::max(1.0, stride[d]), 1.0, std::max(1.0, k));
  };
  const auto distinct = [&](double window) {  // the sectors a window of blocks in launch order reads
    double per_block = unshared;
    for (int d = 0; d < 3; ++d)
      if (c.shared_sectors[d] > 0) per_block += c.shared_reads[d] / blocks / sharers(d, window);
    return std::min(c.dram_read_sectors, window * per_block);
  };
  const double capacity = l2_sectors(g);
  SharedReads r;
  for (int d = 0; d < 3; ++d) {
    if (c.shared_sectors[d] <= 0) continue;
    r.k[d] = c.shared_reads[d] / c.shared_sectors[d];
    r.together[d] = sharers(d, resident);
    r.crossings[d] = r.k[d] > r.together[d] && distinct(std::max(resident, stride[d])) > capacity ? r.k[d] / r.together[d] : 1;
  }
  return r;
}
inline double dram_rereads(const simt::Counters& c, const SharedReads& r, const gpus::Gpu& g, double resident) {
  double again = 0;
  for (int d = 0; d < 3; ++d) again += c.shared_sectors[d] * (r.crossings[d] - 1);
  const double capacity = l2_sectors(g), beside = std::min(std::max(1.0, c.blocks), resident);
  again += rereads_beyond(c.reread_l1, capacity, beside) + rereads_beyond(c.reread_l2, capacity, beside);
  return 32 * again;
}
inline double dram_rereads(const simt::Counters& c, const gpus::Gpu& g, double resident) {
  return dram_rereads(c, shared_reads(c, g, resident), g, resident);
}

// Reads that hit a miss in flight. The readers of a shared sector that ask for it at once find it
// in L2 only as a miss the first of them started, and wait for DRAM as long as it: a crossing makes
// each of them wait for DRAM, not only the first. Which readers ask at once: the blocks of the
// launch's first wave, which it starts together; a follower that hits L2 sooner than the reader
// ahead catches up with it, so they stay together along their loops. A later block starts when one
// ends on its SM, and the model takes its sharers' starts as spread over a block's life, as it takes
// groups' phases as drifted apart when they hide each other's fill (model(), below): no hits in
// flight beyond the first wave's share of the blocks. Chapter 08's decode_kernel (32 blocks, one
// wave): the 4 query heads' blocks of a KV head wait for DRAM on every key, where one crossing and
// three hits in L2 would wait 484 cycles once and 272 three times.
inline double dram_in_flight_hits(const simt::Counters& c, const SharedReads& r, double resident) {
  double hits = 0;
  for (int d = 0; d < 3; ++d) hits += c.shared_sectors[d] * r.crossings[d] * (r.together[d] - 1);
  return 32 * hits * std::min(1.0, resident / std::max(1.0, c.blocks));
}
inline double dram_in_flight_hits(const simt::Counters& c, const gpus::Gpu& g, double resident) {
  return dram_in_flight_hits(c, shared_reads(c, g, resident), resident);
}

// busy (above): the share of `sms` SMs' time that blocks of these works, started in this order,
// keep busy; 0 when they have no work.
inline double busy(const std::vector<float>& work, int sms) {
  std::priority_queue<double, std::vector<double>, std::greater<>> given;  // each SM's work so far
  for (int i = 0; i < sms; ++i) given.push(0);
  double total = 0, most = 0;
  for (const float w : work) {
    const double at = given.top() + w;
    given.pop(), given.push(at);
    total += w, most = std::max(most, at);
  }
  return most > 0 ? total / (sms * most) : 0;
}

// A ring of stages (Counters::ring_stages): S stages, a tile's stage given back `lag` tiles after
// the consumers start on it and `hold` after their iteration on the tile that gives it back began;
// a copy waits `latency` for its first bytes, and the whole GPU's bandwidth needs `all_sms` for one
// stage of every resident block at once. A tile holds its stage from the copy's start to its release: the copy,
// then lag tile periods, then hold. With S stages a tile comes every P at most when
//
//   S x P >= copy(P) + lag x P + hold,     copy(P) = latency / (1 - all_sms / P)
//
// (Little's law over the stages). The copy's latency grows as the bandwidth fills (the factor
// 1 / (1 - utilisation) of a queue whose server is busy that share of the time; all_sms / P is the
// share: the SMs' copies are spread over the period, not in step). ring_period: the least P, no
// less than the chains' own period, that meets it.
struct RingStage {
  double stages, lag, hold_us, latency_us, all_sms_us;
};
inline double ring_period(const RingStage& r, double period) {
  const auto fits = [&](double p) {
    return p > r.all_sms_us && (r.stages - r.lag) * p >= r.latency_us / (1 - r.all_sms_us / p) + r.hold_us;
  };
  if (r.stages <= r.lag || fits(period)) return period;
  double lo = std::max(period, r.all_sms_us), hi = 2 * lo + r.hold_us + r.latency_us;
  while (!fits(hi)) lo = hi, hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

// c: the counters of one launch; k: its kernel's SASS data (sass.h), or nullptr; work: its blocks'
// (LaunchCounters::block_work, one per block), or nullptr (blocks alike).
// fill_drain = false: without fill and drain (to show what they add).
inline Modelled model(const simt::Counters& c, const gpus::Gpu& g, const SassKernel* k = nullptr, bool fill_drain = true,
                      const std::vector<float>* work = nullptr) {
  Modelled m;
  const double blocks = std::max(1.0, c.blocks), per_sm = std::ceil(blocks / g.sms);
  const double by_work = work && static_cast<double>(work->size()) == c.blocks ? busy(*work, g.sms) : 0;
  m.share = by_work > 0 ? by_work : blocks / (g.sms * per_sm);
  // A persistent launch deals its items to its blocks in turn (chapter 09's step i): the last
  // blocks to finish walk ceil(items / blocks) of them where the average block walks items / blocks
  // (its blocks' work alike otherwise, where no run says it).
  if (by_work <= 0) m.share *= c.items_per_block() / std::ceil(c.items_per_block());
  m.sass_known = k != nullptr;
  m.blocks_per_sm = blocks_per_sm(c.threads_per_block, c.smem_bytes + c.smem_static_bytes, k ? k->registers : 0, g);
  m.waves = std::ceil(blocks / (g.sms * m.blocks_per_sm));
  const double warps = std::min(per_sm, m.blocks_per_sm) * std::ceil(c.threads_per_block / 32);
  const double schedulers = std::min(1.0, warps / g.warp_schedulers);  // of each SM's issue slots, tensor cores and MUFUs
  const double clock = g.clock_ghz * 1e9 * g.sms * m.share;  // SM-clocks per second of the busy SMs
  const double resident = g.sms * m.blocks_per_sm;
  const SharedReads shared = shared_reads(c, g, resident);
  m.dram_rereads = dram_rereads(c, shared, g, resident);
  m.dram = (dram_bytes(c) + m.dram_rereads) / (g.dram_copy_tb_s() * 1e12 * m.share) * 1e6;
  // The loads through L1 that L2 no longer holds (above) surely missed L1 too: through L2 again.
  m.l2_rereads = 32 * rereads_beyond(c.reread_l1, l2_sectors(g), std::min(blocks, resident));
  m.l2 = (l2_bytes(c) + m.l2_rereads) / (g.l2_tb_s * 1e12 * m.share) * 1e6;
  m.l1 = l1_wavefronts(c) / (g.l1_wavefronts_per_clk * clock) * 1e6;
  m.instructions = k ? issued_instructions(c, *k) : 0;
  m.issue = m.instructions / (g.warp_schedulers * clock * schedulers) * 1e6;
  if (k) {
    const auto [fp32, imad] = fma_instructions(c, *k);
    m.fma = std::max((fp32 + imad) * 32 / g.fp32_per_clk, imad * 32 / g.imad_per_clk) / (clock * schedulers) * 1e6;
  }
  m.mufu = c.mufu / (g.mufu_per_clk * clock * schedulers) * 1e6;
  // mma.sync reaches mma_sync_fraction of the tensor cores' peak; wgmma the whole of it.
  m.tensor = c.mma_flop / (g.tensor_tflops * 1e12 * g.mma_sync_fraction * m.share * schedulers) * 1e6 +
             c.wgmma_flop / (g.tensor_tflops * 1e12 * m.share * schedulers) * 1e6;
  // After the pipes' terms: `held` keeps the tensor pipe or the MUFUs busy while a group waits.
  if (k) {
    // A block in lockstep is one group on each scheduler it has warps on.
    const double warps_per_block = std::ceil(c.threads_per_block / 32);
    const bool lockstep = k->lockstep;
    // A producer warp (it gave its registers back) only issues copies: it hides no other warp's waits.
    const double producers = std::min(warps_per_block - 1, c.producer_warps / blocks);
    m.groups = lockstep ? std::min(per_sm, m.blocks_per_sm) * std::min<double>(warps_per_block, g.warp_schedulers)
                        : std::min(per_sm, m.blocks_per_sm) * (warps_per_block - producers);
    const double schedulers_used = std::min<double>(m.groups, g.warp_schedulers);
    const double per_scheduler = std::max(1.0, m.groups / g.warp_schedulers);
    // A global load waits for L2, or for DRAM: the bytes the launch reads from DRAM over the bytes
    // its load requests ask for say how often (its writes keep no load waiting).
    const double loaded = 32 * (c.global[simt::kGlobalLoad].sectors + c.global[simt::kCpAsyncSource].sectors +
                                c.global[simt::kTmaLoad].sectors);
    const double crossed = 32 * c.dram_read_sectors + m.dram_rereads;
    const double from_dram = loaded > 0 ? std::min(1.0, crossed / loaded) : 0;
    // The readers waiting on a crossing with the one that started it (dram_in_flight_hits) wait as long.
    const double waits_dram = loaded > 0 ? std::min(1.0, (crossed + dram_in_flight_hits(c, shared, resident)) / loaded) : 0;
    m.waits_dram = waits_dram;
    const double wait = (1 - waits_dram) * g.l2_latency_clk + waits_dram * g.dram_latency_clk;  // g's own [lat]
    double chains = warp_cycles(c, *k, wait) / (clock * schedulers_used) * 1e6;  // one group per scheduler
    // A lockstep block's warps on a scheduler ask for their loads together and wait for them
    // together: the part of their chains that grows with the load latency counts once among them.
    if (lockstep) {
      const double together = std::max(1.0, warps_per_block / g.warp_schedulers);
      const double load_waits = chains - warp_cycles(c, *k, 0) / (clock * schedulers_used) * 1e6;
      chains -= load_waits * (1 - 1 / together);
    }
    // The issue slots (or, where busier, the FMA pipes: an A100's take 2 clocks per FP32 warp
    // instruction) and the tensor pipe or the MUFUs.
    const double held = std::max((m.instructions - c.mma - c.wgmma) / (g.warp_schedulers * clock * schedulers) * 1e6, m.fma) +
                        std::max(m.tensor, m.mufu);
    // A block that loads by TMA fills with what its first wgmma waits for (Counters::fill_sectors)
    // and drains with its stores (O: none in its loops).
    const bool by_tma = c.global[simt::kTmaLoad].requests > 0;
    // A persistent launch's blocks walk more items than they are (chapter 09's step i): each ends
    // with its last item's stores, the others' run under its next item's copies and products.
    const double drain = by_tma ? c.global[simt::kGlobalStore].sectors / c.items_per_block() : c.drain_sectors;
    if (fill_drain && (lockstep || by_tma)) {
      const double fill_s = 32 * c.fill_sectors * (from_dram / g.dram_copy_tb_s() + (1 - from_dram) / g.l2_tb_s);
      m.fill_drain = (fill_s + 32 * drain / g.l2_tb_s) / (1e12 * m.share) * 1e6;
    }
    // Every group of a block waits for its fill and drain together: a scheduler whose groups come
    // from fewer blocks than they are (a warp-specialized block's two consumers) waits them once
    // per group; a lockstep block is one group per scheduler, so once.
    const double waits = chains + m.fill_drain * std::max(1.0, per_scheduler / std::min(per_sm, m.blocks_per_sm));
    m.latency = (waits + (per_scheduler - 1) * std::min(held, waits)) / per_scheduler;
    // The ring's stages (see above): each refill waits for a stage given back.
    if (c.ring_refills > 0 && c.ring_stages > c.ring_lag) {
      // Per block: its SM holds `beside` at once, their tiles interleaved.
      const double beside = std::min(per_sm, m.blocks_per_sm), tiles_per_sm = c.ring_tiles / (g.sms * m.share);
      const double period = std::max(0.0, m.latency - m.fill_drain) * beside / tiles_per_sm;
      const double consumers = std::max(1.0, (warps_per_block - producers) / 4);  // warpgroups
      const double flop_per_clk = g.tensor_tflops * 1e12 / (g.sms * g.clock_ghz * 1e9);
      const double others = (consumers - 1) * (c.wgmma_flop + c.mma_flop / g.mma_sync_fraction) / c.ring_tiles / consumers / flop_per_clk;
      // The producer's own iteration, from the release it waited for to the copy it asks for.
      double producer_cycles = 0;
      for (int j = 0; j < kSassLoops; ++j)
        if (k->producer_loops >> j & 1) producer_cycles += k->inner[j].cycles;
      const RingStage stage{.stages = c.ring_stages,
                            .lag = c.ring_lag,
                            .hold_us = ((k->tile.release > 0 ? k->tile.release : k->tile.cycles) + others + producer_cycles) /
                                       (g.clock_ghz * 1e3),
                            .latency_us = wait / (g.clock_ghz * 1e3),
                            .all_sms_us = c.ring_stage_bytes * g.sms * m.share * beside *
                                          (from_dram / g.dram_copy_tb_s() + (1 - from_dram) / g.l2_tb_s) / 1e6};
      m.ring = std::max(0.0, ring_period(stage, period) - period) * c.ring_refills / (g.sms * m.share) / beside;
      m.latency += m.ring;
    }
  }
  m.launch = g.launch_us * c.launches;
  m.beyond_l2 = dram_bytes(c) > g.l2_mb * 1e6;
  return m;
}

}  // namespace attn
