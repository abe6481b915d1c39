// simt/counters.h: what a GPU profiler counts, counted by the emulator.
//
// A cpu-backend build configured with -DFLASHSTEPS_COUNTERS=ON compiles every kernel with the
// compiler's ThreadSanitizer instrumentation (only the instrumentation: no sanitizer runtime is
// linked). It turns each load and store of a kernel into a call that the emulator defines: the
// emulator sees every access of every GPU thread, with the instruction that made it. Per warp, it
// groups the lanes' executions of one instruction into the request a GPU would issue and counts
// what Nsight Compute counts: 32-byte sectors per global request, shared-memory wavefronts and
// bank conflicts, the bytes that must come from DRAM, mma.sync and wgmma, TMA boxes, exponentials,
// barriers, shuffles.
// See notes/emulator.md ("Counters") for the rules and notes/performance_model.md for what the
// counts become.
//
// Counting is off until start() is called, and then applies to the launches that follow.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace simt {

// Global-memory requests of one kind (a kind of instruction: ld, st, atom, cp.async source).
struct GlobalOps {
  double requests = 0;  // warp-level executions with at least one lane
  double lanes = 0;     // lanes taking part, summed over requests
  double bytes = 0;     // bytes the lanes asked for
  double sectors = 0;   // distinct 32-byte sectors per request, summed
  double lines = 0;     // distinct 128-byte lines per request, summed (L1 passes)
};

// Shared-memory requests of one kind. A request is served in phases (32 lanes for accesses of up
// to 4 bytes, 16 for 8 bytes, 8 for 16 bytes and for each ldmatrix matrix); a phase takes as many
// wavefronts as the most distinct 4-byte words that one of the 32 banks must deliver.
struct SharedOps {
  double requests = 0;
  double wavefronts = 0;
  double ideal = 0;  // the wavefronts without conflicts: one per phase with a lane in it
  double conflicts() const { return wavefronts - ideal; }
};

// kTmaLoad: one request per TMA box (simt/tma.cuh), its bytes and sectors those of the box's rows
// inside the tensor; it bypasses L1 (no lines).
enum GlobalKind { kGlobalLoad, kGlobalStore, kGlobalAtomic, kCpAsyncSource, kTmaLoad, kGlobalKinds };
enum SharedKind {
  kSharedLoad32, kSharedLoad64, kSharedLoad128,     // up to 4 bytes per lane, 8, 16
  kSharedStore32, kSharedStore64, kSharedStore128,
  kSharedAtomic,
  kLdmatrixX1, kLdmatrixX2, kLdmatrixX4, kLdmatrixX1Trans, kLdmatrixX2Trans, kLdmatrixX4Trans,
  kCpAsyncDestination,  // the 16-byte shared-memory side of each cp.async
  kTmaDestination,      // a TMA box written into shared memory: a wavefront per 128 bytes
  kWgmmaOperands,       // wgmma's reads of A and B from shared memory: a wavefront per 128 bytes
  kSharedKinds
};
inline const char* global_kind_name(int kind) {
  static const char* const names[] = {"ld", "st", "atom", "cp.async src", "tma"};
  return names[kind];
}
inline const char* shared_kind_name(int kind) {
  static const char* const names[] = {"ld 32-bit", "ld 64-bit", "ld 128-bit", "st 32-bit", "st 64-bit",
                                      "st 128-bit", "atom", "ldmatrix.x1", "ldmatrix.x2", "ldmatrix.x4",
                                      "ldmatrix.x1.trans", "ldmatrix.x2.trans", "ldmatrix.x4.trans",
                                      "cp.async dst", "tma dst", "wgmma operands"};
  return names[kind];
}

// Reuse distances (Counters::reread_l1, reread_l2) in buckets of a quarter octave: distance D
// (sectors) falls in bucket 4e + q where D + 1 = 2^e (1 + f), q = floor(4f). The last bucket holds
// every distance from 2^40 sectors (32 TB) on.
inline constexpr int kReuseBuckets = 4 * 40 + 1;
inline int reuse_bucket(unsigned long long distance) {
  const unsigned long long x = distance + 1;
  const int e = 63 - __builtin_clzll(x);
  const int q = e >= 2 ? static_cast<int>((x >> (e - 2)) & 3) : static_cast<int>((x << (2 - e)) & 3);
  return e >= 40 ? kReuseBuckets - 1 : 4 * e + q;
}
// The smallest distance bucket b holds, in sectors.
inline double reuse_distance(int b) { return std::ldexp(1.0 + (b % 4) / 4.0, b / 4) - 1; }

// The counters of one kernel launch, or a sum of launches. Counts that sampling leaves out are
// scaled up by blocks / blocks_counted; the DRAM counts and the operation counts are never
// sampled.
struct Counters {
  double launches = 0;
  double blocks = 0;          // of the grid
  double blocks_counted = 0;  // whose requests were grouped (all, unless sampled)
  // Of the last launch summed in: its threads per block, and the shared memory each block holds,
  // dynamic (the launch's) and static (the kernel's __shared__ arrays).
  double threads_per_block = 0, smem_bytes = 0, smem_static_bytes = 0;
  GlobalOps global[kGlobalKinds];
  SharedOps shared[kSharedKinds];
  // 32-byte sectors read and written by the launch, each counted once however often it is
  // touched: what must cross from DRAM when every launch starts with a cold L2 that holds its
  // whole footprint (a lower bound otherwise).
  double dram_read_sectors = 0, dram_write_sectors = 0;
  // Sectors each block loads, counted once per block: what its SM's L1 must fetch from L2 when
  // the block's loads stay in L1 while it runs (stores and cp.async always go to L2).
  double block_load_sectors = 0;
  // Global sectors a block moves before its first __syncthreads (fill: the loads it starts with)
  // and after its last (drain: the stores it ends with), in blocks with at least one barrier: the
  // traffic that cannot overlap the block's own loop (model.h's fill and drain). A block that loads
  // by TMA (chapter 09) passes its __syncthreads before any load: its fill also holds what its first
  // wgmma waits for, the TMA sectors it had asked for when the mbarrier phases its threads waited
  // for before that wgmma completed (Q and the first K/V tile: the TMA unit serves boxes in order;
  // a block that issues no wgmma, everything it waited for). The model takes such a block's drain
  // from its stores, not from drain_sectors (which counts its loads after the barrier too).
  double fill_sectors = 0, drain_sectors = 0;
  // A persistent launch's work items, which its blocks walk between them (the harness's, from the
  // kernel's Variant: model.h's drain); 0: a block per item.
  double work_items = 0;
  // Of the last launch summed in: its grid.
  double grid_x = 0, grid_y = 0, grid_z = 0;
  // Sectors read by more than one block, by the highest dimension of the grid (x, y, z) along which
  // their readers differ, and those reads: per sector, the blocks from its lowest reader to its
  // highest along that dimension. Where the readers of a sector stand in the order the GPU starts
  // blocks says whether L2 still holds it for the next one (model.h's dram_rereads). Approximate
  // where readers skip blocks in between (a block mask) or differ along two dimensions (only the
  // highest counts); and not a polynomial in a sampled problem's row groups where its smallest run
  // has one block along the sharing dimension (chapter 05's Q tiles in x at Br = 256, m = 1), which
  // costs nothing there: readers side by side in x are resident together and read nothing again.
  double shared_sectors[3] = {}, shared_reads[3] = {};
  // A block's loads of a sector it had loaded before, by their reuse distance: the distinct global
  // sectors the block touched (loaded, stored, copied) in between (Mattson et al.'s stack
  // distance), in reuse_bucket's buckets (above). Whether the GPU's caches still hold the sector
  // depends on what the blocks resident beside it touch meanwhile: model.h decides. reread_l1: by
  // ld (through L1); reread_l2: by cp.async and TMA (to L2). Chapter 04's block per head reads its
  // K/V once per Q tile: a re-read at a distance of the head's K/V.
  double reread_l1[kReuseBuckets] = {}, reread_l2[kReuseBuckets] = {};
  double mma = 0, mma_flop = 0;  // mma.sync executions (warp-level) and their floating-point operations
  // wgmma: each warp's part of a warpgroup's instruction (a warp issues it: 4 per wgmma), and the
  // floating-point operations of those parts (2 x 16 rows x N x 16 each).
  double wgmma = 0, wgmma_flop = 0;
  double mufu = 0;               // exponentials, logarithms, sines... per lane (the special-function unit)
  double barriers = 0;           // __syncthreads and named barriers, per warp they release
  // Warps that gave registers back (setmaxnreg.dec): a warp-specialized kernel's producers, which
  // issue copies and compute nothing (chapter 09's first warpgroup).
  double producer_warps = 0;
  // A ring of shared-memory stages that TMA fills and consumers give back (chapter 09's steps c
  // onwards; simt/counters.cpp's count_ring): its stages (mbarriers that carried TMA bytes in more
  // than one phase), the tiles a consumer holds beyond the one it works on when it gives one back
  // (the lag: 1 when it frees tile j - 1 while on tile j) and a stage's bytes, the most of any
  // block; the tiles that went through it, and those of them copied into a stage an earlier tile
  // gave back.
  double ring_stages = 0, ring_lag = 0, ring_stage_bytes = 0, ring_tiles = 0, ring_refills = 0;
  double shuffles = 0, votes = 0, syncwarps = 0;  // warp-level

  Counters& operator+=(const Counters& o) {
    launches += o.launches, blocks += o.blocks, blocks_counted += o.blocks_counted;
    threads_per_block = o.threads_per_block, smem_bytes = o.smem_bytes, smem_static_bytes = o.smem_static_bytes;
    for (int k = 0; k < kGlobalKinds; ++k) {
      GlobalOps& g = global[k];
      const GlobalOps& h = o.global[k];
      g.requests += h.requests, g.lanes += h.lanes, g.bytes += h.bytes, g.sectors += h.sectors, g.lines += h.lines;
    }
    for (int k = 0; k < kSharedKinds; ++k)
      shared[k].requests += o.shared[k].requests, shared[k].wavefronts += o.shared[k].wavefronts,
          shared[k].ideal += o.shared[k].ideal;
    dram_read_sectors += o.dram_read_sectors, dram_write_sectors += o.dram_write_sectors;
    block_load_sectors += o.block_load_sectors;
    fill_sectors += o.fill_sectors, drain_sectors += o.drain_sectors, work_items += o.work_items;
    grid_x = o.grid_x, grid_y = o.grid_y, grid_z = o.grid_z;
    for (int d = 0; d < 3; ++d) shared_sectors[d] += o.shared_sectors[d], shared_reads[d] += o.shared_reads[d];
    for (int b = 0; b < kReuseBuckets; ++b) reread_l1[b] += o.reread_l1[b], reread_l2[b] += o.reread_l2[b];
    mma += o.mma, mma_flop += o.mma_flop, mufu += o.mufu, barriers += o.barriers;
    wgmma += o.wgmma, wgmma_flop += o.wgmma_flop, producer_warps += o.producer_warps;
    ring_stages = std::max(ring_stages, o.ring_stages), ring_lag = std::max(ring_lag, o.ring_lag);
    ring_stage_bytes = std::max(ring_stage_bytes, o.ring_stage_bytes);
    ring_tiles += o.ring_tiles, ring_refills += o.ring_refills;
    shuffles += o.shuffles, votes += o.votes, syncwarps += o.syncwarps;
    return *this;
  }
  // Every count of work times f (the emulated part of a problem standing for all of it): not the
  // launches, the block's shape, the grid, nor blocks_counted, which say what the emulator ran, nor
  // work_items, the whole problem's.
  Counters& operator*=(double f) {
    blocks *= f;
    for (GlobalOps& g : global) g.requests *= f, g.lanes *= f, g.bytes *= f, g.sectors *= f, g.lines *= f;
    for (SharedOps& s : shared) s.requests *= f, s.wavefronts *= f, s.ideal *= f;
    dram_read_sectors *= f, dram_write_sectors *= f, block_load_sectors *= f;
    fill_sectors *= f, drain_sectors *= f;
    for (int d = 0; d < 3; ++d) shared_sectors[d] *= f, shared_reads[d] *= f;
    for (int b = 0; b < kReuseBuckets; ++b) reread_l1[b] *= f, reread_l2[b] *= f;
    mma *= f, mma_flop *= f, mufu *= f, barriers *= f, shuffles *= f, votes *= f, syncwarps *= f;
    wgmma *= f, wgmma_flop *= f, producer_warps *= f;
    ring_tiles *= f, ring_refills *= f;
    return *this;
  }
  // The work items a block walks on average: more than 1 in a persistent launch (work_items).
  double items_per_block() const { return work_items > blocks && blocks > 0 ? work_items / blocks : 1; }
  // Totals over the kinds.
  double global_requests() const { return sum(&GlobalOps::requests); }
  double global_sectors() const { return sum(&GlobalOps::sectors); }
  double global_lines() const { return sum(&GlobalOps::lines); }
  double shared_requests() const { return sum(&SharedOps::requests); }
  double shared_wavefronts() const { return sum(&SharedOps::wavefronts); }
  double shared_conflicts() const { return shared_wavefronts() - sum(&SharedOps::ideal); }

 private:
  double sum(double GlobalOps::*f) const {
    double s = 0;
    for (const GlobalOps& g : global) s += g.*f;
    return s;
  }
  double sum(double SharedOps::*f) const {
    double s = 0;
    for (const SharedOps& g : shared) s += g.*f;
    return s;
  }
};

// A field added to Counters must be added to += and *= too.
static_assert(sizeof(Counters) == (109 + 2 * kReuseBuckets) * sizeof(double), "Counters changed: update operator+= and operator*=");

// The DRAM sectors of one cudaMalloc allocation that a launch touched, and its part of the launch's
// Counters::shared_sectors and shared_reads (a sampled profile re-counts the sharing of memory every
// head reads alike: model/sampling.h).
struct AllocationSectors {
  const void* base;
  double bytes, read_sectors, written_sectors;
  double shared_sectors[3] = {}, shared_reads[3] = {};
};

// One kernel launch's counters, with the kernel's name (from its file's symbols; "" when stripped) and the
// allocations it read or wrote.
struct LaunchCounters {
  std::string kernel;
  Counters counters;
  std::vector<AllocationSectors> allocations;
  // Each block's work, by its linear index (x fastest: the order the GPU starts them in): the
  // operations it did, per warp (its threads' loads, stores, copies and exponentials over 32, its
  // warps' products, barriers and shuffles), so a block's share of the launch's tiles. Empty when no block
  // ran (a dry run). The model's tail (model/model.h, busy).
  std::vector<float> block_work;
};

namespace counters {

// Whether this build counts: a cpu-backend build configured with -DFLASHSTEPS_COUNTERS=ON. The
// functions below exist in such a build only.
inline constexpr bool available() { return SIMT_COUNTERS; }

struct Options {
  // Group the requests of every k-th block only (blocks 0, k, 2k, ...) and scale those counts
  // up; the DRAM and operation counts still cover every block.
  int sample_blocks = 1;
  // Record each launch (its kernel, grid, block and shared memory) and run none of its blocks:
  // the shape of a problem's launches at no cost, outputs unwritten.
  bool dry_run = false;
};
void start(const Options& o = {});  // count the launches that follow
void stop();
bool counting();
// The launches counted since the last take (or start), in order; forgets them.
std::vector<LaunchCounters> take();

}  // namespace counters
}  // namespace simt
