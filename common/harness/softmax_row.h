// softmax_row.h: one row of scores made probabilities in double, for the forward's reference and
// the backward's: P = exp(s - m) / l, and the row's log-sum-exp m + log l; a row that sees no key
// (every score -inf) becomes 0, its log-sum-exp -inf.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <limits>

namespace attn {

// std::exp, not Eigen's vectorized exp, which clamps its argument and turns exp(-inf) into 1e-308:
// a hidden key's P must be exactly 0 (its gradient too), and products over denormals crawl
// (flashsteps run --lq 768 --lk 8192 -d 128 --causal --full-check: 22 s with Eigen's exp, 4 s with
// std::exp). s: a row of an Eigen matrix (S.row(i)), changed in place.
template <class Row>
double softmax_row(Row&& s) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const double m = s.size() ? s.maxCoeff() : kNegInf;
  if (m == kNegInf) {  // nothing to attend to: P = 0
    s.setZero();
    return kNegInf;
  }
  s = s.unaryExpr([m](double x) { return std::exp(x - m); });
  const double l = s.sum();
  s /= l;
  return m + std::log(l);
}

}  // namespace attn
