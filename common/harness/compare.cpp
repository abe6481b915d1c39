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
        if (naive) naive_err = std::max(naive_err, std::fabs((*naive)[at] - r));
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
  if (naive) {
    v.naive_err = naive_err;
    v.bound = 2 * naive_err + std::ldexp(v.ref_max, -mantissa_bits(p.dtype));
    if (!(v.max_abs <= v.bound)) why << "error " << v.max_abs << " above twice the same-dtype naive error (bound " << v.bound << "); ";
  }
  if (lse) {
    v.lse_max_abs = 0;
    size_t r = 0;
    for (const auto& [b, h] : sel.heads)
      for (int i : sel.rows) {
        const double want = ref.lse[r++];
        const double got = (*lse)[(static_cast<size_t>(b) * p.H + h) * p.Lq + i];
        const double err = std::isinf(want) && got == want ? 0 : std::fabs(got - want);
        v.lse_max_abs = std::isnan(err) ? err : std::max(v.lse_max_abs, err);
      }
    if (!(v.lse_max_abs <= 1e-3)) why << "log-sum-exp off by " << v.lse_max_abs << "; ";
  }
  v.why = why.str();
  v.pass = v.why.empty();
  return v;
}

}  // namespace attn
