// test_backward.cpp: the backward pass. The fp64 reference gradients against finite differences
// ([reference]); every backward variant against the reference over the backward sweep, from
// poisoned outputs; the forward kernels' O and L through the backward; and the deterministic
// option bit-identical across runs and schedule orders ([backward]). Run by CTest once per
// schedule order on the cpu backend (SIMT_ORDER), once on a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "backward_run.h"
#include "harness/backward/backward.h"
#include "harness/dtype.h"
#include "harness/errors.h"
#include "harness/reference.h"
#include "sweep.h"
#if !FLASHSTEPS_GPU
#include "simt/cpu/launch.h"
#endif

using namespace attn;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// sum(O o dO): the loss whose gradients the reference computes.
double loss(const grad::Head& h) {
  const grad::HeadResult r = grad::forward_backward(h, {}, {});
  return r.o.cwiseProduct(h.dout).sum();
}

// A tiny head in double with every kind of bias: the visible pairs of is_causal, a boolean mask
// (-inf or 0) or an additive one, and rows that see nothing.
grad::Head tiny_head(int Lq, int Lk, int d, Causal c, MaskKind m, unsigned seed) {
  grad::Head h;
  std::srand(seed);
  auto fill = [](grad::Mat& x, int r, int cols) {
    x.resize(r, cols);
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < cols; ++j) x(i, j) = 2.0 * std::rand() / RAND_MAX - 1.0;
  };
  fill(h.q, Lq, d), fill(h.k, Lk, d), fill(h.v, Lk, d), fill(h.dout, Lq, d);
  h.scale = 0.7;
  h.bias = grad::Mat::Zero(Lq, Lk);
  const int off = c == Causal::bottom_right ? Lk - Lq : 0;
  for (int i = 0; i < Lq; ++i)
    for (int j = 0; j < Lk; ++j) {
      if (c != Causal::none && j > i + off) h.bias(i, j) = -kInf;
      if (m == MaskKind::boolean && (i == 1 || (i + j) % 3 == 0)) h.bias(i, j) = -kInf;  // row 1 sees nothing
      if (m == MaskKind::additive) h.bias(i, j) = i == 1 || j == 0 ? -kInf : 0.5 * ((i * 7 + j * 3) % 5) - 1.0;
    }
  return h;
}
}  // namespace

TEST_CASE("the backward reference matches central finite differences", "[reference]") {
  struct Shape {
    int Lq, Lk, d;
  };
  int empty_rows = 0;
  for (Shape s : {Shape{1, 1, 2}, Shape{3, 4, 2}, Shape{4, 3, 3}, Shape{5, 5, 2}})
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (MaskKind m : {MaskKind::none, MaskKind::boolean, MaskKind::additive}) {
        if (c != Causal::none && m != MaskKind::none) continue;
        grad::Head h = tiny_head(s.Lq, s.Lk, s.d, c, m, static_cast<unsigned>(s.Lq * 100 + s.Lk * 10 + s.d));
        const grad::HeadResult r = grad::forward_backward(h, grad::all_rows(s.Lq), grad::all_rows(s.Lk));
        INFO("Lq " << s.Lq << " Lk " << s.Lk << " d " << s.d << " causal " << causal_name(c) << " mask " << mask_name(m));
        // Each element moved by +-e: the central difference's error is O(e^2) (about 1e-10 here)
        // plus the rounding of two losses of size ~1 divided by 2e (about 1e-11).
        const double e = 1e-5, tol = 1e-7;
        auto check = [&](grad::Mat& x, const grad::Mat& g, const char* name) {
          for (Eigen::Index i = 0; i < x.rows(); ++i)
            for (Eigen::Index j = 0; j < x.cols(); ++j) {
              const double keep = x(i, j);
              x(i, j) = keep + e;
              const double up = loss(h);
              x(i, j) = keep - e;
              const double down = loss(h);
              x(i, j) = keep;
              INFO(name << "(" << i << ", " << j << ")");
              CHECK(std::fabs((up - down) / (2 * e) - g(i, j)) <= tol * (1 + std::fabs(g(i, j))));
            }
        };
        check(h.q, r.dq, "dQ");
        check(h.k, r.dk, "dK");
        check(h.v, r.dv, "dV");
        // A row with no visible key: O = 0 and L = -inf, and its dQ row is exactly zero.
        for (int i = 0; i < s.Lq; ++i)
          if (r.lse(i) == -kInf) {
            ++empty_rows;
            CHECK(r.o.row(i).isZero(0));
            CHECK(r.dq.row(i).isZero(0));
          }
      }
  CHECK(empty_rows > 0);  // the convention was exercised
}

TEST_CASE("the backward reference's forward is the forward reference", "[reference]") {
  Problem p;
  p.B = 2, p.H = 2, p.Lq = 19, p.Lk = 23, p.d = 16, p.dtype = DType::fp32, p.mask = MaskKind::additive;
  p.mask_per_head = true;
  const Inputs in = Inputs::generate(p);
  const ExpectedGrads g = reference_backward(p, in, seeded_dout(p), GradSelection::all(p));
  const Expected f = reference(p, in, Selection::all(p));
  REQUIRE(g.o.size() == f.o.size());
  REQUIRE(g.lse.size() == f.lse.size());
  for (size_t i = 0; i < f.o.size(); ++i) CHECK(std::fabs(g.o[i] - f.o[i]) <= 1e-12);
  for (size_t i = 0; i < f.lse.size(); ++i) CHECK((g.lse[i] == f.lse[i] || std::fabs(g.lse[i] - f.lse[i]) <= 1e-12));
}

TEST_CASE("the gradient check fails a wrong gradient, a NaN and a missing scale", "[reference]") {
  Problem p;
  p.B = 1, p.H = 2, p.Lq = 33, p.Lk = 40, p.d = 32, p.dtype = DType::fp16, p.causal = Causal::bottom_right;
  const Inputs in = Inputs::generate(p);
  const GradSelection sel = GradSelection::all(p);
  const ExpectedGrads ref = reference_backward(p, in, seeded_dout(p), sel);
  const NaiveGrads naive = naive_backward_same_dtype(p, in, seeded_dout(p), sel);
  auto rounded = [&](const std::vector<double>& x) {
    std::vector<float> v(x.size());
    for (size_t i = 0; i < x.size(); ++i) v[i] = round_to(p.dtype, static_cast<float>(x[i]));
    return v;
  };
  const std::vector<float> dq = rounded(ref.dq), dk = rounded(ref.dk), dv = rounded(ref.dv);
  CHECK(compare_grads(p, sel, ref, &naive, dq, dk, dv).pass);  // the reference rounded to fp16 passes
  std::vector<float> bad = dk;
  size_t big = 0;
  for (size_t i = 0; i < ref.dk.size(); ++i)
    if (std::fabs(ref.dk[i]) > std::fabs(ref.dk[big])) big = i;
  bad[big] *= 1.01f;  // 1% off, on the largest element
  CHECK_FALSE(compare_grads(p, sel, ref, &naive, dq, bad, dv).pass);
  bad = dv;
  bad[bad.size() / 2] = std::nanf("");
  const GradVerdict nan = compare_grads(p, sel, ref, &naive, dq, dk, bad);
  CHECK_FALSE(nan.pass);
  CHECK(nan.dv.nonfinite == 1);
  bad = dq;
  for (float& x : bad) x /= p.scale();  // dQ without its scale
  CHECK_FALSE(compare_grads(p, sel, ref, &naive, bad, dk, dv).pass);
}

namespace {
void check_result(const BackwardResult& r, const Problem& p) {
  INFO(r.row.verdict.why);
  CHECK(r.row.verdict.nonfinite == 0);
  CHECK(r.row.verdict.checked == p.q_elems() + 2 * p.kv_elems());
  CHECK(r.row.verdict.pass);
}
}  // namespace

TEST_CASE("every backward variant matches the reference gradients over the backward sweep", "[backward]") {
  REQUIRE_FALSE(backward_registry().empty());
  std::map<std::string, int> ran;
  const RunOptions o = untimed();
  for (const Problem& p : backward_sweep()) {
    BackwardRun run(p, o);
    run.reference_forward();
    for (const BackwardVariant& v : backward_registry()) {
      if (!v.info.unsupported(p).empty()) continue;
      INFO(v.info.name << " on " << p.describe());
      check_result(run_backward(v, p, run.dev, run.checker, o), p);
      ++ran[v.info.name];
    }
  }
  for (const BackwardVariant& v : backward_registry()) {
    INFO(v.info.name);
    CHECK(ran[v.info.name] >= 10);  // every variant met the sweep
  }
}

TEST_CASE("the backward runs on the O and L of the fastest forward kernel", "[backward]") {
  const RunOptions o = untimed();
  Problem p;
  p.B = 1, p.H = 2, p.Lq = 90, p.Lk = 90, p.d = 64, p.dtype = DType::bf16, p.causal = Causal::top_left;
  for (DType t : {DType::bf16, DType::fp32}) {
    p.dtype = t;
    const Variant* fwd = fastest_forward(p);
    REQUIRE(fwd != nullptr);
    INFO("forward " << fwd->name << " on " << p.describe());
    BackwardRun run(p, o);
    run.dev.run_forward(*fwd, p);
    for (const BackwardVariant& v : backward_registry())
      if (v.info.unsupported(p).empty()) check_result(run_backward(v, p, run.dev, run.checker, o), p);
  }
}

TEST_CASE("dS past fp16's range: the steps that round it fail and say why; fp32 dS and bf16 hold it", "[backward]") {
  // Two keys, scores near 0 (a small scale): P near 1/2, so dS = P o (dP - D) is about a quarter of
  // dP1 - dP2, and dO times 12288 takes it past 65504 while dQ, dK and dV stay within fp16.
  Problem p;
  p.B = 1, p.H = 1, p.Lq = 8, p.Lk = 2, p.d = 128, p.scale_override = 1.0 / 256;
  const RunOptions o = untimed();
  for (DType t : {DType::fp16, DType::bf16}) {
    p.dtype = t;
    BackwardRun run(p, o, 12288);
    run.reference_forward();
    REQUIRE(run.checker.expected().ds_max > largest_finite(DType::fp16));
    for (const BackwardVariant& v : backward_registry()) {
      if (!v.info.unsupported(p).empty()) continue;
      const BackwardResult r = run_backward(v, p, run.dev, run.checker, o);
      INFO(v.info.name << " on " << p.describe() << ": " << r.row.verdict.why);
      // The tensor-core steps round dS to the dtype; materialized and kv_outer keep it in fp32.
      const bool rounds_ds = v.info.name != "materialized" && v.info.name != "kv_outer";
      if (t == DType::fp16 && rounds_ds) {
        CHECK_FALSE(r.row.verdict.pass);
        CHECK(r.row.verdict.why.find("dS reaches") != std::string::npos);
      } else {
        CHECK(r.row.verdict.pass);
      }
    }
  }
  // A scale dO cannot hold is refused.
  p.dtype = DType::fp16;
  CHECK_THROWS_AS(seeded_dout(p, 65536), UsageError);
  CHECK_THROWS_AS(seeded_dout(p, 0), UsageError);
  CHECK_THROWS_AS(seeded_dout(p, std::nan("")), UsageError);
}

TEST_CASE("the deterministic variant is bit-identical across runs and schedule orders", "[backward]") {
  const BackwardVariant* v = nullptr;
  for (const BackwardVariant& b : backward_registry())
    if (b.deterministic) v = &b;
  REQUIRE(v != nullptr);
  const RunOptions o = untimed();
  for (Causal c : {Causal::none, Causal::bottom_right}) {
    Problem p;
    p.B = 1, p.H = 2, p.Lq = 150, p.Lk = 140, p.d = 32, p.dtype = DType::fp16, p.causal = c;
    INFO(p.describe());
    BackwardRun run(p, o);
    run.reference_forward();
    const BackwardResult first = run_backward(*v, p, run.dev, run.checker, o, true);
    check_result(first, p);
    auto same_bits = [&](const BackwardResult& r) {
      return std::memcmp(r.dq.data(), first.dq.data(), 4 * r.dq.size()) == 0 &&
             std::memcmp(r.dk.data(), first.dk.data(), 4 * r.dk.size()) == 0 &&
             std::memcmp(r.dv.data(), first.dv.data(), 4 * r.dv.size()) == 0;
    };
    CHECK(same_bits(run_backward(*v, p, run.dev, run.checker, o, true)));
#if !FLASHSTEPS_GPU
    // Blocks on two OS threads and every order of the fibers within a block: atomics would
    // land in another order, a deterministic dQ must not notice.
    const simt::Schedule keep = simt::schedule();
    for (simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::shuffle}) {
      simt::Schedule s = keep;
      s.order = order, s.workers = 2, s.seed = 11;
      simt::set_schedule(s);
      INFO("order " << simt::order_name(order));
      CHECK(same_bits(run_backward(*v, p, run.dev, run.checker, o, true)));
    }
    simt::set_schedule(keep);
#endif
  }
}
