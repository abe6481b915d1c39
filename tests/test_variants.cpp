// test_variants.cpp: every registered variant against the fp64 reference over the sweep. Run by
// CTest once per schedule order on the cpu backend (SIMT_ORDER), once on a GPU.
#include <catch2/catch.hpp>
#include <map>

#include "harness/runner.h"
#include "sweep.h"

using namespace attn;

namespace {
// Every variant that supports p, run once (untimed) and checked on every row.
void check_all_variants(const Problem& p, std::map<std::string, int>& ran) {
  RunOptions o;
  o.reps = 0;
  o.sample = false;
  const Inputs in = Inputs::generate(p);
  const Checker checker(p, in, o);
  const DeviceInputs dev(p, in);
  for (const Variant& v : registry()) {
    if (!v.unsupported(p).empty()) continue;
    INFO(v.chapter << " / " << v.name << " on " << p.describe());
    const Result r = run_variant(v, p, dev, checker, o);
    INFO(r.verdict.why);
    CHECK(r.verdict.nonfinite == 0);
    CHECK(r.verdict.checked == p.q_elems());
    CHECK(r.verdict.pass);
    ++ran[v.name];
  }
}
}  // namespace

TEST_CASE("every variant matches the reference: lengths, head dims, dtypes, is_causal", "[variants]") {
  REQUIRE_FALSE(registry().empty());
  std::map<std::string, int> ran;
  for (const Problem& p : shape_sweep()) check_all_variants(p, ran);
  for (const Variant& v : registry()) {
    INFO(v.name);
    CHECK(ran[v.name] > 0);  // every variant met the sweep
  }
}

TEST_CASE("every variant with masks matches the reference: boolean, additive, shared, per head", "[variants]") {
  std::map<std::string, int> ran;
  for (const Problem& p : mask_sweep()) check_all_variants(p, ran);
  for (const Variant& v : registry())
    if (v.mask) {
      INFO(v.name);
      CHECK(ran[v.name] > 0);
    }
}

TEST_CASE("every variant matches the reference at large, tiny and negative scales", "[variants]") {
  std::map<std::string, int> ran;
  for (const Problem& p : scale_sweep()) check_all_variants(p, ran);
  for (const Variant& v : registry()) {
    INFO(v.name);
    CHECK(ran[v.name] > 0);
  }
}
