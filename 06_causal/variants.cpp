// variants.cpp: chapter 06 in the registry. Three ways to run is_causal on chapter 05's fast step
// (lean_loop): mask every tile, skip the tiles above the diagonal, and also balance the order.
#include <cstdio>

#include "05_flash_v2/flash_v2.h"
#include "causal.h"
#include "harness/registry.h"

namespace {
using namespace attn;

// The (Q tile, K/V tile) pairs a head visits, with or without skipping.
long long visited_pairs(const Problem& p, bool skip) {
  const ch05::Tiles t = ch05::fa2_tiles(p.d);
  AttentionParams a{};
  a.Lq = p.Lq, a.Lk = p.Lk, a.causal = p.causal;
  return ch06::visited_pairs(a, t.Br, t.Bc, skip);
}
// K and V are read once per visited pair; Q read and O written once.
double causal_bytes(const Problem& p, bool skip) {
  return p.fa2_bytes_visited(visited_pairs(p, skip), ch05::fa2_tiles(p.d).Bc);
}
std::string tiles_plan(const Problem& p) {
  const ch05::Tiles t = ch05::fa2_tiles(p.d);
  char s[160];
  std::snprintf(s, sizeof s, "Br = %d, Bc = %d: %lld of %lld (Q tile, K/V tile) pairs visited per head", t.Br, t.Bc,
                visited_pairs(p, true), visited_pairs(p, false));
  return s;
}

// What the three share: chapter 05's dtypes and head dims, lse written, the emulator's pace.
Variant causal_variant(const char* name, const char* description, bool skip,
                       std::function<cudaError_t(const AttentionParams&)> kernel, const char* stage) {
  Variant v{.chapter = "06_causal", .name = name, .description = description};
  v.dtypes = {DType::fp16, DType::bf16};
  v.head_dims.list = as_vector(ch05::TensorCoreDims{});
  v.min_cc = 80;  // chapter 05's lean_loop: mma.sync m16n8k16, cp.async
  v.smem_bytes = [](const Problem& p) {
    return static_cast<size_t>(ch05::smem_bytes(ch05::Step::lean_loop, p.d, dtype_size(p.dtype)));
  };
  v.writes_lse = true;
  v.cpu_flops_per_second = 8e8;
  v.hbm_bytes = [skip](const Problem& p) { return causal_bytes(p, skip); };
  if (skip) v.plan = tiles_plan;
  v.run = [kernel, stage = std::string(stage)](const AttentionParams& p, Stages& st) {
    st.run(stage, [&] { return kernel(p); });
  };
  return v;
}
// A grid row per head, (Q tiles, heads): every launch of this chapter but balanced's with is_causal
// (heads on x). Balanced runs its other problems (no is_causal, an attn_mask) on that grid too.
Variant limited(Variant v) {
  v.max_heads = 65535;
  return v;
}
Variant as_best(Variant v) {
  v.best = true;
  return v;
}

const Register mask_every_tile(limited(
    causal_variant("mask_every_tile", "chapter 05's lean_loop: every K/V tile loaded, multiplied and masked key by key",
                   false, ch05::lean_loop, "FlashAttention-2, causal by masking")));
const Register skip_tiles(limited(causal_variant(
    "skip_tiles", "K/V tiles above the diagonal skipped; only the diagonal tiles masked", true,
    [](const AttentionParams& p) { return ch06::skip_tiles(p, false); }, "FlashAttention-2, tiles skipped")));
const Register balanced(limited(as_best(causal_variant(
    "balanced", "tiles skipped, and the heaviest Q tiles launched first so the last wave is short", true,
    [](const AttentionParams& p) { return ch06::skip_tiles(p, true); }, "FlashAttention-2, heaviest first"))));

}  // namespace
