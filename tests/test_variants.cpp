// test_variants.cpp: every registered variant against the fp64 reference over the sweep. Run by
// CTest once per schedule order on the cpu backend (SIMT_ORDER), once on a GPU.
// FLASHSTEPS_VARIANTS=name[,name...] narrows the sweep to those variants (a student's kernel, a
// step in progress): the same problems and checks, in seconds instead of minutes.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "harness/runner.h"
#include "sweep.h"

using namespace attn;

namespace {
// Keeps only the variants FLASHSTEPS_VARIANTS names, once, before the first problem; an unknown
// name is an error (exit code 2), never a sweep that silently checks nothing.
void narrow_registry_once() {
  static const bool narrowed = [] {
    const char* env = std::getenv("FLASHSTEPS_VARIANTS");
    if (env == nullptr || *env == '\0') return false;
    std::set<std::string> wanted;
    std::istringstream names(env);
    for (std::string name; std::getline(names, name, ',');)
      if (!name.empty()) wanted.insert(name);
    for (const std::string& name : wanted)
      if (find_variant(name) == nullptr) {
        std::fprintf(stderr, "FLASHSTEPS_VARIANTS: no variant named '%s' (build/bin/flashsteps run --list)\n",
                     name.c_str());
        std::exit(2);
      }
    auto& all = registry();
    all.erase(std::remove_if(all.begin(), all.end(), [&](const Variant& v) { return wanted.count(v.name) == 0; }),
              all.end());
    std::fprintf(stderr, "FLASHSTEPS_VARIANTS: the sweep runs %zu variant(s)\n", all.size());
    return true;
  }();
  (void)narrowed;
}

// The shape sweep whole in forward order (and on a GPU). It comes in groups of three problems that
// differ only in is_causal (none, top-left, bottom-right); reverse order takes one of each group,
// shuffled order another, turning with the group (the one neither takes runs in forward order
// only). Each (lengths, head dim, dtype) of the sweep then meets every order, with the three
// alignments spread over them, and the three orders cost five thirds of a sweep of CI's time
// instead of three. The mask sweep runs whole in forward order and half in each other (below); the
// other sweeps, smaller, run whole in every order.
std::string this_order() {
  const char* env = std::getenv("SIMT_ORDER");
  return env != nullptr ? env : "";
}
std::vector<Problem> shape_sweep_of_this_order() {
  const std::string order = this_order();
  std::vector<Problem> all = shape_sweep();
  if (order != "reverse" && order != "shuffle") return all;
  std::vector<Problem> part;
  for (size_t i = 0; i < all.size(); ++i) {
    const bool same_group = i % 3 == 0 || (all[i].Lq == all[i - 1].Lq && all[i].Lk == all[i - 1].Lk &&
                                           all[i].d == all[i - 1].d && all[i].dtype == all[i - 1].dtype);
    if (all[i].causal != static_cast<Causal>(i % 3) || !same_group) {
      std::fprintf(stderr, "shape_sweep: problem %zu breaks the groups of three (is_causal must vary fastest)\n", i);
      std::exit(2);
    }
    const size_t group = i / 3, alignment = i % 3;
    if (alignment == (group + (order == "reverse" ? 0 : 1)) % 3) part.push_back(all[i]);
  }
  return part;
}

// The mask sweep whole in forward order (and on a GPU); reverse order takes its even problems and
// shuffled order its odd ones, so that each problem meets two orders. Its two long rows (Lk = 60001)
// are most of its time.
std::vector<Problem> mask_sweep_of_this_order() {
  const std::string order = this_order();
  std::vector<Problem> all = mask_sweep();
  if (order != "reverse" && order != "shuffle") return all;
  std::vector<Problem> part;
  for (size_t i = order == "reverse" ? 0 : 1; i < all.size(); i += 2) part.push_back(all[i]);
  return part;
}

// Every variant that supports p (or only the one named `only`), run once (untimed) and checked on
// every row.
void check_all_variants(const Problem& p, std::map<std::string, int>& ran, const std::string& only = "") {
  narrow_registry_once();
  RunOptions o;
  o.reps = 0;
  o.sample = false;
  const Inputs in = Inputs::generate(p);
  const Checker checker(p, in, o);
  const DeviceInputs dev(p, in);
  for (const Variant& v : registry()) {
    if (!v.unsupported(p).empty() || (!only.empty() && v.name != only)) continue;
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
  for (const Problem& p : shape_sweep_of_this_order()) check_all_variants(p, ran);
  for (const Variant& v : registry()) {
    INFO(v.name);
    if (!v.needs_mask_mod) CHECK(ran[v.name] > 0);  // every variant met the sweep; one that needs a mask_mod, the next ones
  }
}

// Chapter 09's step g launches under is_causal a section of heads at a time, as many as have their
// K and V in 32 MB (ch09::kv_section): with 22000 keys at d = 128 two of three heads, so a second
// section of one head and one block per Q tile past the last head. The sweep's keys are too few
// for sections; these two problems (top-left: the first 200 keys visited; bottom-right: all of them)
// run step g alone, checked on every row.
TEST_CASE("chapter 09's step g in sections of heads matches the reference", "[variants]") {
  narrow_registry_once();
  const Variant* g = find_variant("causal_skip");
  if (g == nullptr) return;  // FLASHSTEPS_VARIANTS left it out (an unknown name exits 2 there)
  std::map<std::string, int> ran;
  for (auto [Lq, c] : {std::pair{200, Causal::top_left}, std::pair{130, Causal::bottom_right}}) {
    Problem p;
    p.B = 1, p.H = 3, p.Lq = Lq, p.Lk = 22000, p.d = 128, p.dtype = DType::fp16, p.causal = c, p.seed = 22;
    INFO(p.describe());
    REQUIRE(g->unsupported(p).empty());
    CHECK(g->plan(p).find("2 heads at a time") != std::string::npos);
    check_all_variants(p, ran, g->name);
  }
  CHECK(ran[g->name] == 2);
}

TEST_CASE("every variant with masks matches the reference: boolean, additive, shared, per head", "[variants]") {
  std::map<std::string, int> ran;
  for (const Problem& p : mask_sweep_of_this_order()) check_all_variants(p, ran);
  for (const Variant& v : registry())
    if (v.mask) {
      INFO(v.name);
      CHECK(ran[v.name] > 0);
    }
}

TEST_CASE("every variant with a mask_mod matches the reference: windows, prefixes, documents, random blocks", "[variants]") {
  std::map<std::string, int> ran;
  const std::vector<Problem> sweep = mask_mod_sweep();
  for (const Problem& p : sweep) check_all_variants(p, ran);
  for (const Variant& v : registry())
    if (!v.mask_mods.empty()) {
      INFO(v.name);
      const auto takes = std::count_if(sweep.begin(), sweep.end(), [&](const Problem& p) {
        return std::find(v.mask_mods.begin(), v.mask_mods.end(), p.mod) != v.mask_mods.end();
      });
      CHECK(takes > 0);
      CHECK(ran[v.name] == static_cast<int>(takes));  // every problem of its rules, every step
    }
}

TEST_CASE("every variant with a score_mod matches the reference: softcap, ALiBi, both, with masks", "[variants]") {
  std::map<std::string, int> ran;
  const std::vector<Problem> sweep = score_mod_sweep();
  for (const Problem& p : sweep) check_all_variants(p, ran);
  for (const Variant& v : registry())
    if (v.score_mod) {
      INFO(v.name);
      // Every problem of its masks: a packed batch's for step e, a window's alone or packed for step f,
      // the rules' and is_causal's for step d.
      const auto takes = std::count_if(sweep.begin(), sweep.end(), [&](const Problem& p) {
        if (p.mod == ModKind::none) return !v.needs_mask_mod && (v.causal || p.causal == Causal::none);
        return std::find(v.mask_mods.begin(), v.mask_mods.end(), p.mod) != v.mask_mods.end();
      });
      CHECK(takes > 0);
      CHECK(ran[v.name] == static_cast<int>(takes));
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
