#include "compare.h"

#include <cmath>
#include <sstream>

namespace attn {

double tolerance(DType t) {
  switch (t) {
    case DType::fp32: return 2e-5;
    case DType::fp16: return 2e-3;
    case DType::bf16: return 1.6e-2;
  }
  return 0;
}

double lse_tolerance(const Problem& p, double lse, double score_bound) {
  // The kernels compute each score s_ij = scale * q_i . k_j in fp32: a dot product of length d
  // (its classic bound: d roundings, products included, times sum_c |q_ic k_jc|), then the
  // multiplication by the scale, in the exp2 variants by log2(e), and the mask's addition. Each
  // rounding costs at most one ulp, 2^-23 (not half of one: tensor cores truncate). So
  // |error of s_ij| <= (d + 3) * 2^-23 * |scale| * sum_c |q_ic k_jc|
  //                 <= (d + 3) * 2^-23 * score_bound            (Cauchy-Schwarz).
  // The log-sum-exp moves by at most the largest error of its arguments (its gradient is the
  // softmax row, which sums to 1), and storing it in fp32 costs one more ulp of |lse|. The fixed
  // 1e-3 is the budget of the rest, whatever the scale: the sum of at most Lk exponentials in
  // [0, 1] and the GPU's approximate exp2 and log2 (at the default scale it is nearly the whole
  // tolerance: the scores' term is about 1e-4 there). At --scale 1e4 the scores reach ~1e5 and
  // their rounding alone ~0.1, which a fixed tolerance would call a failure of a correct kernel.
  // Chapter 10's softcap adds tanh.approx.f32's error on a GPU: at most 2^-11 of |tanh| (PTX ISA,
  // tanh), times the cap (the emulator's tanh is exact).
  const double ulp = std::ldexp(1.0, -23);
  const double t = 1e-3 + (p.d + 3) * ulp * score_bound + p.softcap * std::ldexp(1.0, -11);
  return std::isfinite(lse) ? t + ulp * std::fabs(lse) : t;
}

Verdict compare(const Problem& p, const Selection& sel, const std::vector<float>& out, const Expected& ref,
                const std::vector<double>* naive, const std::vector<float>* lse) {
  Verdict v;
  for (float x : out) v.nonfinite += !std::isfinite(x);
  const double tol = tolerance(p.dtype);
  size_t at = 0, worst_at = 0, bad = 0;
  double naive_err = 0;
  for (const auto& [b, h] : sel.heads)
    for (int i : sel.rows)
      for (int c = 0; c < p.d; ++c, ++at) {
        const double r = ref.o[at];
        const double o = out[((static_cast<size_t>(b) * p.H + h) * p.Lq + i) * p.d + c];
        const double err = std::fabs(o - r);
        v.ref_max = std::max(v.ref_max, std::fabs(r));
        if (!(err <= tol + tol * std::fabs(r))) ++bad;  // NaN lands here too
        if (err > v.max_abs || std::isnan(err)) v.max_abs = err, worst_at = at;
        if (naive) {
          const double e = std::fabs((*naive)[at] - r);
          naive_err = std::isnan(e) ? e : std::max(naive_err, e);  // a NaN must not be skipped by max
        }
      }
  v.checked = at;
  v.max_rel = v.ref_max > 0 ? v.max_abs / v.ref_max : v.max_abs;
  std::ostringstream why;
  if (v.nonfinite) why << v.nonfinite << " NaN/Inf in the output; ";
  if (bad) {
    const size_t per_head = sel.rows.size() * static_cast<size_t>(p.d);
    const auto [b, h] = sel.heads[worst_at / per_head];
    why << bad << " of " << v.checked << " elements beyond the " << dtype_name(p.dtype) << " tolerance, worst "
        << v.max_abs << " at (b=" << b << ", h=" << h << ", row " << sel.rows[worst_at % per_head / p.d]
        << ", col " << worst_at % p.d << "); ";
  }
  // FlashAttention's rule needs a naive computation that exists: at a large scale the scores
  // overflow fp16 (65504) and the naive one is Inf or NaN; the rule then says nothing and the
  // element-wise tolerance above stands alone.
  if (naive && std::isfinite(naive_err)) {
    v.naive_err = naive_err;
    v.bound = 2 * naive_err + std::ldexp(v.ref_max, -mantissa_bits(p.dtype));
    if (!(v.max_abs <= v.bound)) why << "error " << v.max_abs << " above twice the same-dtype naive error (bound " << v.bound << "); ";
  }
  if (lse) {
    v.lse_max_abs = 0;
    size_t r = 0, lse_bad = 0;
    double worst_excess = 0, worst_tol = 0;
    for (const auto& [b, h] : sel.heads)
      for (int i : sel.rows) {
        const double want = ref.lse[r];
        const double got = (*lse)[(static_cast<size_t>(b) * p.H + h) * p.Lq + i];
        const double err = std::isinf(want) && got == want ? 0 : std::fabs(got - want);
        const double tol = lse_tolerance(p, want, ref.score_bound[r]);
        ++r;
        v.lse_max_abs = std::isnan(err) ? err : std::max(v.lse_max_abs, err);
        if (!(err <= tol)) {
          ++lse_bad;
          if (std::isnan(err) || err - tol > worst_excess) worst_excess = err - tol, worst_tol = tol;
        }
      }
    if (lse_bad)
      why << "log-sum-exp off by up to " << v.lse_max_abs << " in " << lse_bad << " rows (tolerance there "
          << worst_tol << "); ";
  }
  v.why = why.str();
  v.pass = v.why.empty();
  return v;
}

}  // namespace attn
