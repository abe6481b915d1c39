// variants.cpp: chapter 03 in the registry. Every variant computes S = Q K^T with chapter 01's
// register-blocked GEMM (step c); the online softmax replaces chapter 02's, and then takes P V in with it.
#include <algorithm>

#include "01_naive_attention/cost_model.h"
#include "01_naive_attention/naive.h"
#include "harness/registry.h"
#include "tiled_softmax.h"

namespace {
using namespace attn;

using cost::gemm1_bytes, cost::in_bytes, cost::nn;
AttentionParams unscaled(const AttentionParams& p) {
  AttentionParams u = p;
  u.scale = 1.f;
  return u;
}
// Each block of the fused kernel (4 query rows) reads all of V once.
double fused_bytes(const AttentionParams& p) { return 4 * nn(p) + ((p.Lq + 3) / 4) * in_bytes(p, p.Lk) + in_bytes(p, p.Lq); }

const Register online({
    .chapter = "03_tiled_softmax",
    .name = "online_softmax",
    .description = "the row's max and sum in one pass (the split-softmax identity), then P; S read twice",
    .smem_bytes = [](const Problem& p) {  // its GEMMs'
      return std::max(ch01::blocked_scores_smem_bytes(p.Lk), ch01::blocked_pv_smem_bytes(p.d));
    },
    .workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p)) * 2 * sizeof(float); },
    .hbm_bytes = [](const Problem& p) { return p.qkvo_bytes() + nn(p) * sizeof(float) * 5; },
    .cpu_flops_per_second = 6e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          float* S = static_cast<float*>(p.workspace);
          float* P = S + static_cast<size_t>(nn(p));
          st.run("S = QK^T", [&] { return ch01::blocked_scores(unscaled(p), S); }, gemm1_bytes(p));
          st.run("P = online softmax(scale*S)", [&] { return ch03::online_softmax(p, S, P); }, 4 * nn(p) * 3);
          st.run("O = PV", [&] { return ch01::blocked_pv(p, P); }, cost::gemm2_bytes(p));
        },
});

const Register fused({
    .chapter = "03_tiled_softmax",
    .name = "fused_softmax_pv",
    .description = "softmax and PV in one kernel, tile by tile, O rescaled as the max grows: P never stored",
    .writes_lse = true,
    .max_heads = 65535,
    .smem_bytes =
        [](const Problem& p) {
          return std::max(ch01::blocked_scores_smem_bytes(p.Lk), ch03::fused_smem_bytes(p.d));
        },
    .workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p)) * sizeof(float); },
    // Q, K and O once; S written and read once; V read by every block of 4 rows (from L2, often:
    // this counts every read as device-memory traffic, an upper bound).
    .hbm_bytes =
        [](const Problem& p) {
          const double v = static_cast<double>(p.heads()) * p.Lk * p.d * dtype_size(p.dtype);
          return p.qkvo_bytes() - v + nn(p) * sizeof(float) * 2 + ((p.Lq + 3) / 4) * v;
        },
    .cpu_flops_per_second = 6e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          float* S = static_cast<float*>(p.workspace);
          st.run("S = QK^T", [&] { return ch01::blocked_scores(unscaled(p), S); }, gemm1_bytes(p));
          st.run("O = softmax(scale*S) V", [&] { return ch03::fused_softmax_pv(p, S); }, fused_bytes(p));
        },
});

// Each block of 128 rows reads all of V once, and each 128 columns of O read S once.
double blocked_bytes(const AttentionParams& p) {
  const int column_tiles = p.d <= 64 ? 1 : (p.d + 127) / 128;
  return 4 * nn(p) * column_tiles + ((p.Lq + 127) / 128) * in_bytes(p, p.Lk) + in_bytes(p, p.Lq);
}

const Register blocked({
    .chapter = "03_tiled_softmax",
    .name = "blocked_softmax_pv",
    .description = "step b's online softmax where chapter 01's register-blocked GEMM stages P: 8 x 8 outputs per thread",
    .writes_lse = true,
    .best = true,
    .smem_bytes =
        [](const Problem& p) {
          return std::max(ch01::blocked_scores_smem_bytes(p.Lk), ch03::blocked_smem_bytes(p.d));
        },
    .workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p)) * sizeof(float); },
    // Q, K and O once; S written once and read once per 128 columns of O; V read by every block
    // of 128 rows (from L2, often: counted here as device-memory traffic, an upper bound).
    .hbm_bytes =
        [](const Problem& p) {
          const double v = static_cast<double>(p.heads()) * p.Lk * p.d * dtype_size(p.dtype);
          const int column_tiles = p.d <= 64 ? 1 : (p.d + 127) / 128;
          return p.qkvo_bytes() - v + nn(p) * sizeof(float) * (1 + column_tiles) + ((p.Lq + 127) / 128) * v;
        },
    .cpu_flops_per_second = 6e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          float* S = static_cast<float*>(p.workspace);
          st.run("S = QK^T", [&] { return ch01::blocked_scores(unscaled(p), S); }, gemm1_bytes(p));
          st.run("O = softmax(scale*S) V", [&] { return ch03::blocked_softmax_pv(p, S); }, blocked_bytes(p));
        },
});

}  // namespace
