// variants.cpp: chapter 04 in the registry.
#include <cstdio>

#include "flash_v1.h"
#include "harness/registry.h"

namespace {
using namespace attn;

// O_acc, then l, then m, all fp32: the O(B * H * N) state FlashAttention keeps in global memory
// (O_acc has d floats per row; in fp32 inputs it could be O itself).
size_t rows(const Problem& p) { return p.heads() * static_cast<size_t>(p.Lq); }
size_t workspace(const Problem& p) { return rows(p) * (static_cast<size_t>(p.d) + 2) * sizeof(float); }
struct State {
  float *O, *l, *m;
};
State state(const AttentionParams& p) {
  float* O = static_cast<float*>(p.workspace);
  float* l = O + static_cast<size_t>(p.B) * p.H * p.Lq * p.d;
  return {O, l, l + static_cast<size_t>(p.B) * p.H * p.Lq};
}

// The bytes Algorithm 1 moves: O, l and m initialized; K and V once; for each of the Tc K/V
// tiles, Q and O (read and written, fp32) and l and m (read and written) of every row; at the
// end O read and written in the inputs' type, and the lse.
double flash_v1_bytes(const Problem& p, int Bc) {
  const double t = dtype_size(p.dtype), Tc = (p.Lk + Bc - 1) / Bc, heads = static_cast<double>(p.heads());
  const double init = p.Lq * (p.d + 2.0) * 4, per_pass = p.Lq * (p.d * t + 2.0 * p.d * 4 + 4 * 4);
  return heads * (init + 2.0 * p.Lk * p.d * t + Tc * per_pass + p.Lq * (p.d * (4 + t) + 4));
}

const Register algorithm1({
    .chapter = "04_flash_v1",
    .name = "algorithm1",
    .description = "FlashAttention's Algorithm 1 as written: Bc, Br from M; K/V outer loop; O, l, m in HBM",
    .writes_lse = true,
    .smem_bytes = [](const Problem& p) { return ch04::algorithm1_blocks(p.d).smem_bytes; },
    .workspace_bytes = workspace,
    .hbm_bytes = [](const Problem& p) { return flash_v1_bytes(p, ch04::algorithm1_blocks(p.d).Bc); },
    .cpu_flops_per_second = 4e8,
    .plan =
        [](const Problem& p) {
          const ch04::Blocks b = ch04::algorithm1_blocks(p.d);
          char s[200];
          if (b.M == b.M_device)
            std::snprintf(s, sizeof s, "M = %d floats of shared memory: Bc = ceil(M/4d) = %d, Br = min(Bc, d) = %d, Tc = %d, Tr = %d",
                          b.M, b.Bc, b.Br, (p.Lk + b.Bc - 1) / b.Bc, (p.Lq + b.Br - 1) / b.Br);
          else
            std::snprintf(s, sizeof s,
                          "shared memory: %d floats; M = %d (what S_ij and the row vectors leave): Bc = ceil(M/4d) = %d, "
                          "Br = min(Bc, d) = %d, Tc = %d, Tr = %d",
                          b.M_device, b.M, b.Bc, b.Br, (p.Lk + b.Bc - 1) / b.Bc, (p.Lq + b.Br - 1) / b.Br);
          return std::string(s);
        },
    .run =
        [](const AttentionParams& p, Stages& st) {
          const State s = state(p);
          st.run("FlashAttention, Algorithm 1", [&] { return ch04::algorithm1(p, s.O, s.l, s.m); });
        },
});

const Register row_per_thread({
    .chapter = "04_flash_v1",
    .name = "row_per_thread",
    .description = "FA1's kernel structure (a block per (batch, head), K/V tiles outer), a row of Q per thread",
    .writes_lse = true,
    .smem_bytes = [](const Problem& p) { return ch04::row_per_thread_smem_bytes(p.d); },
    .workspace_bytes = workspace,
    .hbm_bytes = [](const Problem& p) { return flash_v1_bytes(p, ch04::kTile); },
    .cpu_flops_per_second = 6e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          const State s = state(p);
          st.run("FlashAttention, a row per thread", [&] { return ch04::row_per_thread(p, s.O, s.l, s.m); });
        },
});

const Register register_tiles({
    .chapter = "04_flash_v1",
    .name = "register_tiles",
    .description = "the same structure with chapter 01's register-blocked tiles: 8 x 8 of S_ij and O_i per thread",
    .head_dims = {.max = ch04::kRegisterTilesMaxD},
    .writes_lse = true,
    .smem_bytes = [](const Problem& p) { return ch04::register_tiles_smem_bytes(p.d); },
    .workspace_bytes = [](const Problem& p) { return ch04::register_tiles_state_bytes(p.heads(), p.Lq, p.d); },
    .hbm_bytes = [](const Problem& p) { return flash_v1_bytes(p, p.d <= 64 ? 64 : 128); },
    .cpu_flops_per_second = 8e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          st.run("FlashAttention, register tiles", [&] { return ch04::register_tiles(p, p.workspace); });
        },
});

// Q, K and V read, O and the lse written: K and V once per Q tile of 128 rows.
double o_in_registers_bytes(const Problem& p) {
  const double t = dtype_size(p.dtype), heads = static_cast<double>(p.heads()), Tr = (p.Lq + 127) / 128;
  return heads * (p.Lq * p.d * t * 2 + Tr * 2.0 * p.Lk * p.d * t + 4.0 * p.Lq);
}

const Register o_in_registers({
    .chapter = "04_flash_v1",
    .name = "o_in_registers",
    .description = "step c with the loops swapped inside the block: Q tiles outer, O_i, l and m stay in registers",
    .head_dims = {.max = ch04::kRegisterTilesMaxD},
    .writes_lse = true,
    .best = true,
    .smem_bytes = [](const Problem& p) { return ch04::o_in_registers_smem_bytes(p.d); },
    .hbm_bytes = o_in_registers_bytes,
    .cpu_flops_per_second = 8e8,
    .run =
        [](const AttentionParams& p, Stages& st) {
          st.run("FlashAttention, O in registers", [&] { return ch04::o_in_registers(p); });
        },
});

}  // namespace
