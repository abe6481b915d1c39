#include "harness/backward/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "harness/dtype.h"
#include "harness/errors.h"
#include "harness/reference.h"
#include "harness/softmax_row.h"

namespace attn {

namespace grad {

std::vector<int> all_rows(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

HeadResult forward_backward(const Head& h, const std::vector<int>& rows, const std::vector<int>& keys) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  HeadResult r;
  Mat P = h.scale * (h.q * h.k.transpose()) + h.bias;
  r.lse.resize(P.rows());
  // A row that sees no key: P = 0, O = 0, L = -inf.
  for (Eigen::Index i = 0; i < P.rows(); ++i) r.lse(i) = softmax_row(P.row(i));
  r.o = P * h.v;
  const Mat dout_abs = h.dout.cwiseAbs();
  const Eigen::VectorXd D = h.dout.cwiseProduct(r.o).rowwise().sum();
  const Eigen::VectorXd D_abs = dout_abs.cwiseProduct(r.o.cwiseAbs()).rowwise().sum();
  const Mat dS = P.cwiseProduct((h.dout * h.v.transpose()).colwise() - D);
  r.ds_max = dS.size() ? dS.cwiseAbs().maxCoeff() : 0;
  const Mat floor = h.bias.unaryExpr([&](double x) { return x == kNegInf ? 0.0 : h.min_normal; });
  const Mat A = P.cwiseProduct((dout_abs * h.v.cwiseAbs().transpose()).colwise() + D_abs).cwiseMax(floor);
  r.dq = h.scale * (dS(rows, Eigen::all) * h.k);
  r.mag_dq = std::fabs(h.scale) * (A(rows, Eigen::all) * h.k.cwiseAbs());
  const Mat Pk = P(Eigen::all, keys);
  r.dv = Pk.transpose() * h.dout;
  r.mag_dv = Pk.cwiseMax(floor(Eigen::all, keys)).transpose() * dout_abs;
  r.dk = h.scale * (dS(Eigen::all, keys).transpose() * h.q);
  r.mag_dk = std::fabs(h.scale) * (A(Eigen::all, keys).transpose() * h.q.cwiseAbs());
  return r;
}

}  // namespace grad

namespace {
double min_normal(DType t) { return std::ldexp(1.0, t == DType::fp16 ? -14 : -126); }
}  // namespace

std::vector<float> seeded_dout(const Problem& p, double scale) {
  if (!(scale > 0) || !std::isfinite(scale) || kInputBound * scale > largest_finite(p.dtype)) {
    std::ostringstream why;
    why << "--dout-scale " << scale << ": must be a finite positive number that keeps dO (|dO| up to " << kInputBound
        << " times it) within " << dtype_name(p.dtype) << "'s largest finite value, " << largest_finite(p.dtype);
    throw UsageError(why.str());
  }
  // Drawn as Inputs::generate draws Q, from another seed.
  Bell bell = Bell::of(p.seed * 0x9E3779B97F4A7C15ull + 0xD0, 1);
  std::vector<float> dout;
  bell.fill(dout, p.q_elems(), p.dtype);
  if (scale != 1)
    for (float& x : dout) x = round_to(p.dtype, static_cast<float>(x * scale));
  return dout;
}

GradSelection GradSelection::all(const Problem& p) {
  GradSelection s;
  for (int b = 0; b < p.B; ++b)
    for (int h = 0; h < p.H; ++h) s.heads.emplace_back(b, h);
  s.rows = grad::all_rows(p.Lq);
  s.keys = grad::all_rows(p.Lk);
  return s;
}

GradSelection GradSelection::sample(const Problem& p, double budget, int max_rows, int max_heads) {
  if (static_cast<double>(p.heads()) * p.Lq * p.Lk * p.d <= budget) return all(p);
  const Selection q = Selection::sample(p, 0, max_rows, max_heads);
  Problem keys = p;  // the key rows sampled the same way, as if they were query rows
  keys.Lq = p.Lk;
  GradSelection s;
  s.heads = q.heads;
  s.rows = q.rows;
  s.keys = Selection::sample(keys, 0, max_rows, max_heads).rows;
  return s;
}

ExpectedGrads reference_backward(const Problem& p, const Inputs& in, const std::vector<float>& dout,
                                 const GradSelection& sel) {
  ExpectedGrads e;
  const int off = p.causal == Causal::bottom_right ? p.Lk - p.Lq : 0;
  auto matrix = [&](const std::vector<float>& x, size_t head, int L) {
    grad::Mat m(L, p.d);
    const float* src = x.data() + head * static_cast<size_t>(L) * p.d;
    for (int r = 0; r < L; ++r)
      for (int c = 0; c < p.d; ++c) m(r, c) = src[static_cast<size_t>(r) * p.d + c];
    return m;
  };
  auto append = [](std::vector<double>& to, const grad::Mat& m) { to.insert(to.end(), m.data(), m.data() + m.size()); };
  for (const auto& [b, h] : sel.heads) {
    const size_t head = static_cast<size_t>(b) * p.H + h;
    grad::Head hd;
    hd.q = matrix(in.q, head, p.Lq);
    hd.k = matrix(in.k, head, p.Lk);
    hd.v = matrix(in.v, head, p.Lk);
    hd.dout = matrix(dout, head, p.Lq);
    hd.scale = p.scale();
    hd.min_normal = min_normal(p.dtype);
    hd.bias.resize(p.Lq, p.Lk);
    for (int i = 0; i < p.Lq; ++i)
      for (int j = 0; j < p.Lk; ++j)
        hd.bias(i, j) = p.causal != Causal::none && j > i + off ? -std::numeric_limits<double>::infinity()
                                                                : in.mask_at(p, b, h, i, j);
    const grad::HeadResult r = grad::forward_backward(hd, sel.rows, sel.keys);
    e.ds_max = std::max(e.ds_max, r.ds_max);
    append(e.o, r.o);
    e.lse.insert(e.lse.end(), r.lse.data(), r.lse.data() + r.lse.size());
    append(e.dq, r.dq);
    append(e.dk, r.dk);
    append(e.dv, r.dv);
    append(e.mag_dq, r.mag_dq);
    append(e.mag_dk, r.mag_dk);
    append(e.mag_dv, r.mag_dv);
  }
  return e;
}

NaiveGrads naive_backward_same_dtype(const Problem& p, const Inputs& in, const std::vector<float>& dout,
                                     const GradSelection& sel) {
  const DType t = p.dtype;
  // torch splits the scale as sqrt(scale) on each of Q and K; a negative scale goes on Q's side
  // with its sign (as reference.cpp's naive_same_dtype does).
  const float root = std::sqrt(std::fabs(p.scale())), q_root = std::copysign(root, p.scale());
  const int Lq = p.Lq, Lk = p.Lk, d = p.d, off = p.causal == Causal::bottom_right ? p.Lk - p.Lq : 0;
  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto rounded = [&](MatF m) { return MatF(m.unaryExpr([t](float x) { return round_to(t, x); })); };
  auto matrix = [&](const std::vector<float>& x, size_t head, int L, float by) {
    MatF m(L, d);
    for (int r = 0; r < L; ++r)
      for (int c = 0; c < d; ++c) m(r, c) = x[(head * L + r) * d + c] * by;
    return rounded(m);
  };
  NaiveGrads out;
  for (const auto& [b, h] : sel.heads) {
    const size_t head = static_cast<size_t>(b) * p.H + h;
    const MatF q = matrix(in.q, head, Lq, q_root), k = matrix(in.k, head, Lk, root), v = matrix(in.v, head, Lk, 1.f);
    const MatF dO = matrix(dout, head, Lq, 1.f);
    MatF P = rounded(q * k.transpose());  // fp32 accumulation, rounded: what a GEMM in the dtype gives
    for (int i = 0; i < Lq; ++i) {
      float m = -INFINITY;
      for (int j = 0; j < Lk; ++j) {
        float& x = P(i, j);
        x = p.causal != Causal::none && j > i + off ? -INFINITY : round_to(t, x + in.mask_at(p, b, h, i, j));
        m = std::max(m, x);
      }
      float l = 0.f;
      for (int j = 0; j < Lk; ++j) l += P(i, j) = m == -INFINITY ? 0.f : std::exp(P(i, j) - m);
      for (int j = 0; j < Lk; ++j) P(i, j) = l > 0 ? round_to(t, P(i, j) / l) : 0.f;
    }
    const MatF dP = rounded(dO * v.transpose());
    const Eigen::VectorXf rowdot = P.cwiseProduct(dP).rowwise().sum();
    const MatF dS = rounded(P.cwiseProduct(dP.colwise() - rowdot));
    const MatF dq = rounded(rounded(dS * k) * q_root), dk = rounded(rounded(dS.transpose() * q) * root);
    const MatF dv = rounded(P.transpose() * dO);
    for (int i : sel.rows)
      for (int c = 0; c < d; ++c) out.dq.push_back(dq(i, c));
    for (int j : sel.keys)
      for (int c = 0; c < d; ++c) out.dk.push_back(dk(j, c)), out.dv.push_back(dv(j, c));
  }
  return out;
}

double GradVerdict::max_abs() const {
  double m = 0;
  for (double x : {dq.max_abs, dk.max_abs, dv.max_abs}) m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
  return m;
}

namespace {
// The tolerance's multiple of the unit roundoff u on the magnitude: a 16-bit kernel rounds P (for
// dV) and dS (for dQ and dK) to the dtype, one u each on the terms of the sums; D is computed from
// the forward's O, itself rounded to the dtype (u on each term of D, in A). Four units leave one
// to spare for the exponential and the fp32 products that feed them.
constexpr double kGradUnits = 4;

GradCheck check_one(const char* name, const Problem& p, const GradSelection& sel, const std::vector<int>& rows, int L,
                    const std::vector<double>& ref, const std::vector<double>& mag, const std::vector<double>* naive,
                    const std::vector<float>& got, std::ostringstream& why) {
  GradCheck c;
  c.name = name;
  for (float x : got) c.nonfinite += !std::isfinite(x);
  // u: the dtype's unit roundoff. The fp32 accumulations of a kernel add at most n 2^-24 of the
  // magnitude, n the longest sum an element goes through (Lk keys for dQ, Lq rows for dK and dV,
  // d for dP and D); 2u |ref| is the rounding of the result to the dtype, and the dtype's own
  // rounding of the inputs of the last product, with |ref| taken as at least the smallest normal
  // number (below it, rounding is to a fixed step: fp16 keeps few bits of a gradient of 1e-6).
  const double u = std::ldexp(1.0, -(mantissa_bits(p.dtype) + 1));
  const double units = kGradUnits * u + (p.Lq + p.Lk + p.d) * std::ldexp(1.0, -24);
  const double n_min = min_normal(p.dtype);
  size_t at = 0, worst_at = 0;
  for (const auto& [b, h] : sel.heads)
    for (int i : rows)
      for (int col = 0; col < p.d; ++col, ++at) {
        const double r = ref[at], g = got[((static_cast<size_t>(b) * p.H + h) * L + i) * p.d + col];
        const double err = std::fabs(g - r);
        const double tol = units * mag[at] + 2 * u * std::max(std::fabs(r), mag[at] > 0 ? n_min : 0.0);
        c.ref_max = std::max(c.ref_max, std::fabs(r));
        c.max_abs = std::isnan(err) ? err : std::max(c.max_abs, err);
        if (!(err <= tol)) ++c.bad;  // NaN lands here too
        const double ratio = err == 0 ? 0 : tol > 0 ? err / tol : INFINITY;
        if (!(ratio <= c.worst)) c.worst = ratio, worst_at = at;
      }
  c.checked = at;
  bool naive_finite = naive != nullptr;  // a naive computation whose scores overflow the dtype is no yardstick
  for (size_t e = 0; naive && e < naive->size(); ++e) naive_finite = naive_finite && std::isfinite((*naive)[e]);
  if (!naive_finite) naive = nullptr;
  if (naive) {
    c.naive_err = 0;
    for (size_t e = 0; e < ref.size(); ++e) c.naive_err = std::max(c.naive_err, std::fabs((*naive)[e] - ref[e]));
    // FlashAttention's rule, plus the fp32 noise of sums in another order on the terms' largest
    // magnitude: where the exact gradient is 0 and the naive computation finds 0 too (one visible
    // key: dS = P (dP - D) with P = 1 and D = dP), a kernel summing dP and D in different orders
    // finds 1e-7.
    double mag_max = 0;
    for (double m : mag) mag_max = std::max(mag_max, m);
    c.bound = 2 * c.naive_err + std::ldexp(c.ref_max, -mantissa_bits(p.dtype)) +
              (p.Lq + p.Lk + p.d) * std::ldexp(mag_max, -24);
  }
  if (c.nonfinite) why << name << ": " << c.nonfinite << " NaN/Inf; ";
  if (naive && !(c.max_abs <= c.bound))
    why << name << ": error " << c.max_abs << " above twice the same-dtype naive error (bound " << c.bound << "); ";
  if (c.bad) {
    const size_t per_head = rows.size() * static_cast<size_t>(p.d);
    const auto [b, h] = sel.heads[worst_at / per_head];
    why << name << ": " << c.bad << " of " << c.checked << " elements beyond the tolerance, worst " << c.worst
        << " times it at (b=" << b << ", h=" << h << ", row " << rows[worst_at % per_head / p.d] << ", col "
        << worst_at % p.d << ": " << got[((static_cast<size_t>(b) * p.H + h) * L + rows[worst_at % per_head / p.d]) * p.d +
                                        worst_at % p.d]
        << " instead of " << ref[worst_at] << "); ";
  }
  return c;
}
}  // namespace

GradVerdict compare_grads(const Problem& p, const GradSelection& sel, const ExpectedGrads& ref, const NaiveGrads* naive,
                          const std::vector<float>& dq, const std::vector<float>& dk, const std::vector<float>& dv) {
  GradVerdict v;
  std::ostringstream why;
  v.dq = check_one("dQ", p, sel, sel.rows, p.Lq, ref.dq, ref.mag_dq, naive ? &naive->dq : nullptr, dq, why);
  v.dk = check_one("dK", p, sel, sel.keys, p.Lk, ref.dk, ref.mag_dk, naive ? &naive->dk : nullptr, dk, why);
  v.dv = check_one("dV", p, sel, sel.keys, p.Lk, ref.dv, ref.mag_dv, naive ? &naive->dv : nullptr, dv, why);
  // Failures a range explains. An exact gradient past the dtype's largest finite value: no output
  // of that dtype holds it. Else, a dQ or dK that overflowed while dS is past it: the 16-bit steps
  // round dS to the dtype for dQ = dS K and dK = dS^T Q, as FlashAttention-2 does.
  const double largest = largest_finite(p.dtype);
  for (const GradCheck* c : {&v.dq, &v.dk, &v.dv})
    if (c->ref_max > largest)
      why << c->name << "'s exact values reach " << c->ref_max << ", past " << dtype_name(p.dtype)
          << "'s largest finite value " << largest << ": no " << dtype_name(p.dtype) << " output holds them; ";
  if ((v.dq.nonfinite || v.dk.nonfinite) && v.dq.ref_max <= largest && v.dk.ref_max <= largest && ref.ds_max > largest)
    why << "dS reaches " << ref.ds_max << " here, past " << dtype_name(p.dtype) << "'s largest finite value " << largest
        << ": a step that rounds dS to " << dtype_name(p.dtype)
        << " for its products (as FlashAttention-2 does) overflows in dQ and dK; bf16 holds the range, and so does a "
           "smaller dO (a loss scaler backs off); ";
  v.why = why.str();
  v.pass = v.why.empty();
  return v;
}

}  // namespace attn
