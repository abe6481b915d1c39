// variants.cpp: chapter 01 in the registry.
#include <algorithm>

#include "cost_model.h"
#include "harness/registry.h"
#include "naive.h"

namespace {
using namespace attn;
using cost::nn;
float* S_of(const AttentionParams& p) { return static_cast<float*>(p.workspace); }
void* P_of(const AttentionParams& p) { return S_of(p) + static_cast<size_t>(p.B) * p.H * p.Lq * p.Lk; }

// The three steps share the softmax (chapter 02's subject) and differ in the two products.
using Product = cudaError_t (*)(const AttentionParams&, float*);
using ProductPV = cudaError_t (*)(const AttentionParams&, const float*);
// smem: the shared memory one block of its products asks for (the softmax's block asks for none).
Variant step(const char* name, const char* description, Product scores, ProductPV pv,
             std::function<size_t(const Problem&)> smem, bool best = false) {
  Variant v;
  v.chapter = "01_naive_attention";
  v.name = name;
  v.description = description;
  v.best = best;
  v.smem_bytes = std::move(smem);
  v.workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p)) * 2 * sizeof(float); };
  // S written once and read three times by the softmax, P written once and read once.
  v.hbm_bytes = [](const Problem& p) { return p.qkvo_bytes() + nn(p) * sizeof(float) * 6; };
  v.cpu_flops_per_second = 6e8;
  v.run = [scores, pv](const AttentionParams& p, Stages& st) {
    // Each stage with the bytes it must move: S read three times by the softmax.
    st.run("S = scale*QK^T", [&] { return scores(p, S_of(p)); }, cost::gemm1_bytes(p));
    st.run("P = softmax(S)", [&] { return ch01::softmax_rows(p, S_of(p), P_of(p), false); }, 4 * nn(p) * 4);
    st.run("O = PV", [&] { return pv(p, static_cast<const float*>(P_of(p))); }, cost::gemm2_bytes(p));
  };
  return v;
}

const Register naive(step("naive",
                          "three kernels: S = scale*QK^T, a three-pass softmax per row, O = PV; S and P in global memory",
                          ch01::scores, ch01::pv, [](const Problem&) { return size_t{0}; }));
const Register smem_tiles(step("smem_tiles", "both products from 32 x 32 tiles in shared memory: inputs read once per tile",
                               ch01::tiled_scores, ch01::tiled_pv, [](const Problem&) { return ch01::tiled_smem_bytes(); }));
const Register register_blocked(step("register_blocked",
                                     "both products register-blocked: 8 x 8 outputs per thread, 128-bit shared loads",
                                     ch01::blocked_scores, ch01::blocked_pv,
                                     [](const Problem& p) {
                                       return std::max(ch01::blocked_scores_smem_bytes(p.Lk), ch01::blocked_pv_smem_bytes(p.d));
                                     },
                                     true));

#if FLASHSTEPS_GPU
const Register math_path({
    .chapter = "01_naive_attention",
    .name = "math_path",
    .description = "the yardstick: cuBLAS GEMMs around the same softmax, like PyTorch's math backend",
    .workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p) * (sizeof(float) + dtype_size(p.dtype))); },
    .hbm_bytes = [](const Problem& p) { return p.qkvo_bytes() + nn(p) * (sizeof(float) * 4 + dtype_size(p.dtype) * 2); },
    .run =
        [](const AttentionParams& p, Stages& st) {
          const double t = static_cast<double>(dtype_size(p.dtype));
          st.run("S = scale*QK^T (cuBLAS)", [&] { return ch01::cublas_scores(p, S_of(p)); },
                 cost::gemm1_bytes(p));
          st.run("P = softmax(S)", [&] { return ch01::softmax_rows(p, S_of(p), P_of(p), true); }, nn(p) * (4 * 3 + t));
          st.run("O = PV (cuBLAS)", [&] { return ch01::cublas_pv(p, P_of(p)); }, nn(p) * t + cost::in_bytes(p, p.Lk) + cost::in_bytes(p, p.Lq));
        },
});
#endif

}  // namespace
