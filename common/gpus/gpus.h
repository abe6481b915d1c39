// gpus.h: the GPUs the book knows, one row each. Its limits say what a block may ask of that GPU:
// the emulator refuses a launch past them as the GPU would (SIMT_GPU, --gpu), and the registry
// refuses a variant that would ask for more, in a sentence. Its rates are the model's
// (notes/performance_model.md); a row whose rates are zero is not modelled yet.
//
// Sources, cited by the rows:
//   [CC]  CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per
//         Compute Capability": threads, warps and blocks per SM, registers, shared memory per SM
//         and per block (opt-in), and the 1 KB the driver reserves per block from 8.0 on (none on
//         7.5); "Arithmetic Instructions" table: 16 exp2 per clock per SM up to 9.0. Every CC
//         here has 4 sub-partitions (schedulers) per SM.
//   [T4]  NVIDIA T4 datasheet; "NVIDIA Turing GPU Architecture" whitepaper (TU104: 40 SMs in T4).
//   [A100] "NVIDIA A100 Tensor Core GPU Architecture" whitepaper (108 SMs).
//   [GA102] "NVIDIA Ampere GA102 GPU Architecture" whitepaper: RTX 3090 82 SMs, RTX A6000 84;
//         NVIDIA A10 datasheet (72 SMs, 9216 CUDA cores).
//   [AD102] "NVIDIA Ada GPU Architecture" whitepaper: RTX 4090 128 SMs; NVIDIA L4 datasheet
//         (58 SMs, 7424 CUDA cores).
//   [H100] NVIDIA H100 datasheet and "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (SXM5:
//         132 SMs, 3.35 TB/s HBM3, 50 MB L2, 989.4 dense fp16 TFLOP/s = 132 SMs x 4096 FLOP/clock x
//         1.83 GHz; 67 fp32 TFLOP/s; PCIe: 114 SMs); NVIDIA H200 datasheet (GH100, 4.8 TB/s HBM3e).
//   [B200] "NVIDIA Blackwell Architecture Technical Brief"; 148 SMs as cudaGetDeviceProperties
//         reports them on a B200.
//   [GB202] "NVIDIA RTX Blackwell GPU Architecture" whitepaper: RTX 5090 170 SMs (21760 CUDA cores).
#pragma once
#include <string>

namespace gpus {

struct Gpu {
  const char* key;   // --gpu, SIMT_GPU
  const char* name;  // in tables and CSV rows
  int cc_major, cc_minor;
  int sms;
  // What a block may ask, and what an SM holds at once [CC].
  int smem_optin_bytes;     // shared memory one block may use, static + dynamic (with the opt-in)
  int smem_per_sm_bytes;    // what an SM's blocks share
  int smem_reserved_bytes;  // per block, taken by the driver from the SM's share
  int max_threads_per_sm, max_blocks_per_sm;
  int registers_per_sm = 65536;
  int max_threads_per_block = 1024;
  int warp_schedulers = 4;  // sub-partitions: each issues one warp instruction per clock and has its own tensor core and MUFU
  const char* sources = "";
  // The model's rates; zero where the model does not stand for this GPU yet.
  double clock_ghz = 0;              // the boost clock the datasheet's tensor-core peak is computed at
  double dram_tb_s = 0;              // HBM bandwidth
  double l2_tb_s = 0;                // L2 bandwidth, all SMs together
  double l2_mb = 0;                  // L2 capacity: a launch touching more is flagged
  double l1_wavefronts_per_clk = 0;  // per SM: 32 banks x 4 bytes = 128 bytes per clock
  double mufu_per_clk = 0;           // per SM: special-function results per clock
  double tensor_tflops = 0;          // dense fp16/bf16 tensor-core peak (the datasheet's figure without sparsity)
  double fp32_tflops = 0;            // CUDA-core fp32 peak, the datasheet's figure (at its boost clock)
  double mma_sync_fraction = 0;      // the share of that peak mma.sync can reach (wgmma reaches more)
  double launch_us = 0;              // a kernel launch, back to back on a stream
  const char* rate_sources = "";

  bool modelled() const { return tensor_tflops > 0 && dram_tb_s > 0; }
  int cc() const { return 10 * cc_major + cc_minor; }  // 75, 80, ..., 120
  std::string arch() const { return "sm_" + std::to_string(cc()); }
};

inline constexpr Gpu kGpus[] = {
    {.key = "h100", .name = "H100 SXM5", .cc_major = 9, .cc_minor = 0, .sms = 132,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 9.0; [H100]",
     .clock_ghz = 1.83, .dram_tb_s = 3.35,
     .l2_tb_s = 7.0,  // ASSUMPTION: no official figure; microbenchmarks put it well above DRAM
     .l2_mb = 50, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 989.4, .fp32_tflops = 67,
     .mma_sync_fraction = 0.63,  // ASSUMPTION: second-hand figure for mma.sync m16n8k16 on Hopper (measure it)
     .launch_us = 2.5,           // ASSUMPTION
     .rate_sources = "[H100]; [CC]; L2 rate, mma.sync share and launch cost: assumptions"},
    {.key = "h200", .name = "H200 SXM", .cc_major = 9, .cc_minor = 0, .sms = 132,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 9.0; [H100] (H200)",
     .clock_ghz = 1.83, .dram_tb_s = 4.8,
     .l2_tb_s = 7.0,  // ASSUMPTION, as for the H100
     .l2_mb = 50,     // ASSUMPTION: some reports say 60 MB
     .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 989.4, .fp32_tflops = 67,
     .mma_sync_fraction = 0.63,  // ASSUMPTION
     .launch_us = 2.5,           // ASSUMPTION
     .rate_sources = "[H100] (H200); [CC]; L2 rate and size, mma.sync share and launch cost: assumptions"},
    {.key = "h100-pcie", .name = "H100 PCIe", .cc_major = 9, .cc_minor = 0, .sms = 114,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 9.0; [H100] (PCIe)"},
    {.key = "t4", .name = "Tesla T4", .cc_major = 7, .cc_minor = 5, .sms = 40,
     .smem_optin_bytes = 64 * 1024, .smem_per_sm_bytes = 64 * 1024, .smem_reserved_bytes = 0,
     .max_threads_per_sm = 1024, .max_blocks_per_sm = 16, .sources = "[CC] 7.5; [T4]"},
    {.key = "a100", .name = "A100 SXM4 80GB", .cc_major = 8, .cc_minor = 0, .sms = 108,
     .smem_optin_bytes = 163 * 1024, .smem_per_sm_bytes = 164 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 8.0; [A100]"},
    {.key = "rtx3090", .name = "GeForce RTX 3090", .cc_major = 8, .cc_minor = 6, .sms = 82,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 16, .sources = "[CC] 8.6; [GA102]"},
    {.key = "a6000", .name = "RTX A6000", .cc_major = 8, .cc_minor = 6, .sms = 84,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 16, .sources = "[CC] 8.6; [GA102]"},
    {.key = "a10", .name = "A10", .cc_major = 8, .cc_minor = 6, .sms = 72,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 16, .sources = "[CC] 8.6; [GA102] (A10)"},
    {.key = "rtx4090", .name = "GeForce RTX 4090", .cc_major = 8, .cc_minor = 9, .sms = 128,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 24, .sources = "[CC] 8.9; [AD102]"},
    {.key = "l4", .name = "L4", .cc_major = 8, .cc_minor = 9, .sms = 58,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 24, .sources = "[CC] 8.9; [AD102] (L4)"},
    {.key = "b200", .name = "B200", .cc_major = 10, .cc_minor = 0, .sms = 148,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 10.0; [B200]"},
    {.key = "rtx5090", .name = "GeForce RTX 5090", .cc_major = 12, .cc_minor = 0, .sms = 170,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 32, .sources = "[CC] 12.0; [GB202]"},
};

// The row of `key` ("h100", "a100", ...), or nullptr.
inline const Gpu* find_gpu(const std::string& key) {
  for (const Gpu& g : kGpus)
    if (key == g.key) return &g;
  return nullptr;
}
// "h100, h200, ..." (for messages).
inline std::string gpu_keys() {
  std::string s;
  for (const Gpu& g : kGpus) s += (s.empty() ? "" : ", ") + std::string(g.key);
  return s;
}

}  // namespace gpus
