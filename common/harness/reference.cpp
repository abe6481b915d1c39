#include "reference.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "softmax_row.h"

namespace attn {
namespace {
using MatrixRM = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The rows `rows` of the [L][d] matrix of x that starts at element `head`.
MatrixRM rows_of(const std::vector<float>& x, const Problem& p, size_t head, const std::vector<int>& rows) {
  MatrixRM m(static_cast<Eigen::Index>(rows.size()), p.d);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int c = 0; c < p.d; ++c) m(static_cast<Eigen::Index>(r), c) = x[head + static_cast<size_t>(rows[r]) * p.d + c];
  return m;
}
std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}
// is_causal's diagonal over the whole [Lq, Lk]; a packed batch's is each sequence's (its rule, mask_at).
bool visible(const Problem& p, int i, int j) {
  return p.causal == Causal::none || p.packed() || j <= i + (p.causal == Causal::bottom_right ? p.Lk - p.Lq : 0);
}
}  // namespace

Selection Selection::all(const Problem& p) {
  Selection s;
  for (int b = 0; b < p.B; ++b)
    for (int h = 0; h < p.H; ++h) s.heads.emplace_back(b, h);
  s.rows = iota(p.Lq);
  return s;
}

Selection Selection::sample(const Problem& p, double budget, int max_rows, int max_heads) {
  if (static_cast<double>(p.heads()) * p.Lq * p.Lk * p.d <= budget) return all(p);
  std::mt19937 rng(static_cast<unsigned>(p.seed) + 17);
  Selection s;
  s.heads.emplace_back(0, 0);
  if (p.heads() > 1 && max_heads > 1) s.heads.emplace_back(p.B - 1, p.H - 1);
  for (int k = 0; k < max_heads - 2 && s.heads.size() < p.heads(); ++k) {
    const auto pick = std::make_pair(static_cast<int>(rng() % p.B), static_cast<int>(rng() % p.H));
    if (std::find(s.heads.begin(), s.heads.end(), pick) == s.heads.end()) s.heads.push_back(pick);
  }
  std::vector<int> rows = {0, p.Lq - 1};
  const int room = std::max(1, max_rows / 4);  // rows for each kind of edge
  const int edges = (p.Lq - 1) / 64, step = std::max(1, edges / room);  // 64-row tile edges
  for (int k = 1; k <= edges; k += step) rows.push_back(64 * k - 1), rows.push_back(64 * k);
  // A packed batch's sequence edges too: each sequence's first and last row, where a block's part
  // begins and ends (a quarter of the rows at most, spread over the sequences).
  const std::vector<int> cu = p.cu_seqlens();
  const int sequences = static_cast<int>(p.seqlens_q.size());
  const int every = std::max(1, (2 * sequences + room - 1) / room);  // 2 rows per sequence taken
  for (int s = 0; s < sequences; s += every)
    if (cu[static_cast<size_t>(s) + 1] > cu[static_cast<size_t>(s)])
      rows.push_back(cu[static_cast<size_t>(s)]), rows.push_back(cu[static_cast<size_t>(s) + 1] - 1);
  while (static_cast<int>(rows.size()) < std::min(max_rows, p.Lq)) rows.push_back(static_cast<int>(rng() % p.Lq));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  s.rows = rows;
  return s;
}

Expected reference(const Problem& p, const Inputs& in, const Selection& sel) {
  Expected e;
  e.o.reserve(sel.size(p.d));
  e.lse.reserve(sel.heads.size() * sel.rows.size());
  e.score_bound.reserve(sel.heads.size() * sel.rows.size());
  const std::vector<int> keys = iota(p.Lk);
  const double scale = p.scale();
  for (const auto& [b, h] : sel.heads) {
    const MatrixRM Q = rows_of(in.q, p, p.q_offset(b, h), sel.rows);
    const MatrixRM K = rows_of(in.k, p, p.kv_offset(b, h), keys);
    const MatrixRM V = rows_of(in.v, p, p.kv_offset(b, h), keys);
    MatrixRM S = scale * (Q * K.transpose());
    const double k_norm = K.rowwise().norm().maxCoeff();
    for (Eigen::Index r = 0; r < Q.rows(); ++r) e.score_bound.push_back(std::fabs(scale) * Q.row(r).norm() * k_norm);
    for (size_t r = 0; r < sel.rows.size(); ++r) {
      const int i = sel.rows[r], offset = p.diagonal_offset(i);
      auto s = S.row(static_cast<Eigen::Index>(r));
      for (int j = 0; j < p.Lk; ++j)
        s(j) = visible(p, i, j) ? p.score_at(b, h, i, j, s(j), offset) + in.mask_at(p, b, h, i, j)
                                : -std::numeric_limits<double>::infinity();
      e.lse.push_back(softmax_row(s));
    }
    const MatrixRM O = S * V;
    e.o.insert(e.o.end(), O.data(), O.data() + O.size());
  }
  return e;
}

std::vector<double> naive_same_dtype(const Problem& p, const Inputs& in, const Selection& sel) {
  const DType t = p.dtype;
  // torch splits the scale as sqrt(scale) on each of Q and K; a negative scale (NaN there) goes
  // on Q's side with its sign, so that the yardstick still exists.
  const float root = std::sqrt(std::fabs(p.scale())), q_root = std::copysign(root, p.scale());
  std::vector<double> out;
  out.reserve(sel.size(p.d));
  std::vector<float> k(static_cast<size_t>(p.Lk) * p.d), q(static_cast<size_t>(p.d)), s(static_cast<size_t>(p.Lk)),
      o(static_cast<size_t>(p.d));
  for (const auto& [b, h] : sel.heads) {
    const size_t qh = p.q_offset(b, h), kh = p.kv_offset(b, h);
    for (size_t e = 0; e < k.size(); ++e) k[e] = round_to(t, in.k[kh + e] * root);  // K scaled in the dtype
    for (int i : sel.rows) {
      const int offset = p.diagonal_offset(i);
      for (int c = 0; c < p.d; ++c) q[static_cast<size_t>(c)] = round_to(t, in.q[qh + static_cast<size_t>(i) * p.d + c] * q_root);
      float m = -INFINITY;
      for (int j = 0; j < p.Lk; ++j) {
        float acc = 0.f;
        for (int c = 0; c < p.d; ++c) acc += q[static_cast<size_t>(c)] * k[static_cast<size_t>(j) * p.d + c];
        float x = round_to(t, acc);
        if (p.score_mod()) x = round_to(t, static_cast<float>(p.score_at(b, h, i, j, x, offset)));
        x = visible(p, i, j) ? round_to(t, x + in.mask_at(p, b, h, i, j)) : -INFINITY;
        s[static_cast<size_t>(j)] = x;
        m = std::max(m, x);
      }
      float l = 0.f;
      for (float& x : s) l += x = m == -INFINITY ? 0.f : std::exp(x - m);
      // No visible key: P = 0. Scores that overflowed the dtype (Inf) give NaN, as in torch.
      for (float& x : s) x = m == -INFINITY ? 0.f : round_to(t, x / l);
      std::fill(o.begin(), o.end(), 0.f);
      for (int j = 0; j < p.Lk; ++j)
        for (int c = 0; c < p.d; ++c) o[static_cast<size_t>(c)] += s[static_cast<size_t>(j)] * in.v[kh + static_cast<size_t>(j) * p.d + c];
      for (float x : o) out.push_back(round_to(t, x));
    }
  }
  return out;
}

}  // namespace attn
