// variants.cpp: chapter 06 in the registry. Three ways to run is_causal on chapter 05's best
// kernel: mask every tile, skip the tiles above the diagonal, and also balance the order.
#include <cstdio>

#include "05_flash_v2/flash_v2.h"
#include "causal.h"
#include "harness/registry.h"

namespace {
using namespace attn;

// K and V are read once per visited (Q tile, K/V tile) pair; Q read and O written once.
double causal_bytes(const Problem& p, bool skip) {
  const ch05::Tiles t = ch05::pipelined_tiles(p.d);
  AttentionParams a{};
  a.Lq = p.Lq, a.Lk = p.Lk, a.causal = p.causal;
  double tiles = 0;
  for (int q0 = 0; q0 < p.Lq; q0 += t.Br) tiles += skip ? ch06::tiles_to_visit(a, q0, t.Br, t.Bc) : (p.Lk + t.Bc - 1) / t.Bc;
  return static_cast<double>(p.heads()) * dtype_size(p.dtype) * p.d * (2.0 * p.Lq + 2.0 * t.Bc * tiles);
}
std::string tiles_plan(const Problem& p) {
  const ch05::Tiles t = ch05::pipelined_tiles(p.d);
  AttentionParams a{};
  a.Lq = p.Lq, a.Lk = p.Lk, a.causal = p.causal;
  long long visited = 0, all = 0;
  for (int q0 = 0; q0 < p.Lq; q0 += t.Br) {
    visited += ch06::tiles_to_visit(a, q0, t.Br, t.Bc);
    all += (p.Lk + t.Bc - 1) / t.Bc;
  }
  char s[160];
  std::snprintf(s, sizeof s, "Br = %d, Bc = %d: %lld of %lld (Q tile, K/V tile) pairs visited per head", t.Br, t.Bc, visited, all);
  return s;
}
HeadDims tensor_core_dims() {
  const auto& d = ch05::kTensorCoreDims;
  return HeadDims{.list = {d[0], d[1], d[2], d[3], d[4]}};
}

const Register mask_every_tile({
    .chapter = "06_causal",
    .name = "mask_every_tile",
    .description = "chapter 05's pipelined kernel: every K/V tile loaded, multiplied and masked key by key",
    .dtypes = {DType::fp16, DType::bf16},
    .head_dims = tensor_core_dims(),
    .writes_lse = true,
    .max_heads = 65535,
    .hbm_bytes = [](const Problem& p) { return causal_bytes(p, false); },
    .cpu_flops_per_second = 8e8,
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2, causal by masking", [&] { return ch05::pipelined(p); }); },
});

const Register skip_tiles({
    .chapter = "06_causal",
    .name = "skip_tiles",
    .description = "K/V tiles above the diagonal skipped; only the diagonal tiles masked",
    .dtypes = {DType::fp16, DType::bf16},
    .head_dims = tensor_core_dims(),
    .writes_lse = true,
    .max_heads = 65535,
    .hbm_bytes = [](const Problem& p) { return causal_bytes(p, true); },
    .cpu_flops_per_second = 8e8,
    .plan = tiles_plan,
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2, tiles skipped", [&] { return ch06::skip_tiles(p, false); }); },
});

const Register balanced({
    .chapter = "06_causal",
    .name = "balanced",
    .description = "tiles skipped, and the heaviest Q tiles launched first so the last wave is short",
    .dtypes = {DType::fp16, DType::bf16},
    .head_dims = tensor_core_dims(),
    .writes_lse = true,
    .best = true,
    .hbm_bytes = [](const Problem& p) { return causal_bytes(p, true); },
    .cpu_flops_per_second = 8e8,
    .plan = tiles_plan,
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2, heaviest first", [&] { return ch06::skip_tiles(p, true); }); },
});

}  // namespace
