// test_sampling.cpp: a problem modelled from a part of it (model/sampling.h) models as the whole
// problem does. For every chapter's best variant, on shapes small enough to emulate whole, the
// modelled time from one emulated head (causal; Lq != Lk under a mask every head shares; d = 128
// under a mask per head) and from two or three row groups (a causal head, whose counts are a
// quadratic in the groups; Lq != Lk with a partial group under a mask) is within 3 % of the full
// emulation's, and so are its DRAM bytes (where shared memory and K/V read once per head are
// easiest to get wrong) and each term of the model; the blocks are the whole problem's. Chapter
// 07's backward variants from one or two emulated heads (backward/profile.cpp) within 1 %. Also:
// when sampling is chosen by itself, forward and backward.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backward_run.h"
#include "harness/backward/backward.h"
#include "harness/profile.h"

using namespace attn;

namespace {

struct Outcome {
  double us = 0, dram = 0;
  bool pass = false;
  double blocks = 0;
  double share = 0;      // of the SMs' time the longest stage keeps busy (model/model.h's busy)
  double terms[6] = {};  // DRAM, L2, L1, issue, MUFU, tensor, in us, summed over the stages
};
const char* const kTerms[] = {"DRAM", "L2", "L1", "issue", "MUFU", "tensor"};

// Every chapter's best variant that takes p (chapter 09's: no attn_mask, d = 64 or 128) profiled
// on p, emulating `heads` of its heads (0: all of them), and its rows in groups when `rows`
// (model/sampling.h). Chapters 01 to 06 take every problem of this file.
std::vector<Outcome> profile_best(const Problem& p, long long heads, bool rows = false) {
  ProfileOptions o;
  o.emulated_heads = heads;
  o.row_groups = rows ? "always" : "never";
  Profiler profiler(o);
  RunOptions checks;
  checks.sample = false;
  std::vector<Outcome> out;
  for (const std::string& c : chapters()) {
    const Variant* v = best_of(c);
    if (!v->unsupported(p).empty()) {
      REQUIRE(c >= "09");
      continue;
    }
    const SamplePlan plan = profiler.plan(*v, p);
    REQUIRE(plan.heads.emulated == (heads ? heads : static_cast<long long>(p.heads())));
    REQUIRE(plan.rows.empty() == !rows);
    const Profile& pr = profiler.run(*v, p, plan, checks, false);
    Outcome m{pr.us, 0, pr.result.verdict.pass};
    for (const StageProfile& s : pr.stages) {
      m.dram += dram_bytes(s.counters);
      m.blocks += s.counters.blocks;
      m.share = std::max(m.share, s.terms.share);
      const double t[6] = {s.terms.dram, s.terms.l2, s.terms.l1, s.terms.issue, s.terms.mufu, s.terms.tensor};
      for (int k = 0; k < 6; ++k) m.terms[k] += t[k];
    }
    out.push_back(m);
  }
  return out;
}

// The whole problem against the part of it `heads` and `rows` emulate, for every chapter's best.
void sampled_models_as_whole(const Problem& p, long long heads, bool rows) {
  INFO(p.describe());
  const std::vector<Outcome> whole = profile_best(p, 0), part = profile_best(p, heads, rows);
  REQUIRE(whole.size() == part.size());
  std::printf("%s: modelled us, whole problem vs %lld head%s%s emulated (error); DRAM bytes the same\n",
              p.describe().c_str(), heads, heads == 1 ? "" : "s", rows ? " and 2 or 3 row groups" : "");
  for (size_t i = 0; i < whole.size(); ++i) {
    std::printf("  %-18s %12.3f %12.3f (%+.3f%%) | %12.0f %12.0f (%+.3f%%)\n", best_of(chapters()[i])->name.c_str(),
                whole[i].us, part[i].us, 100 * (part[i].us / whole[i].us - 1), whole[i].dram, part[i].dram,
                100 * (part[i].dram / whole[i].dram - 1));
  }
  std::fflush(stdout);
  for (size_t i = 0; i < whole.size(); ++i) {
    INFO(best_of(chapters()[i])->name << ": whole " << whole[i].us << " us, " << whole[i].dram << " DRAM bytes; sampled "
                                      << part[i].us << " us, " << part[i].dram << " DRAM bytes");
    CHECK(whole[i].pass);
    CHECK(part[i].pass);
    CHECK(std::isfinite(part[i].us));
    CHECK(std::fabs(part[i].us - whole[i].us) <= 0.03 * whole[i].us);
    CHECK(std::fabs(part[i].dram - whole[i].dram) <= 0.03 * whole[i].dram);
    CHECK(part[i].blocks == whole[i].blocks);  // the dry run's grids
    // The blocks' work, mapped onto the whole grid (profile.cpp's whole_work): the same tail.
    CHECK(part[i].share == Approx(whole[i].share).epsilon(0.01));
    // Every term, not only the one that bounds the time (all of them are L1-bound here).
    for (int k = 0; k < 6; ++k) {
      INFO(kTerms[k] << " term: whole " << whole[i].terms[k] << " us, sampled " << part[i].terms[k] << " us");
      CHECK(std::fabs(part[i].terms[k] - whole[i].terms[k]) <= 0.03 * whole[i].terms[k]);
    }
  }
}

Problem shape(int B, int H, int Lq, int Lk, int d) {
  Problem p;
  p.B = B, p.H = H, p.Lq = Lq, p.Lk = Lk, p.d = d;
  return p;
}

}  // namespace

TEST_CASE("one emulated head models a causal problem as all its heads do", "[sampling]") {
  Problem p = shape(2, 3, 320, 320, 64);  // 320: a last Q tile of 64 rows at Br = 128
  p.causal = Causal::top_left;
  sampled_models_as_whole(p, 1, false);
}

TEST_CASE("one emulated head models Lq != Lk under a shared mask as all its heads do", "[sampling]") {
  Problem p = shape(2, 2, 200, 328, 64);
  p.mask = MaskKind::boolean;  // one [Lq, Lk] mask for every head: its sectors cross from DRAM once
  sampled_models_as_whole(p, 1, false);
}

TEST_CASE("one emulated head models d = 128 under a mask per head as all its heads do", "[sampling]") {
  Problem p = shape(1, 4, 256, 256, 128);
  p.mask = MaskKind::additive;
  p.mask_per_head = true;
  sampled_models_as_whole(p, 1, false);
}

TEST_CASE("row groups model a causal head as the whole head does", "[sampling]") {
  Problem p = shape(1, 1, 1024, 1024, 32);  // 4 groups of 256 rows, the fewest a quadratic can use
  p.causal = Causal::top_left;              // chapter 06 skips tiles, chapter 03 reads S up to the diagonal
  sampled_models_as_whole(p, 1, true);
}

TEST_CASE("row groups of one head model Lq != Lk with a partial group under a mask as all heads do", "[sampling]") {
  Problem p = shape(1, 2, 844, 500, 32);  // 3 groups and 76 rows
  p.mask = MaskKind::boolean;
  sampled_models_as_whole(p, 1, true);
}

TEST_CASE("sampling is chosen by the problem's size", "[sampling]") {
  Profiler profiler{ProfileOptions{}};
  const Variant& naive = *best_of(chapters().front());
  // The emulator's default problem: all of it.
  CHECK_FALSE(profiler.plan(naive, Problem{}).sampled());
  // The FlashAttention-2 paper's shapes at N = 1024: a few of the 512 heads, at least one, every row.
  const SamplePlan large = profiler.plan(naive, shape(32, 16, 1024, 1024, 128));
  CHECK(large.heads.total == 512);
  CHECK(large.heads.sampled());
  CHECK(large.heads.emulated >= 1);
  CHECK(large.heads.emulated < large.heads.total / 4);  // a few: how many depends on the machine's workers
  CHECK(large.rows.empty());
  const std::vector<Problem> e = emulated_problems(shape(32, 16, 1024, 1024, 128), large);
  REQUIRE(e.size() == 1);
  CHECK(e[0].heads() == static_cast<size_t>(large.heads.emulated));
  CHECK(e[0].Lq == 1024);
  // A long head: one head, and row groups: 1 and 2 groups of 256 rows (a line), or 1 to 3 under
  // is_causal (a quadratic).
  Problem longer = shape(1, 16, 16384, 16384, 128);
  const SamplePlan rows = profiler.plan(naive, longer);
  CHECK(rows.heads.emulated == 1);
  CHECK(rows.rows == std::vector<int>{256, 512});
  longer.causal = Causal::top_left;
  CHECK(profiler.plan(*best_of("06_causal"), longer).rows == std::vector<int>{256, 512, 768});
  CHECK(profiler.plan(naive, longer).rows == std::vector<int>{256, 512, 768});
  // Bottom-right with Lq != Lk: the first rows of a shorter problem are not the problem's; no rows.
  longer.causal = Causal::bottom_right;
  longer.Lk = 8192;
  CHECK(profiler.plan(*best_of("06_causal"), longer).rows.empty());
}

namespace {

struct BackwardOutcome {
  double us = 0, dram = 0, blocks = 0, share = 0;
  bool pass = false;
};

// Every backward variant of chapter 07 profiled on p (backward/profile.cpp), emulating `heads` of
// its heads (0: all of them), O and L from the fp64 reference.
std::vector<BackwardOutcome> profile_backward_all(const Problem& p, long long heads) {
  ProfileOptions o;
  o.emulated_heads = heads;
  Profiler profiler(o);
  std::vector<const BackwardVariant*> all;
  for (const BackwardVariant& v : backward_registry()) all.push_back(&v);
  const HeadSample sample = backward_heads(profiler, all, p);
  REQUIRE(sample.emulated == (heads ? heads : static_cast<long long>(p.heads())));
  const Problem e = backward_emulated(p, sample);
  RunOptions checks;
  checks.sample = false;
  BackwardRun run(e, checks);
  run.reference_forward();
  std::vector<BackwardOutcome> out;
  for (const BackwardVariant* v : all) {
    REQUIRE(v->info.unsupported(p).empty());
    const Profile& pr = profile_backward(profiler, *v, p, sample, e, run.dev, run.checker, checks, false);
    BackwardOutcome m{pr.us};
    m.pass = pr.result.verdict.pass;
    for (const StageProfile& s : pr.stages)
      m.dram += dram_bytes(s.counters), m.blocks += s.counters.blocks, m.share = std::max(m.share, s.terms.share);
    out.push_back(m);
  }
  return out;
}

void backward_sampled_as_whole(const Problem& p, long long heads) {
  INFO(p.describe());
  const std::vector<BackwardOutcome> whole = profile_backward_all(p, 0), part = profile_backward_all(p, heads);
  REQUIRE(whole.size() == part.size());
  std::printf("%s, backward: modelled us, whole problem vs %lld head%s emulated (error); DRAM bytes the same\n",
              p.describe().c_str(), heads, heads == 1 ? "" : "s");
  for (size_t i = 0; i < whole.size(); ++i) {
    const std::string& name = backward_registry()[i].info.name;
    std::printf("  %-18s %12.3f %12.3f (%+.3f%%) | %12.0f %12.0f (%+.3f%%)\n", name.c_str(), whole[i].us, part[i].us,
                100 * (part[i].us / whole[i].us - 1), whole[i].dram, part[i].dram, 100 * (part[i].dram / whole[i].dram - 1));
    INFO(name << ": whole " << whole[i].us << " us, " << whole[i].dram << " DRAM bytes; sampled " << part[i].us << " us, "
              << part[i].dram << " DRAM bytes");
    CHECK(whole[i].pass);
    CHECK(part[i].pass);
    CHECK(std::fabs(part[i].us - whole[i].us) <= 0.01 * whole[i].us);
    CHECK(std::fabs(part[i].dram - whole[i].dram) <= 0.01 * whole[i].dram);
    CHECK(part[i].blocks == whole[i].blocks);  // the dry run's grids
    CHECK(part[i].share == Approx(whole[i].share).epsilon(0.01));  // each block's work, placed on the whole grid
  }
  std::fflush(stdout);
}

}  // namespace

// Chapter 07's backward variants (tagged [sampling] too: one emulated head each, a few seconds).
TEST_CASE("one emulated head models a causal backward as all its heads do", "[sampling]") {
  Problem p = shape(2, 3, 320, 320, 64);  // whole 64-row tiles, the diagonal crossing them (the next case has tails)
  p.causal = Causal::top_left;
  p.dtype = DType::fp16;  // the tensor-core steps' type
  backward_sampled_as_whole(p, 1);
}

TEST_CASE("two emulated heads model a backward with Lq != Lk under a shared mask as all its heads do", "[sampling]") {
  Problem p = shape(2, 2, 200, 328, 64);
  p.dtype = DType::fp16;
  p.mask = MaskKind::boolean;  // one [Lq, Lk] mask for every head: its sectors cross from DRAM once
  backward_sampled_as_whole(p, 2);
}

TEST_CASE("a backward profile samples its heads by the problem's size", "[sampling]") {
  Profiler profiler{ProfileOptions{}};
  std::vector<const BackwardVariant*> all;
  for (const BackwardVariant& v : backward_registry()) all.push_back(&v);
  Problem small = shape(1, 2, 256, 256, 64);
  small.dtype = DType::fp16;
  CHECK_FALSE(backward_heads(profiler, all, small).sampled());
  // The H200 session's backward problem: 128 heads of 4096 rows, a head alone tens of seconds.
  Problem large = shape(4, 32, 4096, 4096, 64);
  large.dtype = DType::fp16;
  const HeadSample h = backward_heads(profiler, all, large);
  CHECK(h.total == 128);
  CHECK(h.emulated == 1);
}
