// variants.cpp: chapter 05 in the registry: its eight steps, and what differs between them.
#include <cstdio>

#include "flash_v2.h"
#include "harness/registry.h"

namespace {
using namespace attn;

int fast_br(const Problem& p) { return ch05::fa2_tiles(p.d).Br; }

// What every step shares: the chapter, lse written, one grid row per head, the emulator's pace, and
// its shared memory (flash_v2.h). The tensor-core steps need sm_80 (mma.sync m16n8k16, bf16, cp.async).
Variant step(const char* name, const char* description, cudaError_t (*kernel)(const AttentionParams&),
             int (*Br)(const Problem&), ch05::Step id) {
  Variant v{.chapter = "05_flash_v2", .name = name, .description = description};
  v.smem_bytes = [id](const Problem& p) { return static_cast<size_t>(ch05::smem_bytes(id, p.d, dtype_size(p.dtype))); };
  if (id != ch05::Step::split_k && id != ch05::Step::split_q) {
    v.dtypes = {DType::fp16, DType::bf16};
    v.head_dims.list = as_vector(ch05::TensorCoreDims{});
    v.min_cc = 80;
  } else {
    v.head_dims.list = as_vector(ch05::CudaCoreDims{});
  }
  v.writes_lse = true;
  v.max_heads = 65535;
  v.cpu_flops_per_second = 8e8;
  v.hbm_bytes = [Br](const Problem& p) { return p.fa2_bytes(Br(p)); };
  const std::string stage = std::string("FlashAttention-2 (") + name + ")";
  v.run = [kernel, stage](const AttentionParams& p, Stages& st) { st.run(stage, [&] { return kernel(p); }); };
  return v;
}
Variant with_formerly(Variant v, std::vector<std::string> names) {
  v.formerly = std::move(names);
  return v;
}
Variant as_best(Variant v) {
  v.best = true;
  v.plan = [](const Problem& p) {
    const ch05::Tiles t = ch05::fa2_tiles(p.d);
    char s[160];
    std::snprintf(s, sizeof s, "Br = %d (%d rows per warp), Bc = %d, %d cp.async stages, %s shared memory", t.Br,
                  16 * t.m_tiles, t.Bc, t.stages, p.d % 64 == 0 ? "swizzled" : "padded");
    return std::string(s);
  };
  return v;
}

constexpr auto br32 = [](const Problem&) { return 32; };
constexpr auto br64 = [](const Problem&) { return ch05::kBr; };
constexpr auto br128 = [](const Problem&) { return 128; };

const Register a(step("split_k",
                      "FA2's loop order on CUDA cores: a block per Q tile, O in registers; warps split each K/V tile",
                      ch05::split_k, br32, ch05::Step::split_k));
const Register b(step("split_q", "warps split Q, not K: each thread a row, every key; no reduction across warps",
                      ch05::split_q, br128, ch05::Step::split_q));
const Register c(step("tensor_cores", "mma.sync m16n8k16 for both products, ldmatrix operands, P kept in registers",
                      ch05::tensor_cores, br64, ch05::Step::tensor_cores));
const Register d(step("cp_async", "K/V tiles copied by cp.async into two stages while the other is computed on",
                      ch05::cp_async, br64, ch05::Step::cp_async));
const Register e(step("swizzle", "swizzled shared-memory layout instead of padded rows", ch05::swizzle, br64, ch05::Step::swizzle));
const Register f(with_formerly(step("ldmatrix_x4",
                                    "one ldmatrix.x4 per two 8-column tiles of K and V (the former pipelined)",
                                    ch05::ldmatrix_x4, br64, ch05::Step::ldmatrix_x4),
                               {"pipelined"}));
const Register g(step("rows_32", "32 query rows per warp: every K/V fragment feeds 4 mma; tiles per head dim",
                      ch05::rows_32, fast_br, ch05::Step::rows_32));
const Register h(
    as_best(step("lean_loop",
                 "the inner loop lean: unrolled copies, zero-fill and mask on the last tile only, scale in "
                 "exp2's FFMA, ex2.approx.ftz",
                 ch05::lean_loop, fast_br, ch05::Step::lean_loop)));

}  // namespace
