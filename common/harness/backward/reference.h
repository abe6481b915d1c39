// backward/reference.h: what every backward kernel is checked against.
//
// In double precision with Eigen, per (batch, head), with the forward of harness/reference.h:
//   S = scale Q K^T + bias        bias: is_causal or attn_mask; -inf where a key is not visible
//   P = softmax(S) by rows         a row with no visible key: P = 0, O = 0, L = -inf
//   O = P V,  L = log sum_j exp(S_ij)
// and, for the loss sum(O o dO) (so that dO is the gradient arriving at O),
//   dV = P^T dO      dP = dO V^T      D_i = sum_c dO_ic O_ic      dS = P o (dP - D 1^T)
//   dQ = scale dS K  dK = scale dS^T Q
// The softmax's Jacobian gives dS: for one row, dS_j = P_j (dP_j - sum_k P_k dP_k), and
// sum_k P_k dP_k = sum_k P_k (dO . V_k) = dO . O = D. A row with no visible key has P = 0 and so
// dS = 0: its dQ row is zero and it gives nothing to dK and dV. That is the derivative of the
// forward's convention (O = 0 there, whatever Q, K, V), and what PyTorch's _safe_softmax gives.
// The mask is not differentiated (it is an input without gradient here).
//
// Alongside each gradient the reference computes its "magnitude", the same sum over absolute
// values, which bounds the rounding error a kernel may make (compare_grads):
//   |dV| := P'^T |dO|       A := max(P o (|dO| |V|^T + (|dO| o |O|) 1 1^T), n V)   (bounds |dS|)
//   |dQ| := |scale| A |K|   |dK| := |scale| A^T |Q|
// with V the visible pairs (1 or 0), n the dtype's smallest normal number and P' := max(P, n V):
// a value below n is rounded to a fixed absolute step, u n, not to u times itself (fp16's
// subnormals: P = 1e-6 keeps only a few bits).
#pragma once
#include <Eigen/Dense>
#include <utility>
#include <vector>

#include "harness/problem.h"

namespace attn {

namespace grad {
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One head's problem in double: Q [Lq, d], K, V [Lk, d], dO [Lq, d], bias [Lq, Lk].
struct Head {
  Mat q, k, v, dout, bias;
  double scale = 1;
  double min_normal = 0;  // of the kernels' dtype, for the magnitudes
};
// The forward (O, L) and, on the query rows `rows` and the key rows `keys`, the gradients and
// their magnitudes.
struct HeadResult {
  Mat o;
  Eigen::VectorXd lse;
  Mat dq, dk, dv, mag_dq, mag_dk, mag_dv;
  double ds_max = 0;  // the largest |dS| of the head
};
HeadResult forward_backward(const Head& h, const std::vector<int>& rows, const std::vector<int>& keys);
std::vector<int> all_rows(int n);
}  // namespace grad

// dO, seeded like Q (mean 0, variance 1, rounded to the problem's dtype), with its own seed, times
// `scale` (a loss scaler's factor; the product rounded to the dtype). A scale that is not a finite
// positive number, or that takes dO past the dtype's largest finite value, is a UsageError.
std::vector<float> seeded_dout(const Problem& p, double scale = 1);

// Which gradients are checked: the same query rows (dQ) and key rows (dK, dV) of each listed
// (b, h). Every row of a small problem; of a large one, rows sampled as Selection::sample does
// (first, last, tile edges, random) of a few heads. The reference still costs four products of
// Lq x Lk x d per listed head: the keys' gradients need every row's P.
struct GradSelection {
  std::vector<std::pair<int, int>> heads;
  std::vector<int> rows, keys;
  static GradSelection all(const Problem& p);
  static GradSelection sample(const Problem& p, double budget, int max_rows, int max_heads);
};

// [heads][rows][d] for dQ, [heads][keys][d] for dK and dV; o [heads][Lq][d] and lse [heads][Lq]
// whole.
// ds_max: the largest |dS| of the heads computed, which a kernel that rounds dS to the dtype must
// hold (compare_grads says so when fp16's 65504 does not).
struct ExpectedGrads {
  std::vector<double> o, lse, dq, dk, dv, mag_dq, mag_dk, mag_dv;
  double ds_max = 0;
};
ExpectedGrads reference_backward(const Problem& p, const Inputs& in, const std::vector<float>& dout,
                                 const GradSelection& sel);

// What a naive computation in fp16/bf16 gets: PyTorch's math backend, its forward as reference.h's
// naive_same_dtype (Q and K scaled by sqrt(scale) and rounded, S, P, O rounded), then autograd in
// the same dtype: dP = dO V^T, dV = P^T dO, dS = P o (dP - rowsum(P o dP)) (softmax's backward,
// in fp32, rounded), dQ = sqrt(scale) dS K', dK = sqrt(scale) dS^T Q', each rounded. Same layout
// as ExpectedGrads' dq, dk, dv.
struct NaiveGrads {
  std::vector<double> dq, dk, dv;
};
NaiveGrads naive_backward_same_dtype(const Problem& p, const Inputs& in, const std::vector<float>& dout,
                                     const GradSelection& sel);

// The check of one gradient tensor: no NaN or Inf anywhere; element by element
//   |g - ref| <= (kGradUnits u + n 2^-24) |g|_mag + 2 u |ref|
// (compare_grads explains the terms); for fp16 and bf16 also FlashAttention's rule, as its tests
// apply it to dQ, dK and dV: the largest error at most twice that of the naive computation in the
// same dtype, plus one unit in the last place of the largest gradient.
struct GradCheck {
  const char* name = "";
  size_t checked = 0;
  long long nonfinite = 0, bad = 0;
  double max_abs = 0, ref_max = 0;
  double worst = 0;  // the largest |g - ref| / tolerance: at most 1 to pass
  double naive_err = -1, bound = -1;  // FlashAttention's rule (fp16, bf16)
};
struct GradVerdict {
  GradCheck dq, dk, dv;
  bool pass = false;
  std::string why;
  double max_abs() const;
};
// Whole tensors as float: dq [B, H, Lq, d], dk and dv [B, H, Lk, d].
GradVerdict compare_grads(const Problem& p, const GradSelection& sel, const ExpectedGrads& ref, const NaiveGrads* naive,
                          const std::vector<float>& dq, const std::vector<float>& dk, const std::vector<float>& dv);

}  // namespace attn
