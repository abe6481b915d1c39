// variants.cpp: chapter 02 in the registry. Every variant runs chapter 01's register-blocked GEMMs
// (step c; the first with scale 1: the softmax now scales) around one of this chapter's softmax kernels,
// so the steps differ only in the softmax, and the per-kernel breakdown shows its share fall.
#include <algorithm>

#include "01_naive_attention/cost_model.h"
#include "01_naive_attention/naive.h"
#include "fused_softmax.h"
#include "harness/registry.h"

namespace {
using namespace attn;
using Softmax = cudaError_t (*)(const AttentionParams&, const float*, float*);

using cost::gemm1_bytes, cost::gemm2_bytes, cost::nn;
// P starts on a 16-byte boundary after S, so that rows of S and P share their alignment (the
// vectorized kernels need it).
size_t p_offset(double elements) { return (static_cast<size_t>(elements) + 3) / 4 * 4; }

// The bytes each stage moves: the GEMMs as in chapter 01 (cost_model.h); the softmax reads S and
// writes P, reading S again in each later pass when the row is not kept on chip.
double softmax_bytes(int reads_of_S, const AttentionParams& p) { return 4 * nn(p) * (reads_of_S + 1); }

// pad: the floats a kept row is padded by (-1: the row is not kept, and the softmax's block asks for
// no shared memory).
Variant step(const char* name, const char* description, Softmax softmax, int pad, bool best = false) {
  const bool keeps_row = pad >= 0;
  Variant v;
  v.chapter = "02_fused_softmax";
  v.name = name;
  v.description = description;
  v.best = best;
  // The GEMMs' blocks and the softmax's: the larger.
  v.smem_bytes = [pad](const Problem& p) {
    return std::max({ch01::blocked_scores_smem_bytes(p.Lk), ch01::blocked_pv_smem_bytes(p.d),
                     pad < 0 ? size_t{0} : ch02::row_smem_bytes(p.Lk, pad)});
  };
  v.workspace_bytes = [](const Problem& p) { return (p_offset(nn(p)) + static_cast<size_t>(nn(p))) * sizeof(float); };
  v.hbm_bytes = [keeps_row](const Problem& p) {
    const int reads = keeps_row && ch02::row_fits_on_chip(p.Lk) ? 1 : 3;
    return p.qkvo_bytes() + nn(p) * sizeof(float) * (1 + reads + 1 + 1);
  };
  v.cpu_flops_per_second = 6e8;
  v.run = [softmax, keeps_row](const AttentionParams& p, Stages& st) {
    float* S = static_cast<float*>(p.workspace);
    float* P = S + p_offset(nn(p));
    AttentionParams unscaled = p;
    unscaled.scale = 1.f;
    const int reads = keeps_row && ch02::row_fits_on_chip(p.Lk) ? 1 : 3;
    st.run("S = QK^T", [&] { return ch01::blocked_scores(unscaled, S); }, gemm1_bytes(p));
    st.run("P = softmax(scale*S)", [&] { return softmax(p, S, P); }, softmax_bytes(reads, p));
    st.run("O = PV", [&] { return ch01::blocked_pv(p, P); }, gemm2_bytes(p));
  };
  return v;
}

const Register a(step("warp_per_row", "a warp per row: coalesced passes, shuffle reductions; scale and mask fused",
                      ch02::softmax_warp, -1));
const Register b(step("block_per_row", "a block per row, kept in shared memory: S read once, P written once",
                      ch02::softmax_block, 0));
const Register c(step("vectorized", "the block per row with 128-bit loads and stores", ch02::softmax_vec4, 4));
const Register d(step("exp2", "exp2f with log2(e) folded into the scale", ch02::softmax_exp2, 4, true));

}  // namespace
