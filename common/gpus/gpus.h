// gpus.h: the GPUs the book knows, one row each. Its limits say what a block may ask of that GPU:
// the emulator refuses a launch past them as the GPU would (SIMT_GPU, --gpu), and the registry
// refuses a variant that would ask for more, in a sentence. Its rates are the model's
// (notes/performance_model.md): every row has them, each cited or marked ASSUMPTION; a row whose
// rates were zero would not be modelled (profile.h's require_rates refuses it).
//
// Sources, cited by the rows:
//   [CC]  CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per
//         Compute Capability": threads, warps and blocks per SM, registers, shared memory per SM
//         and per block (opt-in), and the 1 KB the driver reserves per block from 8.0 on (none on
//         7.5); "Arithmetic Instructions" table: 16 exp2 per clock per SM up to 9.0. Every CC
//         here has 4 sub-partitions (schedulers) per SM.
//   [T4]  NVIDIA T4 datasheet; "NVIDIA Turing GPU Architecture" whitepaper (TU104: 40 SMs in T4;
//         4 MB L2): 65 TFLOP/s mixed precision (fp16 products, fp32 sums: full rate) = 40 SMs x 1024
//         FLOP/clock x 1.59 GHz boost; 8.1 fp32 TFLOP/s; 320 GB/s GDDR6.
//   [A100] "NVIDIA A100 Tensor Core GPU Architecture" whitepaper (108 SMs, 1.41 GHz boost, 40 MB
//         L2) and A100 datasheet (80 GB SXM4: 2039 GB/s HBM2e; 312 dense fp16 tensor TFLOP/s = 108 x
//         2048 FLOP/clock x 1.41 GHz, the same with fp32 accumulation; 19.5 fp32 TFLOP/s).
//   [GA102] "NVIDIA Ampere GA102 GPU Architecture" whitepaper: RTX 3090 82 SMs, RTX A6000 84;
//         NVIDIA A10 datasheet (72 SMs, 9216 CUDA cores). GA102's L2 is 6144 KB. RTX 3090 (its
//         Appendix A table): 1695 MHz boost, 936 GB/s GDDR6X, 35.6 fp32 TFLOP/s, "Peak FP16 Tensor
//         TFLOPS with FP32 Accumulate" 71 (142 with fp16 accumulation: GeForce halves fp32
//         accumulation). RTX A6000 (its Appendix C table): 1800 MHz, 768 GB/s GDDR6, 38.7 fp32,
//         154.8 fp16 tensor TFLOP/s with fp32 accumulation (full rate). A10 datasheet: 125 dense
//         fp16/bf16 tensor TFLOP/s (250 with sparsity) = 72 x 1024 x 1.695 GHz, 31.2 fp32, 600 GB/s.
//   [AD102] "NVIDIA Ada GPU Architecture" whitepaper: RTX 4090 128 SMs; NVIDIA L4 datasheet
//         (58 SMs, 7424 CUDA cores). RTX 4090 (its appendix table): 2520 MHz boost, 1008 GB/s
//         GDDR6X, 72 MB L2, 82.6 fp32 TFLOP/s, "Peak FP16 Tensor TFLOPS with FP32 Accumulate" 165.2
//         (330.3 with fp16 accumulation). L4 datasheet: 242 fp16 tensor TFLOP/s with sparsity (121
//         dense = 58 x 1024 x 2.04 GHz boost, full rate with fp32 accumulation), 30.3 fp32, 300 GB/s
//         GDDR6; its 48 MB L2 is the AD104's (ASSUMPTION: third-party spec listings; not in the
//         datasheet).
//   [H100] NVIDIA H100 datasheet and "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (SXM5:
//         132 SMs, 3.35 TB/s HBM3, 50 MB L2, 989.4 dense fp16 TFLOP/s = 132 SMs x 4096 FLOP/clock x
//         1.83 GHz; 67 fp32 TFLOP/s; PCIe: 114 SMs, 50 MB L2); NVIDIA H200 datasheet (GH100, 4.8 TB/s
//         HBM3e, 989 dense fp16 TFLOP/s and 67 fp32, the H100 SXM5's: so its 132 SMs and clock, which
//         the H200 this project measured reports too, results/nvidia-h200/logs). 1.83 GHz is the clock
//         that peak implies; the parts boost to 1.98 GHz (results/nvidia-h200/device.txt), at which the
//         rerun of [lat] and [mma] measured its cycles. The model converts every cycle count at 1.83:
//         at a sustained 1.98 its latencies in us would be 8 % long (the clock under load is not
//         measured yet: tools/gpu_session.sh samples it through every step, summary.txt's "SM clock").
//         H100 PCIe (datasheet): 2.0 TB/s HBM2e, 756 dense fp16 TFLOP/s (1513 with sparsity), 51 fp32.
//   [B200] "NVIDIA Blackwell Architecture Technical Brief"; 148 SMs as cudaGetDeviceProperties
//         is reported to give them on a B200 (ASSUMPTION: second-hand, not in the brief). HGX B200 (1000 W), per GPU: 4.5 PFLOP/s fp16/bf16 tensor with
//         sparsity (2.25 dense), 80 fp32 TFLOP/s, 8 TB/s HBM3e (the HGX B200 datasheet's later
//         revision says 75 TFLOP/s and 7.7 TB/s). Its full-rate tensor path is tcgen05 (UMMA, tensor
//         memory), not mma.sync; no published clock, L2 rate or mma.sync share.
//   [GB202] "NVIDIA RTX Blackwell GPU Architecture" whitepaper: RTX 5090 170 SMs (21760 CUDA cores);
//         2407 MHz boost, 1792 GB/s GDDR7, 96 MB L2, 104.8 fp32 TFLOP/s, "Peak FP16 Tensor TFLOPS
//         with FP32 Accumulate" 209.5 (419 with fp16 accumulation, 838 with sparsity too) = 170 x
//         512 FLOP/clock x 2.407 GHz.
//   [pipes] NVIDIA's description of the FMA pipes (NVIDIA developer forums, thread "Separate CUDA
//         core pipeline for FP16 and FP32", reply 7): on GA100 one FMA pipe takes IMAD, IDP and FP32; on
//         GA10x, and the same on GH100, FMAheavy takes IMAD, IDP and FP32 and FMAlite FP32. With
//         [CC]'s rates (FP32: 64 results per clock per SM on 7.5 and 8.0, 128 on 8.6, 8.9 and 9.0;
//         32-bit integer multiply-add: 64) that is model.h's FMA term. ASSUMPTION: 7.5 shares its
//         one pipe as 8.0 does, and 10.0 and 12.0 have 9.0's pipes (the sources cited stop there).
//   [lat] The cycles a global load waits for an L2 hit and for DRAM, by pointer chase (the model's
//         latency term: model.h, model/sass.h). H100 SXM5: 272 and 484, a third-party rerun of Luo et
//         al.'s suite (Johnsonms/NVIDIA-Hopper-Benchmark, reproduction/H100-dapperdingo: the figures
//         tools/sass_issue.py counts the SASS with). A100 and RTX 4090: 261.5 and 466, 273 and 541.5,
//         Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture" (arXiv:2402.13499),
//         the same suite (second-hand: as a public research notes file, found by a code search whose
//         hit names no repository, tabulates the paper; the paper's own table not read here). Turing: 234 and 424, Arafa et al., "Low Overhead Instruction Latency Characterization
//         for NVIDIA GPGPUs" (arXiv:1905.08778), as PPT-GPU's configs/arch_latencies_config.py (lanl/PPT)
//         carries them for its Turing (RTX) class, not measured on a T4. ASSUMPTIONS, no figure found:
//         the H200 and H100 PCIe take the H100 SXM5's (the same GH100 L2; their HBM unmeasured), GA102
//         the A100's, the L4 the RTX 4090's, the B200 and RTX 5090 the H100 SXM5's.
//   [mma] mma.sync m16n8k16 (fp16 in, fp32 out) on Hopper, as a share of the dense peak: 713.7 TFLOP/s
//         on an H100 SXM5 at 1980 MHz in the rerun of [lat], 0.67 of the peak at that clock (989.4 x
//         1.98 / 1.83 = 1071); 62.9 % on an H800 PCIe in Luo et al. (second-hand, as in [lat]). The
//         model takes 0.63, the lower: an ASSUMPTION within that range, not fitted.
//   [copy] What a streaming copy reaches of the datasheet's DRAM bandwidth (the model's DRAM term:
//         model.h). H100 SXM5: 3010 of 3352 GB/s, 0.90, the same rerun of Luo et al.'s suite as
//         [lat]. H200 SXM: 4226 of 4800 GB/s, 0.88, a device-to-device copy (bytes read + written)
//         timed by this project's harness on an H200 (results/nvidia-h200/logs/promise_P1.log,
//         copy_bandwidth_gbps). ASSUMPTION, no figure found: every other row the H100 SXM5's 0.90.
//   Assumptions every row but the H100's and H200's shares: the DRAM copy share is the H100's
//   ([copy]); the L2 rate is the H100's assumed
//   7 TB/s scaled by SMs x clock (no vendor gives one); a launch costs 2.5 us as on the H100; 16
//   MUFU results per clock per SM on 10.0 and 12.0 as up to 9.0 (the [CC] table cited stops at
//   9.0); mma.sync at the full tensor peak before sm_90 and on 12.0, where it is the tensor path (no
//   published shortfall found). L1: 128 B per clock per SM, the Programming Guide's shared memory
//   (32 banks of 4 bytes, each one access per clock); 127.5 B per clock per SM on an H100 SXM5 in the
//   rerun of [lat]. The model's issue term and the occupancy
//   its registers give take each kernel's SASS for the GPU's own architecture where the counters
//   build compiled it (FLASHSTEPS_SASS_ARCHS; model/sass.h), else sm_90's, a stand-in the profile
//   names.
#pragma once
#include <algorithm>
#include <cstdio>
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
  int registers_per_block = 65536;
  int max_threads_per_block = 1024;
  int warp_schedulers = 4;  // sub-partitions: each issues one warp instruction per clock and has its own tensor core and MUFU
  const char* sources = "";
  // The model's rates; zero where the model does not stand for this GPU yet.
  double clock_ghz = 0;              // the boost clock the datasheet's tensor-core peak is computed at
  double dram_tb_s = 0;              // DRAM bandwidth (HBM or GDDR), the datasheet's
  double dram_copy_share = 0.90;     // of it, what a streaming copy reaches [copy]: the model's DRAM rate
  double l2_tb_s = 0;                // L2 bandwidth, all SMs together
  double l2_mb = 0;                  // L2 capacity: a launch touching more is flagged
  double l1_wavefronts_per_clk = 0;  // per SM: 32 banks x 4 bytes = 128 bytes per clock
  double mufu_per_clk = 0;           // per SM: special-function results per clock
  // Per SM, results per clock [CC] "Arithmetic Instructions": FP32 adds, multiplies and
  // multiply-adds, and 32-bit integer multiply-adds, which share the FMA pipes (model.h).
  double fp32_per_clk = 128, imad_per_clk = 64;
  double tensor_tflops = 0;          // dense fp16/bf16 tensor-core peak (the datasheet's figure without sparsity)
  double fp32_tflops = 0;            // CUDA-core fp32 peak, the datasheet's figure (at its boost clock)
  double mma_sync_fraction = 0;      // the share of that peak mma.sync can reach (wgmma reaches more)
  double launch_us = 0;              // a kernel launch, back to back on a stream
  // SM clocks a global load waits for an L2 hit and for DRAM [lat]: the model's latency term.
  double l2_latency_clk = 0, dram_latency_clk = 0;
  const char* rate_sources = "";

  bool modelled() const { return tensor_tflops > 0 && dram_tb_s > 0; }
  double dram_copy_tb_s() const { return dram_tb_s * dram_copy_share; }  // the rate the model's DRAM term takes
  int cc() const { return 10 * cc_major + cc_minor; }  // 75, 80, ..., 120
  std::string arch() const { return "sm_" + std::to_string(cc()); }
};

inline constexpr Gpu kGpus[] = {
    {.key = "h100", .name = "H100 SXM5", .cc_major = 9, .cc_minor = 0, .sms = 132,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 9.0; [H100]",
     .clock_ghz = 1.83, .dram_tb_s = 3.35, .dram_copy_share = 0.90,  // [copy]
     .l2_tb_s = 7.0,  // ASSUMPTION: no official figure; microbenchmarks put it well above DRAM
     .l2_mb = 50, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 989.4, .fp32_tflops = 67,
     .mma_sync_fraction = 0.63,  // [mma]: 0.63 to 0.67 published; the lower taken
     .launch_us = 2.5,           // ASSUMPTION
     .l2_latency_clk = 272, .dram_latency_clk = 484,  // [lat]
     .rate_sources = "[H100]; [CC]; [lat]; [copy]; [mma]; L2 rate, launch cost and the mma.sync share within [mma]'s range: assumptions"},
    {.key = "h200", .name = "H200 SXM", .cc_major = 9, .cc_minor = 0, .sms = 132,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 9.0; [H100] (H200)",
     .clock_ghz = 1.83, .dram_tb_s = 4.8, .dram_copy_share = 0.88,  // [copy]: measured on an H200
     .l2_tb_s = 7.0,  // ASSUMPTION, as for the H100
     .l2_mb = 50,     // ASSUMPTION: some reports say 60 MB
     .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 989.4, .fp32_tflops = 67,
     .mma_sync_fraction = 0.63,  // ASSUMPTION
     .launch_us = 2.5,           // ASSUMPTION
     .l2_latency_clk = 272, .dram_latency_clk = 484,  // ASSUMPTION: the H100 SXM5's
     .rate_sources = "[H100] (H200); [CC]; [copy]; L2 rate and size, latencies, mma.sync share and launch cost: assumptions"},
    {.key = "h100-pcie", .name = "H100 PCIe", .cc_major = 9, .cc_minor = 0, .sms = 114,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 9.0; [H100] (PCIe)",
     .clock_ghz = 1.62,  // derived: 756 TFLOP/s / (114 SMs x 4096 FLOP/clock), as for the SXM5
     .dram_tb_s = 2.0,
     .l2_tb_s = 5.35,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 50, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 756, .fp32_tflops = 51,
     .mma_sync_fraction = 0.63,  // ASSUMPTION, as for the H100 SXM5
     .launch_us = 2.5,           // ASSUMPTION
     .l2_latency_clk = 272, .dram_latency_clk = 484,  // ASSUMPTION: the H100 SXM5's
     .rate_sources = "[H100] (PCIe); [CC]; clock derived from the tensor peak; "
                     "L2 rate, latencies, mma.sync share, launch cost and DRAM copy share: assumptions"},
    {.key = "t4", .name = "Tesla T4", .cc_major = 7, .cc_minor = 5, .sms = 40,
     .smem_optin_bytes = 64 * 1024, .smem_per_sm_bytes = 64 * 1024, .smem_reserved_bytes = 0,
     .max_threads_per_sm = 1024, .max_blocks_per_sm = 16, .sources = "[CC] 7.5; [T4]",
     .clock_ghz = 1.59, .dram_tb_s = 0.32,
     .l2_tb_s = 1.84,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 4, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .fp32_per_clk = 64, .tensor_tflops = 65, .fp32_tflops = 8.1,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90 (m16n8k8 on sm_75: no m16n8k16)
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 234, .dram_latency_clk = 424,  // Turing's [lat], not measured on a T4
     .rate_sources = "[T4]; [CC] 7.5; [lat] (Turing's); L2 rate, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "a100", .name = "A100 SXM4 80GB", .cc_major = 8, .cc_minor = 0, .sms = 108,
     .smem_optin_bytes = 163 * 1024, .smem_per_sm_bytes = 164 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 8.0; [A100]",
     .clock_ghz = 1.41, .dram_tb_s = 2.039,
     .l2_tb_s = 4.41,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 40, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .fp32_per_clk = 64, .tensor_tflops = 312, .fp32_tflops = 19.5,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 261.5, .dram_latency_clk = 466,  // [lat]
     .rate_sources = "[A100]; [CC] 8.0; [lat] (second-hand); L2 rate, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "rtx3090", .name = "GeForce RTX 3090", .cc_major = 8, .cc_minor = 6, .sms = 82,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 16, .sources = "[CC] 8.6; [GA102]",
     .clock_ghz = 1.695, .dram_tb_s = 0.936,
     .l2_tb_s = 4.03,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 6, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16,
     .tensor_tflops = 71,  // with fp32 accumulation, as the kernels sum: half the 142 of fp16 accumulation
     .fp32_tflops = 35.6,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 261.5, .dram_latency_clk = 466,  // ASSUMPTION: the A100's
     .rate_sources = "[GA102] (RTX 3090; fp32-accumulate tensor rate); [CC] 8.6; L2 rate, latencies, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "a6000", .name = "RTX A6000", .cc_major = 8, .cc_minor = 6, .sms = 84,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 16, .sources = "[CC] 8.6; [GA102]",
     .clock_ghz = 1.8, .dram_tb_s = 0.768,
     .l2_tb_s = 4.38,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 6, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 154.8, .fp32_tflops = 38.7,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 261.5, .dram_latency_clk = 466,  // ASSUMPTION: the A100's
     .rate_sources = "[GA102] (RTX A6000); [CC] 8.6; L2 rate, latencies, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "a10", .name = "A10", .cc_major = 8, .cc_minor = 6, .sms = 72,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 16, .sources = "[CC] 8.6; [GA102] (A10)",
     .clock_ghz = 1.695,  // derived: 125 TFLOP/s / (72 SMs x 1024 FLOP/clock), GA102's boost clock
     .dram_tb_s = 0.6,
     .l2_tb_s = 3.54,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 6,  // GA102's 6144 KB: the A10 keeps all 12 memory controllers (384-bit bus)
     .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16, .tensor_tflops = 125, .fp32_tflops = 31.2,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 261.5, .dram_latency_clk = 466,  // ASSUMPTION: the A100's
     .rate_sources = "[GA102] (A10 datasheet); [CC] 8.6; L2 rate, latencies, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "rtx4090", .name = "GeForce RTX 4090", .cc_major = 8, .cc_minor = 9, .sms = 128,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 24, .sources = "[CC] 8.9; [AD102]",
     .clock_ghz = 2.52, .dram_tb_s = 1.008,
     .l2_tb_s = 9.35,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 72, .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16,
     .tensor_tflops = 165.2,  // with fp32 accumulation, as the kernels sum: half the 330.3 of fp16 accumulation
     .fp32_tflops = 82.6,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 273, .dram_latency_clk = 541.5,  // [lat]
     .rate_sources = "[AD102] (RTX 4090; fp32-accumulate tensor rate); [CC] 8.9; [lat] (second-hand); L2 rate, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "l4", .name = "L4", .cc_major = 8, .cc_minor = 9, .sms = 58,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 24, .sources = "[CC] 8.9; [AD102] (L4)",
     .clock_ghz = 2.04, .dram_tb_s = 0.3,
     .l2_tb_s = 3.43,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 48,  // the AD104's, from third-party listings: the datasheet gives none
     .l1_wavefronts_per_clk = 1, .mufu_per_clk = 16,
     .tensor_tflops = 121,  // the datasheet's 242 with sparsity, halved
     .fp32_tflops = 30.3,
     .mma_sync_fraction = 1.0,  // mma.sync is the tensor path before sm_90
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 273, .dram_latency_clk = 541.5,  // ASSUMPTION: the RTX 4090's
     .rate_sources = "[AD102] (L4 datasheet; L2 size third-party); [CC] 8.9; L2 rate, latencies, launch cost, DRAM copy share and mma.sync at full rate: assumptions"},
    {.key = "b200", .name = "B200", .cc_major = 10, .cc_minor = 0, .sms = 148,
     .smem_optin_bytes = 227 * 1024, .smem_per_sm_bytes = 228 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .sources = "[CC] 10.0; [B200]",
     .clock_ghz = 1.86,  // ASSUMPTION: none published; 2250 TFLOP/s / (148 SMs x 8192 FLOP/clock, twice Hopper's)
     .dram_tb_s = 8.0,
     .l2_tb_s = 7.98,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 126,     // ASSUMPTION: second-hand reports of cudaGetDeviceProperties on a B200; not in the brief
     .l1_wavefronts_per_clk = 1,
     .mufu_per_clk = 16,     // ASSUMPTION: as up to 9.0
     .tensor_tflops = 2250,  // dense: half the brief's 4.5 PFLOP/s with sparsity (HGX B200)
     .fp32_tflops = 80,
     .mma_sync_fraction = 0.63,  // ASSUMPTION: the H100's; tcgen05 (UMMA) is the full-rate path, mma.sync unmeasured
     .launch_us = 2.5,           // ASSUMPTION
     .l2_latency_clk = 272, .dram_latency_clk = 484,  // ASSUMPTION: the H100 SXM5's
     .rate_sources = "[B200] (HGX B200); [CC] 10.0; "
                     "SM count, clock, L2 rate and size, latencies, MUFU rate, FMA pipes ([pipes]), mma.sync share, launch cost and DRAM copy share: assumptions"},
    {.key = "rtx5090", .name = "GeForce RTX 5090", .cc_major = 12, .cc_minor = 0, .sms = 170,
     .smem_optin_bytes = 99 * 1024, .smem_per_sm_bytes = 100 * 1024, .smem_reserved_bytes = 1 * 1024,
     .max_threads_per_sm = 1536, .max_blocks_per_sm = 32, .sources = "[CC] 12.0; [GB202]",
     .clock_ghz = 2.407, .dram_tb_s = 1.792,
     .l2_tb_s = 11.86,  // ASSUMPTION: the H100's 7 TB/s x (SMs x clock) / (132 x 1.83 GHz)
     .l2_mb = 96, .l1_wavefronts_per_clk = 1,
     .mufu_per_clk = 16,      // ASSUMPTION: as up to 9.0
     .tensor_tflops = 209.5,  // with fp32 accumulation, as the kernels sum: half the 419 of fp16 accumulation
     .fp32_tflops = 104.8,
     .mma_sync_fraction = 1.0,  // sm_120 has no wgmma or tcgen05: mma.sync is its tensor path
     .launch_us = 2.5,          // ASSUMPTION
     .l2_latency_clk = 272, .dram_latency_clk = 484,  // ASSUMPTION: the H100 SXM5's
     .rate_sources = "[GB202] (RTX 5090; fp32-accumulate tensor rate); [CC] 12.0; "
                     "L2 rate, latencies, MUFU rate, FMA pipes ([pipes]), mma.sync at full rate, launch cost and DRAM copy share: assumptions"},
};

// The row of `key` ("h100", "a100", ...), or nullptr.
inline const Gpu* find_gpu(const std::string& key) {
  for (const Gpu& g : kGpus)
    if (key == g.key) return &g;
  return nullptr;
}
// The registers a block of `threads` takes from the register file: each warp's allocated 256 at a
// time (the CUDA Occupancy Calculator's allocation unit and granularity, every CC here).
inline long long block_registers(long long threads, int registers) {
  return (std::max(1LL, threads) + 31) / 32 * ((registers * 32LL + 255) / 256 * 256);
}

// What a launch asks of one block, and the first of g's limits it passes: the rule the emulator
// refuses a launch by (for the GPU it stands for) and the model remodels one by (for another).
struct BlockAsk {
  long long threads;
  long long dynamic_smem, static_smem;
  int registers;  // per thread, as the compiler allotted them for g's architecture; 0: not known
};
enum class Limit { none, threads, shared_memory, registers };
struct Refusal {
  Limit limit = Limit::none;
  std::string why;  // a sentence with g's name; "" when the block fits
};
inline Refusal refusal(const Gpu& g, const BlockAsk& a) {
  char msg[240];
  if (a.threads > g.max_threads_per_block) {
    std::snprintf(msg, sizeof msg, "%lld threads per block, more than the %d the %s (%s) allows", a.threads,
                  g.max_threads_per_block, g.name, g.arch().c_str());
    return {Limit::threads, msg};
  }
  if (a.dynamic_smem + a.static_smem > g.smem_optin_bytes) {
    std::snprintf(msg, sizeof msg, "%lld bytes of dynamic and %lld of static shared memory per block, more than the %d the %s (%s) allows",
                  a.dynamic_smem, a.static_smem, g.smem_optin_bytes, g.name, g.arch().c_str());
    return {Limit::shared_memory, msg};
  }
  if (a.registers > 0 && block_registers(a.threads, a.registers) > g.registers_per_block) {
    std::snprintf(msg, sizeof msg, "too many resources requested for launch: %d registers x %lld threads take %lld "
                  "registers, more than the %d a block may have on the %s (%s)", a.registers, a.threads,
                  block_registers(a.threads, a.registers), g.registers_per_block, g.name, g.arch().c_str());
    return {Limit::registers, msg};
  }
  return {};
}

// "h100, h200, ..." (for messages).
inline std::string gpu_keys() {
  std::string s;
  for (const Gpu& g : kGpus) s += (s.empty() ? "" : ", ") + std::string(g.key);
  return s;
}

}  // namespace gpus
