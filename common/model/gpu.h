// gpu.h: the GPUs the model stands for, and where each number comes from. Change a number,
// rebuild the counters build, and see which bounds move (notes/performance_model.md).
// Numbers marked ASSUMPTION have no public specification: calibrate them on a GPU (the ncu
// metrics of notes/performance_model.md).
#pragma once
#include <string>

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
  double fp32_tflops;           // CUDA-core fp32 peak, the datasheet's figure (at its boost clock)
  double mma_sync_fraction;     // the share of that peak mma.sync can reach (wgmma reaches more)
  double launch_us;             // a kernel launch, back to back on a stream
  // What one SM holds at once (CUDA C++ Programming Guide, compute capability 9.0): blocks per SM
  // are the fewest these allow.
  int max_threads_per_sm, max_blocks_per_sm, registers_per_sm;
  double smem_per_sm_kb;        // shared memory an SM's blocks share (228 KB, of which 1 KB per block reserved)
  int warp_schedulers;          // sub-partitions: a warp issues from one (one instruction per clock), and each has its own tensor core and MUFU
};

// Sources: NVIDIA H100 datasheet and "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (SXM5:
// 132 SMs, 3.35 TB/s HBM3, 50 MB L2, 989.4 dense fp16 TFLOP/s = 132 SMs x 4096 FLOP/clock x
// 1.83 GHz, 4 sub-partitions per SM; 67 fp32 TFLOP/s on the CUDA cores); NVIDIA H200 datasheet (same GH100 compute, 4.8 TB/s HBM3e);
// CUDA C++ Programming Guide (shared memory: 32 banks of 4 bytes per clock; arithmetic instruction
// throughput, compute capability 9.0: 16 exp2/log2/rsqrt/sin/cos per clock per SM; technical
// specifications: 2048 threads, 32 blocks, 64K 32-bit registers and 228 KB of shared memory per SM;
// one warp instruction per clock per sub-partition).
inline constexpr GpuSpec kGpus[] = {
    {"h100", "H100 SXM5", 132, 1.83, 3.35,
     7.0,   // ASSUMPTION: no official figure; microbenchmarks put it well above DRAM
     50, 1, 16, 989.4, 67,
     0.63,  // ASSUMPTION: second-hand figure for mma.sync m16n8k16 on Hopper (measure it)
     2.5,   // ASSUMPTION
     2048, 32, 65536, 228, 4},
    {"h200", "H200 SXM", 132, 1.83, 4.8,
     7.0,   // ASSUMPTION, as for the H100
     50,    // ASSUMPTION: some reports say 60 MB
     1, 16, 989.4, 67,
     0.63,  // ASSUMPTION
     2.5,   // ASSUMPTION
     2048, 32, 65536, 228, 4},
};

inline const GpuSpec* find_gpu(const std::string& key) {
  for (const GpuSpec& g : kGpus)
    if (key == g.key) return &g;
  return nullptr;
}

}  // namespace attn
