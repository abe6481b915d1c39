// variants.cpp: chapter 03 in the registry. Both variants compute S = Q K^T with chapter 01's
// GEMM kernel; the online softmax replaces chapter 02's, and then takes P V in with it.
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
    .workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p)) * 2 * sizeof(float); },
    .hbm_bytes = [](const Problem& p) { return p.qkvo_bytes() + nn(p) * sizeof(float) * 5; },
    .cpu_flops_per_second = 6e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          float* S = static_cast<float*>(p.workspace);
          float* P = S + static_cast<size_t>(nn(p));
          st.run("S = QK^T", [&] { return ch01::scores(unscaled(p), S); }, gemm1_bytes(p));
          st.run("P = online softmax(scale*S)", [&] { return ch03::online_softmax(p, S, P); }, 4 * nn(p) * 3);
          st.run("O = PV", [&] { return ch01::pv(p, P); }, cost::gemm2_bytes(p));
        },
});

const Register fused({
    .chapter = "03_tiled_softmax",
    .name = "fused_softmax_pv",
    .description = "softmax and PV in one kernel, tile by tile, O rescaled as the max grows: P never stored",
    .writes_lse = true,
    .max_heads = 65535,
    .best = true,
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
          st.run("S = QK^T", [&] { return ch01::scores(unscaled(p), S); }, gemm1_bytes(p));
          st.run("O = softmax(scale*S) V", [&] { return ch03::fused_softmax_pv(p, S); }, fused_bytes(p));
        },
});

}  // namespace
