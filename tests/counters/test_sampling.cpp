// test_sampling.cpp: a problem modelled from a few of its heads (model/sampling.h) models as the
// whole problem does. For every chapter's best variant, on shapes small enough to emulate whole
// (causal; Lq != Lk under a mask every head shares; d = 128 under a mask per head), the modelled
// time from one emulated head is within 3 % of the full emulation's, and so are its DRAM bytes,
// the term where shared memory is easiest to get wrong. Also: when sampling is chosen by itself.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "harness/profile.h"

using namespace attn;

namespace {

struct Outcome {
  double us = 0, dram = 0;
  bool pass = false;
};

// Every chapter's best variant profiled on p, emulating `heads` of its heads (0: all of them).
std::vector<Outcome> profile_best(const Problem& p, long long heads) {
  ProfileOptions o;
  o.emulated_heads = heads;
  Profiler profiler(o);
  std::vector<const Variant*> best;
  for (const std::string& c : chapters()) best.push_back(best_of(c));
  const HeadSample sample = profiler.heads_to_emulate(best, p);
  REQUIRE(sample.emulated == (heads ? heads : static_cast<long long>(p.heads())));
  const Problem emulated = emulated_problem(p, sample);
  RunOptions ro;
  ro.sample = false;
  const Prepared prepared(emulated, ro);
  std::vector<Outcome> out;
  for (const Variant* v : best) {
    REQUIRE(v->unsupported(p).empty());
    const Profile& pr = profiler.run(*v, p, sample, emulated, prepared.inputs, prepared.checker, false);
    Outcome m{pr.us, 0, pr.result.verdict.pass};
    for (const StageProfile& s : pr.stages) m.dram += dram_bytes(s.counters);
    out.push_back(m);
  }
  return out;
}

void sampled_models_as_whole(const Problem& p) {
  INFO(p.describe());
  const std::vector<Outcome> whole = profile_best(p, 0), one = profile_best(p, 1);
  REQUIRE(whole.size() == one.size());
  std::printf("%s: modelled us, whole problem vs one head emulated (error); DRAM bytes the same\n", p.describe().c_str());
  for (size_t i = 0; i < whole.size(); ++i) {
    std::printf("  %-18s %12.3f %12.3f (%+.3f%%) | %12.0f %12.0f (%+.3f%%)\n", best_of(chapters()[i])->name.c_str(),
                whole[i].us, one[i].us, 100 * (one[i].us / whole[i].us - 1), whole[i].dram, one[i].dram,
                100 * (one[i].dram / whole[i].dram - 1));
  }
  std::fflush(stdout);
  for (size_t i = 0; i < whole.size(); ++i) {
    INFO(best_of(chapters()[i])->name << ": whole " << whole[i].us << " us, " << whole[i].dram << " DRAM bytes; from one head "
                                      << one[i].us << " us, " << one[i].dram << " DRAM bytes");
    CHECK(whole[i].pass);
    CHECK(one[i].pass);
    CHECK(std::isfinite(one[i].us));
    CHECK(std::fabs(one[i].us - whole[i].us) <= 0.03 * whole[i].us);
    CHECK(std::fabs(one[i].dram - whole[i].dram) <= 0.03 * whole[i].dram);
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
  sampled_models_as_whole(p);
}

TEST_CASE("one emulated head models Lq != Lk under a shared mask as all its heads do", "[sampling]") {
  Problem p = shape(2, 2, 200, 328, 64);
  p.mask = MaskKind::boolean;  // one [Lq, Lk] mask for every head: its sectors cross from DRAM once
  sampled_models_as_whole(p);
}

TEST_CASE("one emulated head models d = 128 under a mask per head as all its heads do", "[sampling]") {
  Problem p = shape(1, 4, 256, 256, 128);
  p.mask = MaskKind::additive;
  p.mask_per_head = true;
  sampled_models_as_whole(p);
}

TEST_CASE("sampling is chosen by the problem's size", "[sampling]") {
  Profiler profiler{ProfileOptions{}};
  std::vector<const Variant*> best;
  for (const std::string& c : chapters()) best.push_back(best_of(c));
  // The emulator's default problem: every head.
  const HeadSample small = profiler.heads_to_emulate(best, Problem{});
  CHECK_FALSE(small.sampled());
  // The FlashAttention-2 paper's shapes at N = 1024: a few of the 512 heads, at least one.
  const HeadSample large = profiler.heads_to_emulate(best, shape(32, 16, 1024, 1024, 128));
  CHECK(large.total == 512);
  CHECK(large.sampled());
  CHECK(large.emulated >= 1);
  CHECK(large.emulated <= 16);
  const Problem e = emulated_problem(shape(32, 16, 1024, 1024, 128), large);
  CHECK(e.heads() == static_cast<size_t>(large.emulated));
  CHECK(e.Lq == 1024);
  CHECK(e.d == 128);
}
