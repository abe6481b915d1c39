// published.h: what others measured, for a modelled table to stand beside. FlashAttention-2's
// forward on an H100 SXM5, fp16, as the FlashAttention-3 paper reports it (Shah et al., 2024,
// Figure 5: B·N = 16k tokens, H·d = 2048, N = 512 ... 16k, d = 64 and 128, causal and not).
// Measured by that paper's authors on their GPU, not by this project, and read off its figure.
#pragma once

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
};
inline constexpr const char* kFlashAttention2H100Source =
    "FlashAttention-3 paper (Shah et al., 2024), Figure 5: measured by its authors, not here";

// FlashAttention-2's published rate for a problem of the paper's shapes (Lq = Lk = N, B·N = 16k,
// H·d = 2048, fp16, no attn_mask, top-left causal or none), or nullptr.
inline const PublishedRate* flash_attention2_h100(int B, int H, int Lq, int Lk, int d, bool fp16, bool causal,
                                                  bool top_left, bool mask) {
  if (!fp16 || mask || Lq != Lk || static_cast<long long>(B) * Lq != 16384 || static_cast<long long>(H) * d != 2048 ||
      (causal && !top_left))
    return nullptr;
  for (const PublishedRate& r : kFlashAttention2H100)
    if (r.N == Lq && r.d == d && r.causal == causal) return &r;
  return nullptr;
}

}  // namespace attn
