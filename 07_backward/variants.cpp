// variants.cpp: chapter 07 in the backward registry (harness/backward/backward.h): its five steps (and
// step d's deterministic option), the kernels each strings together, and their cost models.
//
// Cost models, per head, with t the inputs' bytes per element:
//   FLOPs   the convention (backward_flops: 5 products of 2 Lq Lk d on the visible pairs) is what
//           TFLOP/s divides; flops_executed is what the kernels multiply: every pair for steps a to
//           c (tiles padded to Br x Bc for b and c), the pairs visited for d and e, 7 products
//           instead of 5 for the deterministic option.
//   bytes   what the kernels must move to and from device memory, each input counted once per
//           time a kernel reads it from global memory; the fp32 atomics are counted apart (they
//           resolve in L2), and the accumulator they add to counts once zeroed and once read.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "06_causal/causal.h"
#include "backward.h"
#include "harness/backward/backward.h"

namespace {
using namespace attn;

AttentionParams params_of(const Problem& p) {
  AttentionParams a{};
  a.B = p.B, a.H = p.H, a.Lq = p.Lq, a.Lk = p.Lk, a.d = p.d, a.causal = p.causal;
  return a;
}
double heads(const Problem& p) { return static_cast<double>(p.heads()); }
double t_of(const Problem& p) { return static_cast<double>(dtype_size(p.dtype)); }

// (Q tile, K/V tile) pairs per head, and the query rows they hold (at most Lq per K/V tile): all
// of them, or only those step d visits under is_causal.
struct Pairs {
  double pairs = 0, rows = 0;
};
Pairs pairs(const Problem& p, int Br, int Bc, bool skip) {
  const AttentionParams a = params_of(p);
  const int Tr = (p.Lq + Br - 1) / Br;
  Pairs n;
  for (int k0 = 0; k0 < p.Lk; k0 += Bc) {
    const int first = skip ? ch07::first_q_tile(a, k0, Br) : 0;
    n.pairs += Tr - first;
    n.rows += p.Lq - std::min(p.Lq, first * Br);
  }
  return n;
}

// The workspace of steps b to e: D [B*H][Lq], then the fp32 accumulator of dQ [B*H][Lq][d].
float* D_of(const BackwardParams& p) { return static_cast<float*>(p.workspace); }
float* accum_of(const BackwardParams& p) { return D_of(p) + static_cast<size_t>(p.B) * p.H * p.Lq; }
size_t D_bytes(const Problem& p) { return p.heads() * static_cast<size_t>(p.Lq) * sizeof(float); }
size_t accum_bytes(const Problem& p) { return p.q_elems() * sizeof(float); }

// Bytes of the kernels around the main loop: D's pass (O, dO read, D written, and the accumulator
// zeroed when there is one) and dQ's conversion (accumulator read, dQ written).
double preprocess_bytes(const Problem& p, bool accum) {
  return heads(p) * (p.Lq * (2 * t_of(p) * p.d + 4) + (accum ? 4.0 * p.Lq * p.d : 0));
}
double convert_bytes(const Problem& p) { return heads(p) * p.Lq * p.d * (4 + t_of(p)); }
// The K/V-outer loop: K, V read and dK, dV written once; Q, dO, L, D read for every row a K/V tile
// visits.
double kv_outer_bytes(const Problem& p, const Pairs& n) {
  return heads(p) * (4 * t_of(p) * p.Lk * p.d + n.rows * (2 * t_of(p) * p.d + 8));
}

// Step a: P and dS [B*H][Lq][Lk] fp32, then D. Each kernel's bytes (Q, K, V, dO and L read once,
// each gradient written once, P and dS as below), for the per-kernel breakdown and their sum.
double nn(const Problem& p) { return heads(p) * p.Lq * p.Lk; }
struct MaterializedBytes {
  double p_from_lse, d, dv, ds, dq, dk;
  explicit MaterializedBytes(const Problem& p) {
    const double t = t_of(p), q = heads(p) * p.Lq * p.d, kv = heads(p) * p.Lk * p.d, rows = heads(p) * p.Lq;
    p_from_lse = t * (q + kv) + 4 * rows + 4 * nn(p);  // P written
    d = preprocess_bytes(p, false);
    dv = 4 * nn(p) + t * (q + kv);                      // P read
    ds = 8 * nn(p) + t * (q + kv) + 4 * rows;           // P read, dS written
    dq = 4 * nn(p) + t * (kv + q);                      // dS read
    dk = 4 * nn(p) + t * (q + kv);                      // dS read
  }
  double total() const { return p_from_lse + d + dv + ds + dq + dk; }
};
Problem shape_of(const BackwardParams& a) {
  Problem p;
  p.B = a.B, p.H = a.H, p.Lq = a.Lq, p.Lk = a.Lk, p.d = a.d, p.dtype = a.dtype;
  return p;
}
float* P_of(const BackwardParams& p) { return static_cast<float*>(p.workspace); }
float* dS_of(const BackwardParams& p) { return P_of(p) + static_cast<size_t>(p.B) * p.H * p.Lq * p.Lk; }
float* D_after_nn(const BackwardParams& p) { return dS_of(p) + static_cast<size_t>(p.B) * p.H * p.Lq * p.Lk; }

std::string tiles_plan(const Problem& p, int Br, int Bc, bool skip) {
  const Pairs n = pairs(p, Br, Bc, skip);
  const double all = static_cast<double>((p.Lq + Br - 1) / Br) * ((p.Lk + Bc - 1) / Bc);
  char s[200];
  std::snprintf(s, sizeof s, "Br = %d, Bc = %d: %.0f of %.0f (Q tile, K/V tile) pairs visited per head", Br, Bc, n.pairs, all);
  return s;
}

Variant info(const char* name, const char* description, bool tensor_cores) {
  Variant v{.chapter = "07_backward", .name = name, .description = description};
  if (tensor_cores) {
    v.dtypes = {DType::fp16, DType::bf16};
    v.head_dims.list = attn::as_vector(ch07::TensorCoreDims{});
    v.min_cc = 80;  // mma.sync m16n8k16, bf16
    v.smem_bytes = [](const Problem& p) { return ch07::mma_smem_bytes(p.d, static_cast<int>(dtype_size(p.dtype))); };
  }
  v.max_heads = 65535;  // a grid row of blocks per head
  // The emulator's pace per worker thread, in the convention's FLOPs, for the CPU time budget:
  // results/cpu-emulation-simt/backward.txt (03d53e1, load average 1.7) measured about 5.4e8 for
  // steps c to e, 6.5e8 for step a and 2.9e9 for step b at N = 256; its runs before (07320d7, a
  // load of 6 to 11) measured 1.2e8 to 1.3e8 and 6e8. The budget takes a pace between the two, so
  // that a run fits it on a loaded machine too. Every mma and ldmatrix is a warp-wide exchange
  // between fibers.
  v.cpu_flops_per_second = tensor_cores ? 3e8 : 4e8;
  return v;
}

// Steps b to e: D, the main loop, dQ's conversion; Br x Bc tiles.
BackwardVariant kv_outer_step(Variant v, int Br, int Bc, bool skip,
                              cudaError_t (*main_loop)(const BackwardParams&, const float*, float*), const char* stage) {
  BackwardVariant b{.info = std::move(v)};
  b.info.workspace_bytes = [](const Problem& p) { return D_bytes(p) + accum_bytes(p); };
  b.info.hbm_bytes = [=](const Problem& p) {
    return preprocess_bytes(p, true) + kv_outer_bytes(p, pairs(p, Br, Bc, skip)) + convert_bytes(p);
  };
  b.info.plan = [=](const Problem& p) { return tiles_plan(p, Br, Bc, skip); };
  b.flops_executed = [=](const Problem& p) { return 10.0 * p.d * Br * Bc * heads(p) * pairs(p, Br, Bc, skip).pairs; };
  b.atomics = [=](const Problem& p) { return heads(p) * pairs(p, Br, Bc, skip).rows * p.d; };
  b.run = [=](const BackwardParams& p, Stages& st) {
    st.run("D = rowsum(dO o O), dQ acc = 0", [&] { return ch07::preprocess(p, D_of(p), accum_of(p)); });
    st.run(stage, [&] { return main_loop(p, D_of(p), accum_of(p)); });
    st.run("dQ = scale * dQ acc", [&] { return ch07::convert_dq(p, accum_of(p)); });
  };
  return b;
}

const RegisterBackward materialized({
    .info = [] {
      Variant v = info("materialized", "the formulas, a kernel each: P recomputed from L, P and dS N x N in global memory", false);
      v.workspace_bytes = [](const Problem& p) { return static_cast<size_t>(nn(p)) * 2 * sizeof(float) + D_bytes(p); };
      // P written once, read by dV and dS; dS written once, read by dQ and dK: 24 bytes per score.
      v.hbm_bytes = [](const Problem& p) { return MaterializedBytes(p).total(); };
      return v;
    }(),
    .flops_executed = [](const Problem& p) { return 10.0 * p.d * nn(p); },
    .run =
        [](const BackwardParams& p, Stages& st) {
          const MaterializedBytes bytes(shape_of(p));
          st.run("P = exp(S - L)", [&] { return ch07::p_from_lse(p, P_of(p)); }, bytes.p_from_lse);
          st.run("D = rowsum(dO o O)", [&] { return ch07::preprocess(p, D_after_nn(p), nullptr); }, bytes.d);
          st.run("dV = P^T dO", [&] { return ch07::dv_from_p(p, P_of(p)); }, bytes.dv);
          st.run("dS = P o (dO V^T - D)", [&] { return ch07::ds_from_p(p, P_of(p), D_after_nn(p), dS_of(p)); }, bytes.ds);
          st.run("dQ = scale dS K", [&] { return ch07::dq_from_ds(p, dS_of(p)); }, bytes.dq);
          st.run("dK = scale dS^T Q", [&] { return ch07::dk_from_ds(p, dS_of(p)); }, bytes.dk);
        },
});

const RegisterBackward kv_outer(kv_outer_step(
    [] {
      Variant v = info("kv_outer", "FA2's Algorithm 2 on CUDA cores: a block per K/V tile, dK dV on chip, dQ by fp32 atomics",
                       false);
      v.head_dims.list = attn::as_vector(ch07::CudaCoreDims{});
      v.smem_bytes = [](const Problem& p) { return ch07::kv_outer_smem_bytes(p.d); };
      v.cpu_flops_per_second = 1.5e9;  // no warp collectives
      return v;
    }(),
    ch07::kKvOuterBr, ch07::kKvOuterBc, false, ch07::kv_outer, "dK, dV, dQ acc (K/V outer)"));

const RegisterBackward tensor_cores(kv_outer_step(
    info("tensor_cores", "the five products on mma.sync: S^T and dP^T per warp, P^T and dS^T as A fragments", true),
    ch07::kMmaBr, ch07::kMmaBc, false, ch07::tensor_cores, "dK, dV, dQ acc (mma.sync)"));

const RegisterBackward causal(kv_outer_step(
    [] {
      Variant v = info("causal", "Q tiles above the causal diagonal skipped, masks only where a tile needs one", true);
      return v;
    }(),
    ch07::kMmaBr, ch07::kMmaBc, true, ch07::causal, "dK, dV, dQ acc (tiles skipped)"));

const RegisterBackward deterministic({
    .info = [] {
      Variant v = info("deterministic",
                       "dQ in a pass of its own (Q outer, K/V tiles past the diagonal skipped): no atomics, "
                       "bit-identical from run to run",
                       true);
      constexpr int Br = ch07::kMmaBr, Bc = ch07::kMmaBc;
      v.smem_bytes = [](const Problem& p) {  // the K/V pass's blocks, and the dQ pass's
        const int elem = static_cast<int>(dtype_size(p.dtype));
        return std::max(ch07::mma_smem_bytes(p.d, elem), ch07::dq_pass_smem_bytes(p.d, elem));
      };
      v.workspace_bytes = D_bytes;
      // The K/V pass as step d's; the dQ pass reads Q, dO, L, D once and K, V for every pair it
      // visits, and writes dQ.
      v.hbm_bytes = [](const Problem& p) {
        const Pairs n = pairs(p, Br, Bc, true);
        return preprocess_bytes(p, false) + kv_outer_bytes(p, n) +
               heads(p) * (p.Lq * (3 * t_of(p) * p.d + 8) + n.pairs * 2 * t_of(p) * Bc * p.d);
      };
      v.plan = [](const Problem& p) { return tiles_plan(p, Br, Bc, true) + ", in each of the two passes"; };
      return v;
    }(),
    .deterministic = true,
    .flops_executed =
        [](const Problem& p) { return 14.0 * p.d * ch07::kMmaBr * ch07::kMmaBc * heads(p) * pairs(p, ch07::kMmaBr, ch07::kMmaBc, true).pairs; },
    .run =
        [](const BackwardParams& p, Stages& st) {
          st.run("D = rowsum(dO o O)", [&] { return ch07::preprocess(p, D_of(p), nullptr); });
          st.run("dK, dV (tiles skipped)", [&] { return ch07::causal(p, D_of(p), nullptr); });
          st.run("dQ (Q outer, no atomics)", [&] { return ch07::dq_pass(p, D_of(p)); });
        },
});

// Step e: step d's loop and bytes, its tiles copied by 16-byte cp.async.
const RegisterBackward cp_async(kv_outer_step(
    [] {
      Variant v = info("cp_async", "step d with its tiles copied by 16-byte cp.async, a thread's copies in flight together",
                       true);
      v.best = true;
      return v;
    }(),
    ch07::kMmaBr, ch07::kMmaBc, true, ch07::cp_async, "dK, dV, dQ acc (cp.async tiles)"));

}  // namespace
