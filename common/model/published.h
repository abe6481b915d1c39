// published.h: what others measured, for a modelled table to stand beside. FlashAttention-2's
// forward on an H100 SXM5, fp16, as the FlashAttention-3 paper reports it (Shah et al., 2024,
// Figure 5: B·N = 16k tokens, H·d = 2048, N = 512 ... 16k, d = 64 and 128, causal and not).
// Measured by that paper's authors on their GPU, not by this project, and read off its figure; and
// FlashAttention-3's own bars, ablation and FlashInfer's decoding, below.
#pragma once
#include <cstddef>

namespace attn {

struct PublishedRate {
  int N, d;
  bool causal;
  double tflops;
};

inline constexpr PublishedRate kFlashAttention2H100[] = {
    {512, 128, false, 309}, {1024, 128, false, 350}, {2048, 128, false, 362},
    {4096, 128, false, 368}, {8192, 128, false, 370}, {16384, 128, false, 370},
    {512, 128, true, 191},  {1024, 128, true, 260},  {2048, 128, true, 298},
    {4096, 128, true, 319},  {8192, 128, true, 333},  {16384, 128, true, 335},
    {512, 64, false, 282},  {1024, 64, false, 306},  {2048, 64, false, 318},
    {4096, 64, false, 321},  {8192, 64, false, 322},  {16384, 64, false, 324},
    {512, 64, true, 180},   {1024, 64, true, 229},   {2048, 64, true, 262},
    {4096, 64, true, 284},   {8192, 64, true, 295},   {16384, 64, true, 299},
    {512, 256, false, 275}, {1024, 256, false, 313}, {2048, 256, false, 321},
    {4096, 256, false, 323}, {8192, 256, false, 324}, {16384, 256, false, 326},
    {512, 256, true, 208},  {1024, 256, true, 251},  {2048, 256, true, 278},
    {4096, 256, true, 293},  {8192, 256, true, 297},  {16384, 256, true, 298},
};

// FlashAttention-3's forward, the same figure and shapes (its bar labels; at d = 128, N = 512,
// non-causal, transcriptions of the figure disagree between 467 and 497).
inline constexpr PublishedRate kFlashAttention3H100[] = {
    {512, 64, false, 333},   {1024, 64, false, 392},   {2048, 64, false, 460},
    {4096, 64, false, 476},   {8192, 64, false, 496},   {16384, 64, false, 497},
    {512, 64, true, 197},    {1024, 64, true, 265},    {2048, 64, true, 371},
    {4096, 64, true, 420},    {8192, 64, true, 460},    {16384, 64, true, 473},
    {512, 128, false, 467},  {1024, 128, false, 565},  {2048, 128, false, 625},
    {4096, 128, false, 638},  {8192, 128, false, 646},  {16384, 128, false, 648},
    {512, 128, true, 292},   {1024, 128, true, 423},   {2048, 128, true, 521},
    {4096, 128, true, 579},   {8192, 128, true, 602},   {16384, 128, true, 616},
    {512, 256, false, 482},  {1024, 256, false, 639},  {2048, 256, false, 707},
    {4096, 256, false, 736},  {8192, 256, false, 746},  {16384, 256, false, 756},
    {512, 256, true, 286},   {1024, 256, true, 427},   {2048, 256, true, 537},
    {4096, 256, true, 612},   {8192, 256, true, 628},   {16384, 256, true, 642},
};

// The FlashAttention-3 paper's ablation (Table 2): B = 4, H = 16, N = 8448, d = 128, non-causal,
// fp16, on an H100 SXM5, in TFLOP/s.
struct PublishedAblation {
  const char* what;
  double tflops;
};
inline constexpr PublishedAblation kFlashAttention3Ablation[] = {
    {"without warp specialization", 570}, {"without GEMM-softmax pipelining", 582}, {"FlashAttention-3", 661}};

// Single-request decoding on an H100 SXM5 (FlashInfer's blog, 2024-02-02, Figure 5, H100 panel, read
// off the plot, so approximate): 32 heads, no GQA, d = 128, fp16, a contiguous cache, cold L2; the
// share of 3.35 TB/s that FlashInfer's kernel reaches at each KV length.
struct PublishedDecode {
  int keys;
  double share_of_3_35_tb_s;
};
inline constexpr PublishedDecode kFlashInferDecodeH100[] = {{8192, 0.62}, {32768, 0.84}};
inline constexpr const char* kFigure5Source =
    "FlashAttention-3 paper (Shah et al., 2024), Figure 5: measured by its authors, not here";

// The labs' published points (labs/, notes/performance_model.md "A kernel of your own"): siboehm's
// SGEMM worklog ("How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance", 2022; the
// SGEMM_CUDA repository's README table), fp32, M = N = K = 4096 on an RTX A6000: its kernel 2
// (global memory coalescing: labs/sgemm's naive) and kernel 3 (shared-memory caching: its tiled);
// and kernel 4 (1D blocktiling: each thread 8 results of a column), which the lab does not have yet:
// a learner who adds it as a run named "blocktiling_1d" gets the model beside it.
struct PublishedLab {
  const char* lab;     // the lab's name for the run (lab::Lab::profile)
  const char* gpu;     // common/gpus/gpus.h's key
  long long n;
  double gflops;
};
inline constexpr PublishedLab kSiboehmSgemm[] = {
    {"naive", "a6000", 4096, 1986.5}, {"tiled", "a6000", 4096, 2980.3}, {"blocktiling_1d", "a6000", 4096, 8474.7}};

// A table's published rate for a problem of the paper's shapes (Lq = Lk = N, B·N = 16k, H·d = 2048,
// fp16, no attn_mask, top-left causal or none), or nullptr.
template <std::size_t n>
inline const PublishedRate* figure5_rate(const PublishedRate (&table)[n], int B, int H, int Lq, int Lk, int d, bool fp16,
                                         bool causal, bool top_left, bool mask) {
  if (!fp16 || mask || Lq != Lk || static_cast<long long>(B) * Lq != 16384 || static_cast<long long>(H) * d != 2048 ||
      (causal && !top_left))
    return nullptr;
  for (const PublishedRate& r : table)
    if (r.N == Lq && r.d == d && r.causal == causal) return &r;
  return nullptr;
}
inline const PublishedRate* flash_attention2_h100(int B, int H, int Lq, int Lk, int d, bool fp16, bool causal,
                                                  bool top_left, bool mask) {
  return figure5_rate(kFlashAttention2H100, B, H, Lq, Lk, d, fp16, causal, top_left, mask);
}
inline const PublishedRate* flash_attention3_h100(int B, int H, int Lq, int Lk, int d, bool fp16, bool causal,
                                                  bool top_left, bool mask) {
  return figure5_rate(kFlashAttention3H100, B, H, Lq, Lk, d, fp16, causal, top_left, mask);
}

}  // namespace attn
