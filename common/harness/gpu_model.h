// gpu_model.h: the time a GPU would take for a kernel, modelled from what the emulator counted
// (simt/counters.h). This is the whole model of `flashsteps profile`: change a number, rebuild,
// and see what moves. notes/performance_model.md explains it with a worked example.
//
// A kernel takes at least as long as its busiest unit needs for its work:
//
//   t = max( DRAM bytes        / DRAM bandwidth,
//            L2 bytes          / L2 bandwidth,
//            L1 wavefronts     / (1 per clock per SM),      shared-memory and global-load passes
//            MUFU operations   / (16 per clock per SM),     exponentials and friends
//            mma.sync FLOP     / mma.sync peak )
//       / share  +  launch
//
// where share = min(1, blocks / SMs): a grid of 8 blocks keeps 8 SMs busy, not 132, and gets 8/132
// of every rate (an assumption: one SM alone can pull more than its share of DRAM bandwidth).
// The unit that reaches the max is the kernel's bound. The model is a roofline: every unit at its
// peak, with perfect overlap. It does not count FP32 and integer instructions, latency (a kernel
// with few warps waits instead of streaming), occupancy limits other than the block count, or
// DRAM traffic beyond one read of each sector per launch (a footprint larger than L2 is flagged).
// So it says which kernel should be faster and why, within a factor, not the time to 10%.
//
// Numbers marked ASSUMPTION have no public specification: calibrate them on a GPU (ncu metrics in
// notes/performance_model.md).
#pragma once
#include <algorithm>
#include <string>

#include "simt/counters.h"

namespace attn {

struct GpuSpec {
  const char* key;   // --gpu
  const char* name;  // in tables and CSV rows
  int sms;
  double clock_ghz;             // the boost clock the datasheet's tensor-core peak is computed at
  double dram_tb_s;             // HBM bandwidth
  double l2_tb_s;               // L2 bandwidth, all SMs together
  double l2_mb;                 // L2 capacity: a launch touching more is flagged
  double l1_wavefronts_per_clk; // per SM: 32 banks x 4 bytes = 128 bytes per clock
  double mufu_per_clk;          // per SM: special-function results per clock
  double tensor_tflops;         // dense fp16/bf16 tensor-core peak (the datasheet's figure without sparsity)
  double mma_sync_fraction;     // the share of that peak mma.sync can reach (wgmma reaches more)
  double launch_us;             // a kernel launch, back to back on a stream
};

// Sources: NVIDIA H100 datasheet and "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (SXM5:
// 132 SMs, 3.35 TB/s HBM3, 50 MB L2, 989.4 dense fp16 TFLOP/s = 132 SMs x 4096 FLOP/clock x
// 1.83 GHz); NVIDIA H200 datasheet (same GH100 compute, 4.8 TB/s HBM3e); CUDA C++ Programming
// Guide (shared memory: 32 banks of 4 bytes per clock; arithmetic instruction throughput, compute
// capability 9.0: 16 exp2/log2/rsqrt/sin/cos per clock per SM).
inline constexpr GpuSpec kGpus[] = {
    {"h100", "H100 SXM5", 132, 1.83, 3.35,
     7.0,   // ASSUMPTION: no official figure; microbenchmarks put it well above DRAM
     50, 1, 16, 989.4,
     0.63,  // ASSUMPTION: second-hand figure for mma.sync m16n8k16 on Hopper (measure it)
     2.5},  // ASSUMPTION
    {"h200", "H200 SXM", 132, 1.83, 4.8,
     7.0,   // ASSUMPTION, as for the H100
     50,    // ASSUMPTION: some reports say 60 MB
     1, 16, 989.4,
     0.63,  // ASSUMPTION
     2.5},  // ASSUMPTION
};

// One launch's modelled time, term by term, in microseconds.
struct Modelled {
  double dram = 0, l2 = 0, l1 = 0, mufu = 0, tensor = 0;  // each at the share of the GPU the grid fills
  double launch = 0;
  double share = 0;          // min(1, blocks / SMs)
  bool beyond_l2 = false;    // the launch touches more than L2 holds: DRAM bytes are a lower bound
  double total() const { return std::max({dram, l2, l1, mufu, tensor}) + launch; }
  // "dram", "L2", "L1", "MUFU", "tensor", or "launch" when the launch costs more than all of them.
  const char* bound() const {
    const double t = std::max({dram, l2, l1, mufu, tensor});
    if (launch > t) return "launch";
    return t == dram ? "DRAM" : t == l2 ? "L2" : t == l1 ? "L1" : t == mufu ? "MUFU" : "tensor";
  }
};

// What the model counts, in the units above, from the emulator's counters.
inline double dram_bytes(const simt::Counters& c) { return 32 * (c.dram_read_sectors + c.dram_write_sectors); }
// Loads cached in the block's L1 (each sector once per block); stores, atomics and cp.async
// (which bypasses L1 with .cg) all go to L2.
inline double l2_bytes(const simt::Counters& c) {
  return 32 * (c.block_load_sectors + c.global[simt::kGlobalStore].sectors + c.global[simt::kGlobalAtomic].sectors +
               c.global[simt::kCpAsyncSource].sectors);
}
// The L1/shared-memory data path: every shared-memory wavefront, and one pass per 128-byte line
// a global load or store touches.
inline double l1_wavefronts(const simt::Counters& c) { return c.shared_wavefronts() + c.global_lines(); }

// c: the counters of one launch.
inline Modelled model(const simt::Counters& c, const GpuSpec& g) {
  Modelled m;
  m.share = std::min(1.0, c.blocks / g.sms);
  const double clock = g.clock_ghz * 1e9 * g.sms * m.share;  // SM-clocks per second of the busy SMs
  m.dram = dram_bytes(c) / (g.dram_tb_s * 1e12 * m.share) * 1e6;
  m.l2 = l2_bytes(c) / (g.l2_tb_s * 1e12 * m.share) * 1e6;
  m.l1 = l1_wavefronts(c) / (g.l1_wavefronts_per_clk * clock) * 1e6;
  m.mufu = c.mufu / (g.mufu_per_clk * clock) * 1e6;
  m.tensor = c.mma_flop / (g.tensor_tflops * 1e12 * g.mma_sync_fraction * m.share) * 1e6;
  m.launch = g.launch_us * c.launches;
  m.beyond_l2 = dram_bytes(c) > g.l2_mb * 1e6;
  return m;
}

inline const GpuSpec* find_gpu(const std::string& key) {
  for (const GpuSpec& g : kGpus)
    if (key == g.key) return &g;
  return nullptr;
}

}  // namespace attn
