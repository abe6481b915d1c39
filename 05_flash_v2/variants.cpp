// variants.cpp: chapter 05 in the registry.
#include <cstdio>

#include "flash_v2.h"
#include "harness/registry.h"

namespace {
using namespace attn;

// FlashAttention-2 reads Q and writes O once, and reads K and V once per Q tile of Br rows.
double fa2_bytes(const Problem& p, int Br) {
  const double t = dtype_size(p.dtype), heads = static_cast<double>(p.heads()), Tr = (p.Lq + Br - 1) / Br;
  return heads * t * (2.0 * p.Lq * p.d + Tr * 2.0 * p.Lk * p.d);
}
HeadDims dims(const int (&list)[5]) { return HeadDims{.list = {list[0], list[1], list[2], list[3], list[4]}}; }

const Register split_k({
    .chapter = "05_flash_v2",
    .name = "split_k",
    .description = "FA2's loop order on CUDA cores: a block per Q tile, O in registers; warps split each K/V tile",
    .head_dims = dims(ch05::kCudaCoreDims),
    .writes_lse = true,
    .max_heads = 65535,
    .hbm_bytes = [](const Problem& p) { return fa2_bytes(p, 32); },
    .cpu_flops_per_second = 8e8,
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2 (split K)", [&] { return ch05::split_k(p); }); },
});

const Register split_q({
    .chapter = "05_flash_v2",
    .name = "split_q",
    .description = "warps split Q, not K: each thread a row, every key; no reduction across warps",
    .head_dims = dims(ch05::kCudaCoreDims),
    .writes_lse = true,
    .max_heads = 65535,
    .hbm_bytes = [](const Problem& p) { return fa2_bytes(p, 128); },
    .cpu_flops_per_second = 8e8,
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2 (split Q)", [&] { return ch05::split_q(p); }); },
});

const Register tensor_cores({
    .chapter = "05_flash_v2",
    .name = "tensor_cores",
    .description = "mma.sync m16n8k16 for both products, ldmatrix operands, P kept in registers",
    .dtypes = {DType::fp16, DType::bf16},
    .head_dims = dims(ch05::kTensorCoreDims),
    .writes_lse = true,
    .max_heads = 65535,
    .hbm_bytes = [](const Problem& p) { return fa2_bytes(p, 64); },
    .cpu_flops_per_second = 8e8,
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2 (mma.sync)", [&] { return ch05::tensor_cores(p); }); },
});

const Register pipelined({
    .chapter = "05_flash_v2",
    .name = "pipelined",
    .description = "cp.async double buffering of K/V, swizzled shared memory, ldmatrix.x4, tiles per head dim",
    .dtypes = {DType::fp16, DType::bf16},
    .head_dims = dims(ch05::kTensorCoreDims),
    .writes_lse = true,
    .max_heads = 65535,
    .best = true,
    .hbm_bytes = [](const Problem& p) { return fa2_bytes(p, ch05::pipelined_tiles(p.d).Br); },
    .cpu_flops_per_second = 8e8,
    .plan =
        [](const Problem& p) {
          const ch05::Tiles t = ch05::pipelined_tiles(p.d);
          char s[160];
          std::snprintf(s, sizeof s, "Br = %d, Bc = %d, %d cp.async stages, %s shared memory", t.Br, t.Bc, t.stages,
                        p.d % 64 == 0 ? "swizzled" : "padded");
          return std::string(s);
        },
    .run = [](const AttentionParams& p, Stages& st) { st.run("FlashAttention-2 (pipelined)", [&] { return ch05::pipelined(p); }); },
});

}  // namespace
