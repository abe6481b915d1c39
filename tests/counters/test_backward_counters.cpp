// test_backward_counters.cpp: what the counters say about chapter 07's backward kernels, against
// the formulas its note states: five products of 2 Lq Lk d on mma.sync, the causal tiles skipped
// as the chapter's plan line says, step e's tiles in an eighth of step d's requests, dQ added with
// one fp32 atomic per element and K/V tile (none in the deterministic option), and counts that do
// not depend on the schedule. Expectations come from formulas and the chapter's own plan lines,
// never from a previous run.
//
// Tagged [counters_backward], not [counters]: the schedule test runs every order and worker count
// itself, so one CTest (counters_backward) covers it instead of six.
#include <catch2/catch.hpp>
#include <cstdio>

#include "backward_run.h"
#include "counters_support.h"
#include "harness/backward/backward.h"

using namespace attn;

namespace {

Problem problem(int lq, Causal c = Causal::none, int lk = 0) {
  Problem p;
  p.B = 1, p.H = 1, p.Lq = lq, p.Lk = lk ? lk : lq, p.d = 64, p.dtype = DType::fp16, p.causal = c;
  return p;
}

// Every launch of one checked backward run, its counters summed; O and L from the fp64 reference.
simt::Counters count_backward(const BackwardVariant& v, const Problem& p) {
  REQUIRE(v.info.unsupported(p).empty());
  RunOptions o;
  o.reps = 1, o.warmup = 0, o.sample = false;
  BackwardRun run(p, o);
  run.reference_forward();
  simt::counters::start({1});
  const BackwardResult r = run_backward(v, p, run.dev, run.checker, o);
  simt::counters::stop();
  INFO(v.info.name << " on " << p.describe() << ": " << r.row.verdict.why);
  REQUIRE(r.row.verdict.pass);  // counting changes nothing in what the kernels compute
  simt::Counters total;
  for (const Stages::Time& t : r.row.timing.stages)
    for (const simt::LaunchCounters& l : t.counters) total += l.counters;
  return total;
}

const BackwardVariant& step(const char* name) {
  const BackwardVariant* v = find_backward(name);
  REQUIRE(v != nullptr);
  return *v;
}

// "Br = 64, Bc = 64: 3 of 4 (Q tile, K/V tile) pairs visited per head": the chapter's own count.
struct Plan {
  int Br = 0, Bc = 0;
  double visited = 0, all = 0;
};
Plan plan_of(const BackwardVariant& v, const Problem& p) {
  REQUIRE(v.info.plan);
  const std::string s = v.info.plan(p);
  INFO(s);
  Plan n;
  REQUIRE(std::sscanf(s.c_str(), "Br = %d, Bc = %d: %lf of %lf", &n.Br, &n.Bc, &n.visited, &n.all) == 4);
  return n;
}

constexpr double kMmaFlop = 2 * 16 * 8 * 16;  // m16n8k16

}  // namespace

TEST_CASE("chapter 07: the tensor-core steps do five products of 2 Lq Lk d, on the visited tiles only",
          "[counters_backward]") {
  const Problem full = problem(128);
  // S, dP, dV, dK, dQ: 5 * 2 Lq Lk d per head, 2.5 times the forward's 4 Lq Lk d (backward_flops).
  const double five_products = 5 * 2.0 * full.Lq * full.Lk * full.d * full.heads();
  const simt::Counters c = count_backward(step("tensor_cores"), full);
  CHECK(c.mma_flop == five_products);
  CHECK(c.mma_flop == 2.5 * full.flops());
  CHECK(c.mma == five_products / kMmaFlop);

  // Under is_causal, step d visits the pairs its plan line names; step c still does them all.
  for (Causal align : {Causal::top_left, Causal::bottom_right}) {
    const Problem p = problem(128, align, 192);
    INFO(p.describe());
    const Plan plan = plan_of(step("causal"), p);
    REQUIRE(p.Lq % plan.Br == 0);  // whole tiles: mma count = pairs visited x the mma of a pair
    REQUIRE(p.Lk % plan.Bc == 0);
    CHECK(plan.visited < plan.all);
    const double every = count_backward(step("tensor_cores"), p).mma;
    const simt::Counters d = count_backward(step("causal"), p);
    const double skip = d.mma;
    CHECK(every == 10.0 * p.Lq * p.Lk * p.d / kMmaFlop);
    CHECK(skip == plan.visited * 10.0 * plan.Br * plan.Bc * p.d / kMmaFlop);
    // Step e: step d's products, its tiles (K and V once a block, Q and dO once a pair visited) by
    // 16-byte copies, 32 lanes a request, where step d loads 2 bytes a lane: 8 times the requests.
    const simt::Counters e = count_backward(step("cp_async"), p);
    CHECK(e.mma == d.mma);
    const simt::GlobalOps copies = e.global[simt::kCpAsyncSource];
    const double tile_bytes = 2.0 * p.d * (2.0 * plan.Bc * (p.Lk / plan.Bc) + 2.0 * plan.Br * plan.visited);
    CHECK(copies.lanes * 16 == tile_bytes);
    CHECK(copies.lanes / copies.requests == 32);
    CHECK(d.global[simt::kCpAsyncSource].requests == 0);
    CHECK(d.global[simt::kGlobalLoad].requests - e.global[simt::kGlobalLoad].requests == 8 * copies.requests);
    // The deterministic option: the K/V pass without dQ (4 products), then dQ's own pass over the
    // same pairs recomputes S and dP (3 products): 7 where step d does 5, and no atomics at all.
    const simt::Counters det = count_backward(step("deterministic"), p);
    CHECK(det.mma == plan.visited * 14.0 * plan.Br * plan.Bc * p.d / kMmaFlop);
    CHECK(det.global[simt::kGlobalAtomic].requests == 0);
  }
}

TEST_CASE("chapter 07: dQ takes one fp32 atomic per element and K/V tile", "[counters_backward]") {
  const Problem p = problem(128);
  // Step b: a block per K/V tile adds its share of every dQ element: Tc = Lk / Bc times each. A
  // warp adds 32 consecutive floats of one row: 4 sectors per request.
  const BackwardVariant& kv = step("kv_outer");
  const Plan plan = plan_of(kv, p);
  const double tiles = (p.Lk + plan.Bc - 1) / plan.Bc;
  const simt::GlobalOps atom = count_backward(kv, p).global[simt::kGlobalAtomic];
  CHECK(atom.lanes == p.heads() * static_cast<double>(p.Lq) * p.d * tiles);
  CHECK(atom.lanes == kv.atomics(p));  // the cost model of variants.cpp
  CHECK(atom.lanes / atom.requests == 32);
  CHECK(atom.sectors / atom.requests == 4);
  // Step c adds from mma accumulators: per register, lane l holds row l / 4 and column
  // 2 (l % 4) of an 8-column tile, so a request covers 8 rows of 8 floats: 8 sectors.
  const BackwardVariant& mma = step("tensor_cores");
  const Plan mma_plan = plan_of(mma, p);
  const simt::GlobalOps mma_atom = count_backward(mma, p).global[simt::kGlobalAtomic];
  CHECK(mma_atom.lanes == p.heads() * static_cast<double>(p.Lq) * p.d * ((p.Lk + mma_plan.Bc - 1) / mma_plan.Bc));
  CHECK(mma_atom.lanes == mma.atomics(p));
  CHECK(mma_atom.lanes / mma_atom.requests == 32);
  CHECK(mma_atom.sectors / mma_atom.requests == 8);
}

TEST_CASE("chapter 07's counters do not depend on the schedule order or the number of workers", "[counters_backward]") {
  // A tail (Lk = 100) and bottom-right alignment: lanes and blocks diverge, and dQ's atomics
  // arrive in another order in every schedule; what is counted must not change.
  const Problem p = problem(70, Causal::bottom_right, 100);
  for (const char* name : {"kv_outer", "causal", "deterministic", "cp_async"}) {
    INFO(name << " on " << p.describe());
    counters_test::same_in_every_schedule([&] { return count_backward(step(name), p); });
  }
}
