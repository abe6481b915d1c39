// test_published.cpp: the model beside what GPUs were measured doing (CTest model_vs_published).
//
// Two sets, at the FlashAttention-3 paper's Figure 5 shapes (B·N = 16k, H·d = 2048, fp16):
//   - this project's own kernels measured on an H200 (results/nvidia-h200/sdpa.csv: chapter 05's
//     lean_loop without is_causal, chapter 06's balanced with it), modelled on the H200's profile:
//     the same kernel on both sides, so the residual is the model's alone;
//   - FlashAttention-2's published bars on an H100 SXM5 (model/published.h), modelled on the H100's
//     profile with the same two kernels, which have FA2's structure but not its tuning: on the H200,
//     torch's flash backend (FA2) measured 1.05-1.35x faster than lean_loop (results/nvidia-h200/
//     sdpa.csv), so this residual is the model's and the kernels' gap together.
// Chapter 05's lean_loop with is_causal, which masks every tile (sdpa.csv, N = 2048): the masked
// path's SASS row held slower than the unmasked one and within 0.4-1 of the measured time, printed,
// not held within 15 %.
// And chapter 08's decoding steps at the H200 session's problem (results/nvidia-h200/promise.csv).
// Every point is printed, model / measured. What is held, on the first set and the best decoding
// step: every point within 15 % of its measurement (25 % at N = 512, where a block's fill and drain
// weigh most), the geometric mean of |ln(model / measured)| at most 0.10, and the model's error
// smaller than the max-of-floors roofline's without the latency term (model.h) at every point. The
// other decoding steps are modelled 1.35 to 1.9 times too fast: held within 2x, and closer than the
// floors. And each structure's time split into the tile loop's part and the part a block does once
// (N = 2048 and 8192 on one grid, and again N = 512 and 2048): the loop's held within 10 % in
// both. The second set is printed, not held: it scores the kernels as much as the model. Chapter
// 09, FlashAttention-3's structure, has a test case of its own below, and so have chapter 08's best
// step beside FlashInfer's published decoding and each kernel of
// chapters 01 to 03 at P1 and P3 (the H200's logs), chapter 04's steps c and d there
// (promise.csv), and each launch of the variants Nsight Compute profiled.
// Every comparison with the H200 models the kernels as it ran them: those whose code changed since
// take their SASS rows from h200_sass_as_run.inc (the GEMM's, chapter 03's and chapter 04's loads,
// since batched; chapter 09's step g, since launched Q tiles first without is_causal; steps f and
// g, whose wait for P V stays after the softmax since), steps f and g their ring of 2 stages,
// step g its grid as it ran (as_run, below), and chapters 05 and 06 at d = 96 and 128 their blocks
// of 8 warps (as_ran, eight_warps.h).
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "06_causal/causal.h"
#include "backward_run.h"
#include "09_hopper/hopper.h"
#include "eight_warps.h"
#include "gpus/gpus.h"
#include "harness/backward/backward.h"
#include "harness/decode/decode.h"
#include "harness/profile.h"
#include "model/published.h"

using namespace attn;

namespace {

// The kernels the H200 ran whose code changed since, as it ran them (h200_sass_as_run.inc): every
// comparison with the H200's measurements models them so; the published sets take today's kernels.
const SassKernel kAsRunRows[] = {
#include "h200_sass_as_run.inc"
};
const SassRows kAsRun{kAsRunRows, static_cast<int>(sizeof kAsRunRows / sizeof kAsRunRows[0])};

// Step g's grid as the H200 ran it (5676c28): heads first, (heads, Q tiles), without is_causal too,
// where it launches step f's (Q tiles, heads) since 07c4141. Without is_causal its blocks are alike,
// so only their places in the launch order differ: x and y exchanged (its y counted the Q tiles
// down), and with them the dimension
// each shared K/V sector is read along (model/model.h, DRAM re-reads by the grid's order) and each
// block's place among the works. Its SASS rows are the code it ran (h200_sass_as_run.inc).
void exchange_x_y(simt::Counters& c) {
  std::swap(c.grid_x, c.grid_y);
  std::swap(c.shared_sectors[0], c.shared_sectors[1]);
  std::swap(c.shared_reads[0], c.shared_reads[1]);
}
// And under is_causal every head in one section, where today's grid (heads of a section, Q tiles,
// sections: ch06::heaviest_first_grid) runs a section's Q tiles before the next's: the blocks, less
// those past the last section's heads, in the H200's order. A K/V sector is read along y in both.
void one_section(simt::Counters& c, std::vector<float>* work, long long heads) {
  const long long gx = static_cast<long long>(c.grid_x), gy = static_cast<long long>(c.grid_y), gz = static_cast<long long>(c.grid_z);
  const long long sections = (heads + gx - 1) / gx, spread = gz / sections;
  if (sections <= 1) return;
  if (work != nullptr && work->size() == static_cast<size_t>(gx * gy * gz)) {
    std::vector<float> heads_first(static_cast<size_t>(heads * gy * spread));
    for (size_t i = 0; i < work->size(); ++i) {  // block (x, y, z) of today's grid is head (z / spread) gx + x's
      const long long x = static_cast<long long>(i) % gx, y = static_cast<long long>(i) / gx % gy, z = static_cast<long long>(i) / (gx * gy);
      const long long head = z / spread * gx + x;
      if (head < heads) heads_first[static_cast<size_t>(head + heads * (y + gy * (z % spread)))] = (*work)[i];
    }
    *work = std::move(heads_first);
  }
  const double blocks = static_cast<double>(heads * gy * spread);
  c.blocks_counted *= blocks / c.blocks;
  c.blocks = blocks, c.grid_x = static_cast<double>(heads), c.grid_z = static_cast<double>(spread);
}
// Steps f and g as the H200 ran them: a ring of 2 stages (hopper.h's kStages), where they have a
// stage more since (kRotatedStages): each block's tiles past its first 2 refill a stage. A block's
// tiles are step f's every K/V tile, step g's those tiles_to_visit gives (chapter 06).
void two_stages(simt::Counters& c, const Problem& p, bool skip) {
  if (c.ring_stages == 0) return;
  AttentionParams a{};
  a.Lq = p.Lq, a.Lk = p.Lk, a.causal = p.causal;
  const int rows = ch09::kConsumers * ch09::kBr;
  double refills = 0;
  for (int q0 = 0; q0 < p.Lq; q0 += rows)
    refills += std::max(0, (skip ? ch06::tiles_to_visit(a, q0, rows, ch09::kBc) : (p.Lk + ch09::kBc - 1) / ch09::kBc) - ch09::kStages);
  c.ring_stages = ch09::kStages, c.ring_refills = refills * p.B * p.H;
}
bool runs(const StageProfile& s, const char* kernel) {
  return std::any_of(s.kernels.begin(), s.kernels.end(), [&](const std::string& k) { return k.find(kernel) != std::string::npos; });
}
// An 8-warp launch's kernel (eight_warps.h) as the library names it: its Policy without the
// EightWarps wrapper (names without one pass unchanged), so that the SASS rows of the kernel the
// H200 ran are found under it. Host code: eight_warps.cu is a kernel file, instrumented in the
// counters build.
std::string library_name(const std::string& kernel) {
  const std::string wrapper = "EightWarps<";
  const size_t open = kernel.find(wrapper);
  if (open == std::string::npos) return kernel;
  // The wrapper's qualified name starts after the kernel's '<' or ", " before it.
  const size_t angle = kernel.rfind('<', open - 1), comma = kernel.rfind(", ", open);
  const size_t at = std::max(angle == std::string::npos ? 0 : angle + 1, comma == std::string::npos ? 0 : comma + 2);
  size_t end = open + wrapper.size();  // one past the wrapper's closing '>'
  for (int depth = 1; end < kernel.size() && depth > 0; ++end) depth += kernel[end] == '<' ? 1 : kernel[end] == '>' ? -1 : 0;
  const std::string inner = kernel.substr(open + wrapper.size(), end - 1 - open - wrapper.size());
  std::string rest = kernel.substr(end);
  // The demangler puts a space between two '>' only: "EightWarps<ch05::EveryTile> >" loses it.
  if (inner.back() != '>' && rest.rfind(" >", 0) == 0) rest.erase(0, 1);
  return kernel.substr(0, at) + inner + rest;
}
StageProfile as_run(StageProfile s, const Problem* p) {
  for (std::string& k : s.kernels) {  // an 8-warp launch (as_ran) takes the rows of the kernel the H200 ran
    const std::string library = library_name(k);
    INFO("an 8-warp launch, " << k << ", as the library names it: " << library);
    if (library != k) REQUIRE(find_sass(library, {}, 90, kSassArchs, kAsRun) != nullptr);
    k = library;
  }
  const bool step_f = runs(s, "intra_overlap_kernel"), step_g = runs(s, "causal_skip_kernel");
  if (step_f || step_g) {
    REQUIRE(p != nullptr);  // the problem's, which a stage alone does not hold
    two_stages(s.counters, *p, step_g);
    for (simt::Counters& c : s.launches) two_stages(c, *p, step_g);
  }
  if (!step_g) return s;
  const long long heads = static_cast<long long>(p->B) * p->H;
  if (s.path.causal != nullptr) {
    one_section(s.counters, nullptr, heads);
    for (size_t l = 0; l < s.launches.size(); ++l) one_section(s.launches[l], l < s.work.size() ? &s.work[l] : nullptr, heads);
    return s;
  }
  exchange_x_y(s.counters);
  for (size_t l = 0; l < s.launches.size(); ++l) {
    simt::Counters& c = s.launches[l];
    if (l < s.work.size() && s.work[l].size() == static_cast<size_t>(c.grid_x * c.grid_y * c.grid_z)) {
      const long long gx = static_cast<long long>(c.grid_x), gy = static_cast<long long>(c.grid_y);
      std::vector<float> heads_first(s.work[l].size());
      for (size_t i = 0; i < heads_first.size(); ++i) {  // block (x, y, z) of today's grid is (y, gx - 1 - x, z) of the
        // H200's, whose y counted the Q tiles down
        const long long x = static_cast<long long>(i) % gx, y = static_cast<long long>(i) / gx % gy, z = static_cast<long long>(i) / (gx * gy);
        heads_first[y + gy * ((gx - 1 - x) + gx * z)] = s.work[l][i];
      }
      s.work[l] = std::move(heads_first);
    }
    exchange_x_y(c);
  }
  return s;
}
StageProfile as_run(const StageProfile& s) { return as_run(s, nullptr); }
Profile as_run(Profile pr) {
  for (StageProfile& s : pr.stages) s = as_run(std::move(s), &pr.problem);
  return pr;
}

// The variant as the H200 ran it on p: chapter 05's lean_loop (chapter 09's fa2_baseline) and
// chapter 06's balanced at d = 96 and 128 with the 8-warp tiles of eight_warps.h, under their own
// names and stages; any other variant, or head dim, as it is.
const Variant& as_ran(const Variant& v, const Problem& p) {
  static const std::map<std::string, Variant> ran = [] {
    std::map<std::string, Variant> m;
    const auto add = [&](const char* name, cudaError_t (*launch)(const AttentionParams&), const char* stage) {
      const Variant* today = find_variant(name);
      REQUIRE(today != nullptr);
      Variant v = *today;
      v.run = [launch, stage = std::string(stage)](const AttentionParams& a, Stages& st) {
        st.run(stage, [&] { return launch(a); });
      };
      m.emplace(name, std::move(v));
    };
    add("lean_loop", eight_warps::lean_loop, "FlashAttention-2 (lean_loop)");
    add("fa2_baseline", eight_warps::lean_loop, "Hopper (fa2_baseline)");
    add("balanced", eight_warps::balanced, "FlashAttention-2, heaviest first");
    return m;
  }();
  if ((p.d != 96 && p.d != 128) || !ran.count(v.name)) return v;
  return ran.at(v.name);
}

// A profile (or a stage of one) modelled on the H200's profile as the H200 ran its kernels.
template <class Counted>
Remodelled as_run_on_h200(const Counted& c, bool latency = true, bool fill_drain = true) {
  return remodel(as_run(c), *gpus::find_gpu("h200"), latency, fill_drain, kAsRun);
}
// A stage of steps f and g needs its problem (as_run).
Remodelled as_run_on_h200(const StageProfile& s, const Problem& p) {
  return remodel(as_run(s, &p), *gpus::find_gpu("h200"), true, true, kAsRun);
}

Problem figure5(int N, int d, bool causal) {
  Problem p;
  p.B = 16384 / N, p.H = 2048 / d, p.Lq = p.Lk = N, p.d = d, p.dtype = DType::fp16;
  p.causal = causal ? Causal::top_left : Causal::none;
  return p;
}

// A kernel's own name, without its namespaces, template arguments and parameters, as both Nsight
// Compute ("void ch01::<unnamed>::softmax_kernel<float>(AttentionParams, ...)") and the emulator
// ("void ch01::(anonymous namespace)::softmax_kernel<float>(...)") spell it: softmax_kernel.
std::string base_name(std::string name) {
  for (const std::string anonymous : {"(anonymous namespace)::", "<unnamed>::", "unnamed>::"})
    for (size_t at; (at = name.find(anonymous)) != std::string::npos;) name.erase(at, anonymous.size());
  name = name.substr(0, name.find_first_of("<("));
  const size_t space = name.find_last_of(" :");
  return space == std::string::npos ? name : name.substr(space + 1);
}

// One emulated head stands for all (model/sampling.h), every emulated row checked.
struct OneHead {
  Profiler profiler{[] {
    ProfileOptions o;
    o.emulated_heads = 1;
    return o;
  }()};
  RunOptions checks = [] {
    RunOptions r;
    r.sample = false;
    return r;
  }();
  const Profile& run(const Variant& v, const Problem& p) { return profiler.run(v, p, profiler.plan(v, p), checks, false); }
};

// Step g at the Figure 5 shapes, which two [hopper] test cases profile (one process, in CI): the
// first's profile serves the second.
const Profile& step_g_at(OneHead& one, const Variant& g, const Problem& p) {
  static std::map<std::string, Profile> done;
  const std::string key = g.name + " " + p.describe() + " " + p.mods();
  if (const auto at = done.find(key); at != done.end()) return at->second;
  return done.emplace(key, one.run(g, p)).first->second;
}

// A variant's profile on p as the H200 ran it (as_ran), and today's: the same profile where the two
// kernels are one. Both checked against the reference.
struct RanAndToday {
  Profile ran, today;
};
RanAndToday ran_and_today(OneHead& one, const Variant& v, const Problem& p) {
  const Variant& as_it_ran = as_ran(v, p);
  RanAndToday r{one.run(as_it_ran, p), {}};
  REQUIRE(r.ran.result.verdict.pass);
  r.today = &as_it_ran == &v ? r.ran : one.run(v, p);
  REQUIRE(r.today.result.verdict.pass);
  return r;
}

// (d, is_causal, N) -> measured, modelled, and modelled without fill and drain (ms).
using Times = std::map<std::tuple<int, bool, int>, std::array<double, 3>>;

// The same grid at every N (B·N = 16k): a line through N = 2048 and 8192 splits each time into a
// part that grows with the keys (the tile loop) and one that does not (what the blocks do once,
// their start and end spread over the waves, and whatever else does not grow with N on this grid).
// The loop's part is held within 10 % of the measured one; the other is printed. A second line,
// through N = 512 and 2048, says whether the two parts are what they seem: if a tile cost the same
// at every N, both lines would give one loop and one intercept. Where a tile costs more at the
// shorter lengths (step g's, whose K and V come from DRAM there: notes/performance_model.md,
// "Chapter 09's SASS"), the longer line's intercept takes in the difference. `short_held`: hold
// that line's loop within 10 % too (chapters 05 and 06, whose tiles cost the same at every N).
void split_loop(const Times& at, std::ostringstream& t, bool short_held) {
  t << "per 1k keys (the loop) and once per launch (the intercept), ms: measured, model (model without fill and "
       "drain); from N = 2048 and 8192 | from N = 512 and 2048\n";
  // The line through (n0, a) and (n1, b), n in 1k keys: its slope and its value at N = 0, and both
  // as printed (measured, model, model without fill and drain).
  const auto line_through = [](double n0, const std::array<double, 3>& a, double n1, const std::array<double, 3>& b,
                               double(&slope)[3], double(&once)[3]) {
    for (int i = 0; i < 3; ++i) slope[i] = (b[i] - a[i]) / (n1 - n0), once[i] = a[i] - n0 * slope[i];
    char text[128];
    std::snprintf(text, sizeof text, "per 1k keys %.3f, %.3f (%.3f); once %.3f, %.3f (%.3f)", slope[0], slope[1],
                  slope[2], once[0], once[1], once[2]);
    return std::string(text);
  };
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      if (!at.count({d, causal, 2048}) || !at.count({d, causal, 8192})) continue;
      char head[32];
      std::snprintf(head, sizeof head, "%-4d %-7s ", d, causal ? "yes" : "no");
      double slope[3], once[3];
      std::string line =
          head + line_through(2.048, at.at({d, causal, 2048}), 8.192, at.at({d, causal, 8192}), slope, once);
      const bool short_line = at.count({d, causal, 512}) > 0;
      double short_slope[3] = {}, short_once[3] = {};
      if (short_line)
        line += " | " +
                line_through(0.512, at.at({d, causal, 512}), 2.048, at.at({d, causal, 2048}), short_slope, short_once);
      t << line << "\n";
      INFO(line);
      CHECK(std::fabs(slope[1] / slope[0] - 1) <= 0.10);
      if (short_held) {
        REQUIRE(short_line);
        CHECK(std::fabs(short_slope[1] / short_slope[0] - 1) <= 0.10);
      }
    }
}

double flop(const Problem& p) {
  const double pairs = p.causal == Causal::none ? double(p.Lq) * p.Lk : double(p.Lq) * (p.Lq + 1) / 2;
  return 4.0 * p.B * p.H * p.d * pairs;
}

}  // namespace

TEST_CASE("the model beside measured and published FlashAttention-2 structures", "[published]") {
  OneHead one;
  REQUIRE(gpus::find_gpu("h100"));
  REQUIRE(gpus::find_gpu("h200"));
  const gpus::Gpu& h100 = *gpus::find_gpu("h100");
  const std::string csv = std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/sdpa.csv";
  std::ostringstream t;
  t << "d    causal  N      variant     H200: measured  model  model/meas. (roofline/meas.) | H100: FA2 published  model  "
       "model/FA2\n";
  double log_sum = 0, log_sum_roofline = 0;
  int scored = 0;
  Times at;
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int N : {512, 2048, 8192}) {
        const Problem p = figure5(N, d, causal);
        const Variant* v = find_variant(causal ? "balanced" : "lean_loop");
        REQUIRE(v != nullptr);
        const auto [ran, pr] = ran_and_today(one, *v, p);  // as the H200 ran it, and today's kernel
        const double h200_us = as_run_on_h200(ran).us, h200_roofline_us = as_run_on_h200(ran, false).us;
        const double h100_us = remodel(pr, h100).us;
        const double model_h100 = flop(p) / h100_us / 1e6;
        const PublishedRate* fa2 = flash_attention2_h100(p.B, p.H, N, N, d, true, causal, true, false);
        REQUIRE(fa2 != nullptr);
        const double ms = recorded_ms(csv, "measured", p, *v);
        char line[256];
        if (ms > 0) {
          const double ratio = h200_us / 1e3 / ms, roofline = h200_roofline_us / 1e3 / ms;
          std::snprintf(line, sizeof line, "%-4d %-7s %-6d %-11s %9.3f ms %9.3f ms  %5.2f  (%5.2f)          | %6.0f TFLOP/s  %6.0f  %5.2f\n", d,
                        causal ? "yes" : "no", N, v->name.c_str(), ms, h200_us / 1e3, ratio, roofline, fa2->tflops,
                        model_h100, model_h100 / fa2->tflops);
          INFO(v->name << " at d=" << d << " N=" << N << (causal ? " causal" : "") << ": model/measured " << ratio);
          CHECK(std::fabs(ratio - 1) <= (N == 512 ? 0.25 : 0.15));
          CHECK(std::fabs(std::log(ratio)) < std::fabs(std::log(roofline)));
          log_sum += std::fabs(std::log(ratio)), log_sum_roofline += std::fabs(std::log(roofline)), ++scored;
          at[{d, causal, N}] = {ms, h200_us / 1e3, as_run_on_h200(ran, true, false).us / 1e3};
        } else {
          std::snprintf(line, sizeof line, "%-4d %-7s %-6d %-11s (not measured)                                | %6.0f TFLOP/s  %6.0f  %5.2f\n", d,
                        causal ? "yes" : "no", N, v->name.c_str(), fa2->tflops, model_h100, model_h100 / fa2->tflops);
        }
        t << line;
      }
  split_loop(at, t, true);
  // Chapter 05's lean_loop with is_causal: every tile computed and masked, key by key (sdpa.csv
  // measured it at 1.65-1.96 times its non-causal time at d = 128, 2.39-2.79 at d = 64). The SASS
  // data's row for the masked path (causal=top-left) is what the model sees of that cost: held
  // slower than the unmasked tile's row, and between 0.4 and 1 of the measurement; printed, not
  // held within 15 %: the model misses part of that path's cost (notes/performance_model.md).
  for (int d : {64, 128}) {
    const Problem p = figure5(2048, d, true);
    const Variant* v = find_variant("lean_loop");
    REQUIRE(v != nullptr);
    const Profile& pr = one.run(as_ran(*v, p), p);
    REQUIRE(pr.result.verdict.pass);
    Profile unmasked = pr;
    for (StageProfile& s : unmasked.stages) s.path.causal = nullptr;
    const double ms = recorded_ms(csv, "measured", p, *v);
    REQUIRE(ms > 0);
    const double ratio = as_run_on_h200(pr).us / 1e3 / ms, common = as_run_on_h200(unmasked).us / 1e3 / ms;
    char line[256];
    std::snprintf(line, sizeof line, "%-4d %-7s %-6d %-11s %9.3f ms %9.3f ms  %5.2f  (the unmasked tile's row: %.2f)\n", d, "yes",
                  p.Lq, v->name.c_str(), ms, ratio * ms, ratio, common);
    t << line;
    INFO(line);
    CHECK(ratio > common);
    CHECK(ratio > 0.4);
    CHECK(ratio < 1.0);
  }
  // Decoding: chapter 08's steps at the H200 session's problem (B = 1, Hq = 32, Hkv = 8, d = 128, a
  // contiguous cache of 32768 keys and the new one), measured in promise.csv. The last step the H200
  // measured (the chapter's best when it ran: paged) is held within 15 %; every measured step within
  // 1.5x (2x before the hits on a miss in flight, model.h's dram_in_flight_hits) and closer than the
  // floors. The steps added since (kv_together, rows_ahead, occupancy, score_per_lane) have no measurement: printed as such.
  Problem as_run;  // the measured rows' shape: one query row against 32769 keys per head
  as_run.B = 1, as_run.H = 32, as_run.Lq = 1, as_run.Lk = 32769, as_run.d = 128, as_run.dtype = DType::fp16;
  const std::string promise_csv = std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/promise.csv";
  std::map<std::string, double> measured_ms;  // by step, its row of promise.csv read once
  std::string last_measured;
  for (const DecodeVariant& v : decode_registry())
    if ((measured_ms[v.info.name] = recorded_ms(promise_csv, "measured", as_run, v.info)) > 0) last_measured = v.info.name;
  REQUIRE(!last_measured.empty());
  for (const DecodeVariant& v : decode_registry()) {
    if (v.info.name == "prefill_kernel") continue;  // chapter 05's kernel per sequence: not a decoding step
    const double ms = measured_ms.at(v.info.name);
    DecodeProblem dp;
    dp.B = 1, dp.Hq = 32, dp.Hkv = 8, dp.d = 128, dp.Lq = 1, dp.dtype = DType::fp16, dp.cache_lens = {32768};
    RunOptions sampled;
    sampled.sample = true;
    const Profile& pr = profile_decode(one.profiler, v, dp, true, sampled, false);
    REQUIRE(pr.result.verdict.pass);
    const double us = as_run_on_h200(pr).us;
    char line[256];
    if (ms <= 0) {  // no GPU has run it yet
      std::snprintf(line, sizeof line, "decode B=1 Hq=32 Hkv=8 d=128, 32769 keys: %-14s  not measured %9.3f ms%s\n",
                    v.info.name.c_str(), us / 1e3, v.info.best ? "  best" : "");
      t << line;
      continue;
    }
    const double ratio = us / 1e3 / ms, roofline = as_run_on_h200(pr, false).us / 1e3 / ms;
    std::snprintf(line, sizeof line, "decode B=1 Hq=32 Hkv=8 d=128, 32769 keys: %-14s %9.3f ms %9.3f ms  %5.2f  (%5.2f)%s\n",
                  v.info.name.c_str(), ms, us / 1e3, ratio, roofline, v.info.best ? "  best" : "");
    t << line;
    INFO(line);
    if (v.info.name == last_measured) CHECK(std::fabs(ratio - 1) <= 0.15);
    CHECK(ratio > 1 / 1.5);
    CHECK(ratio < 1.5);
    CHECK(std::fabs(std::log(ratio)) < std::fabs(std::log(roofline)));
  }
  REQUIRE(scored >= 8);  // the H200 CSV holds these shapes: a test that compares nothing is no test
  t << "geometric mean of |ln(model / measured)| on the H200: " << log_sum / scored << " (roofline without latency: "
    << log_sum_roofline / scored << ")\n";
  std::printf("%s", t.str().c_str());
  CHECK(log_sum / scored <= 0.10);
  CHECK(log_sum < log_sum_roofline);
}

// Chapter 08's best step beside FlashInfer's published decoding (model/published.h): one request,
// 32 query heads each with its own KV head (no GQA), d = 128, fp16, a contiguous cache of 8192 and
// 32768 keys (the new token's among them), modelled on the H100's profile. The best step reads a
// paged cache; on a contiguous one it reads the identity table, one page per sequence (harness/decode).
// FlashInfer's kernel is not this chapter's: the comparison scores the kernel as much as the model,
// as the FlashAttention-2 and -3 sets do, so it is printed with the issue's target (within 10
// points of each published share of 3.35 TB/s), not held. What is held is the shape the two
// published points have: the longer cache streams closer to the bandwidth, because what a call
// costs whatever its length (the launches, the blocks' first waits, the combine) weighs less; and
// the line through the two points splits each time so: its slope, the time per MB of cache, no
// faster than what a copy reaches of DRAM (gpus.h's [copy]); its intercept, the per-call part, is
// positive exactly when the longer cache streams closer, so that is held once. Both lines are
// printed, the model's and the one through FlashInfer's two points.
TEST_CASE("chapter 08's best beside FlashInfer's published decoding", "[published]") {
  OneHead one;
  const gpus::Gpu& h100 = *gpus::find_gpu("h100");
  const DecodeVariant* best = best_decode();
  REQUIRE(best != nullptr);
  std::ostringstream t;
  t << "decoding, B=1 Hq=Hkv=32 d=128 fp16, a contiguous cache: the H100 model of chapter 08's best (" << best->info.name
    << ") beside FlashInfer's published share of 3.35 TB/s (its blog, 2024-02-02, Figure 5, read off the plot; measured by "
       "its authors, not here)\n";
  double mb[2], model_us[2], published_us[2];
  int i = 0;
  for (const PublishedDecode& f : kFlashInferDecodeH100) {
    DecodeProblem dp;
    dp.B = 1, dp.Hq = 32, dp.Hkv = 32, dp.d = 128, dp.Lq = 1, dp.dtype = DType::fp16, dp.cache_lens = {f.keys - 1};
    RunOptions sampled;
    sampled.sample = true;
    const Profile& pr = profile_decode(one.profiler, *best, dp, true, sampled, false);
    REQUIRE(pr.result.verdict.pass);
    const double us = remodel(pr, h100).us, bytes = dp.cache_bytes();
    const double share = bytes / (us * 1e-6) / 3.35e12;  // the published shares' 3.35 TB/s
    mb[i] = bytes / 1e6, model_us[i] = us, published_us[i] = bytes / (f.share_of_3_35_tb_s * 3.35e12) * 1e6;
    const double points = 100 * (share - f.share_of_3_35_tb_s);
    char line[256];
    std::snprintf(line, sizeof line, "  %5d keys, cache %6.1f MB: modelled %7.2f us, %5.1f %%; published %5.1f %% (%7.2f us): %+5.1f points, %s\n",
                  f.keys, mb[i], us, 100 * share, 100 * f.share_of_3_35_tb_s, published_us[i], points,
                  std::fabs(points) <= 10 ? "within the target's 10" : "outside the target's 10");
    t << line;
    ++i;
  }
  REQUIRE(i == 2);
  const auto split = [&](const double(&us)[2], const char* what) {
    const double per_mb = (us[1] - us[0]) / (mb[1] - mb[0]), once = us[0] - mb[0] * per_mb;
    char line[200];
    std::snprintf(line, sizeof line, "  %-34s %6.2f us per call + %.4f us per MB (%.2f TB/s at the margin)\n", what, once,
                  per_mb, 1 / per_mb);
    t << line;
    return std::array<double, 2>{once, per_mb};
  };
  const std::array<double, 2> model = split(model_us, "model, through its two points:");
  split(published_us, "FlashInfer, through its two points:");
  std::printf("%s", t.str().c_str());
  INFO(t.str());
  CHECK(mb[1] / model_us[1] > mb[0] / model_us[0]);
  CHECK(1 / model[1] <= h100.dram_copy_tb_s() * 1.0001);  // MB per us: TB/s
}

// Chapter 09 (FlashAttention-3's structure: TMA, wgmma, a producer warpgroup and two consumers), its
// sm_90a SASS read as the other chapters' sm_90 SASS is (tools/sass_issue.py): HGMMA and UTMALDG
// as seen kinds, each wgmma group's wait in a warp's chain, named barriers that pass turns (not a
// block in lockstep), and producer warps, which give their registers back, hiding no one's waits.
// Step g (causal_skip) at the Figure 5 shapes, causal and not, against the H200's measurements
// (sdpa.csv), with FlashAttention-3's published bars beside; and every step of the chapter at the
// two shapes the H200 session ran them at (promise.csv). Held: the model closer to the measurement
// than the roofline at every point of step g and on the whole, no farther at every step's (as far
// where a floor binds: tma_ring's L2), and the order the H200 measured between step
// c and the warp-specialized steps (c first at d = 64, where a block of step c leaves room for 3 on
// an SM; d to g first at d = 128), step g's tile loop from N = 2048 to 8192 within 10 % of the
// H200's, split from what its blocks do once as chapter 05's is (split_loop), and the issue's
// targets: every point of step g within 15 % (25 % at N = 512), the geometric mean of
// |ln(model / measured)| at most 0.10. Step g's ring (model.h) is what meets them: where the
// heads-first grid it ran makes K and V cross DRAM (N = 512 to 2048), the H200 took 14 to 34 % longer per
// key than from 2048 to 8192, and without the ring the model's tile cost the same. Printed, not
// held: the loop from N = 512 to 2048.
TEST_CASE("the model beside chapter 09 measured and FlashAttention-3 published", "[published][hopper]") {
  OneHead one;
  const gpus::Gpu& h100 = *gpus::find_gpu("h100");
  const std::string dir = std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/";
  std::ostringstream t;
  t << "d    causal  N      variant       H200: measured  model  model/meas. (roofline/meas.) | H100: FA3 published  "
       "model  model/FA3\n";
  double log_sum = 0, log_sum_roofline = 0;
  int scored = 0, within = 0;
  Times at;
  const Variant* g = find_variant("causal_skip");
  REQUIRE(g != nullptr);
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int N : {512, 2048, 8192}) {
        const Problem p = figure5(N, d, causal);
        const Profile& pr = step_g_at(one, *g, p);
        REQUIRE(pr.result.verdict.pass);
        const double us = as_run_on_h200(pr).us, roofline_us = as_run_on_h200(pr, false).us;
        const double model_h100 = flop(p) / remodel(pr, h100).us / 1e6;
        const PublishedRate* fa3 = flash_attention3_h100(p.B, p.H, N, N, d, true, causal, true, false);
        REQUIRE(fa3 != nullptr);
        const double ms = recorded_ms(dir + "sdpa.csv", "measured", p, *g);
        REQUIRE(ms > 0);
        const double ratio = us / 1e3 / ms, roofline = roofline_us / 1e3 / ms;
        char line[256];
        std::snprintf(line, sizeof line, "%-4d %-7s %-6d %-13s %9.3f ms %9.3f ms  %5.2f  (%5.2f)          | %6.0f TFLOP/s  %6.0f  %5.2f\n",
                      d, causal ? "yes" : "no", N, g->name.c_str(), ms, us / 1e3, ratio, roofline, fa3->tflops, model_h100,
                      model_h100 / fa3->tflops);
        t << line;
        INFO(line);
        CHECK(std::fabs(std::log(ratio)) < std::fabs(std::log(roofline)));
        within += std::fabs(ratio - 1) <= (N == 512 ? 0.25 : 0.15);
        log_sum += std::fabs(std::log(ratio)), log_sum_roofline += std::fabs(std::log(roofline)), ++scored;
        at[{d, causal, N}] = {ms, us / 1e3, as_run_on_h200(pr, true, false).us / 1e3};
      }
  REQUIRE(scored == 12);
  CHECK(within == scored);
  CHECK(log_sum / scored <= 0.10);
  split_loop(at, t, false);
  t << "causal_skip: " << within << " of 12 within 15 % (25 % at N = 512); geometric mean of |ln(model / measured)| "
    << log_sum / scored << " (roofline without latency: " << log_sum_roofline / scored << "; the target: 0.10)\n";
  t << "every step at the H200 session's shapes (promise.csv): ms measured, modelled, model/measured (roofline/measured)\n";
  Problem p3 = figure5(4096, 128, false);
  p3.B = 1;  // the session's P3: B = 1, H = 16, N = 4096
  for (const Problem& p : {figure5(1024, 64, false), p3}) {
    std::map<std::string, std::array<double, 2>> at;  // variant: measured, modelled (ms)
    for (const Variant& v : registry()) {
      if (v.chapter != "09_hopper") continue;
      const Profile& pr = one.run(as_ran(v, p), p);
      REQUIRE(pr.result.verdict.pass);
      const double ms = recorded_ms(dir + "promise.csv", "measured", p, v);
      if ((v.name == "head_dim_tiles" || v.name == "persistent") && ms <= 0) {  // steps h and i, written after the session: modelled only
        char line[160];
        std::snprintf(line, sizeof line, "B=%-2d H=%-2d N=%-5d d=%-4d %-17s   -     %7.3f  not measured (today's kernel)\n",
                      p.B, p.H, p.Lq, p.d, v.name.c_str(), as_run_on_h200(pr).us / 1e3);
        t << line;
        continue;
      }
      REQUIRE(ms > 0);
      const double model_ms = as_run_on_h200(pr).us / 1e3, roofline = as_run_on_h200(pr, false).us / 1e3 / ms;
      at[v.name] = {ms, model_ms};
      char line[256];
      std::snprintf(line, sizeof line, "B=%-2d H=%-2d N=%-5d d=%-4d %-17s %7.3f %7.3f  %5.2f  (%5.2f)\n", p.B, p.H, p.Lq, p.d,
                    v.name.c_str(), ms, model_ms, model_ms / ms, roofline);
      t << line;
      INFO(line);
      CHECK(std::fabs(std::log(model_ms / ms)) <= std::fabs(std::log(roofline)));  // equal where a floor binds
    }
    // Step c against the warp-specialized steps d to g, in the order the H200 measured.
    for (const char* later : {"warp_specialized", "ping_pong", "intra_overlap", "causal_skip"}) {
      const bool c_first = at.at("tma_ring")[0] < at.at(later)[0];
      INFO(later << " against tma_ring at d = " << p.d);
      CHECK(c_first == (p.d == 64));  // what was measured, which the model must follow
      CHECK((at.at("tma_ring")[1] < at.at(later)[1]) == c_first);
    }
  }
  std::printf("%s", t.str().c_str());
  CHECK(log_sum < log_sum_roofline);
}

// Step h (head_dim_tiles: three consumers at d = 64, step g at d = 128) at the
// Figure 5 shapes on the H100's profile beside step g and FlashAttention-3's published bars, and at
// N = 8192 beside chapter 05's best, the ratio the issue sets against FlashAttention-3's over
// FlashAttention-2's (1.54 at d = 64, 1.75 at d = 128; model/published.h). Not measured: a model
// beside another kernel's measurement. Held: step h is step g at d = 128 (the same source); at
// d = 64 it is no slower than step g from N = 2048 on, and faster where the loop is long
// (N = 8192), the third consumer's work under the other two's chains; and the ratio within 10 % of
// the published one at both head dims. Printed, not held: N = 512, where its Q tiles of 192 rows
// give a head 3 blocks of few K/V tiles (4 at most), and under is_causal make its consumers walk
// 27 (consumer, K/V tile) pairs a head against step g's 20 (notes/09, step h's costs). Beside it
// step i, the chapter's best, step h's blocks made persistent: held no slower than step h anywhere, and more than 1.2
// times its rate at N = 512, where a block's fill and drain weigh most (notes/09, step i).
TEST_CASE("chapter 09's steps h and i beside step g and FlashAttention-3 published", "[published][hopper]") {
  OneHead one;
  const gpus::Gpu& h100 = *gpus::find_gpu("h100");
  const Variant *g = find_variant("causal_skip"), *h = find_variant("head_dim_tiles"), *fa2 = find_variant("lean_loop");
  const Variant* i = find_variant("persistent");
  REQUIRE(g != nullptr);
  REQUIRE(h != nullptr);
  REQUIRE(i != nullptr);
  REQUIRE(fa2 != nullptr);
  REQUIRE(i->best);
  std::ostringstream t;
  t << "chapter 09's steps h (head_dim_tiles: step g with 3 consumers at d = 64) and i, its best (persistent: step h's "
       "blocks, one per SM), on the H100 model beside step g and FlashAttention-3's published bars, TFLOP/s\n"
       "d    causal  N      step g  step h  h/g    FA3 published  h/FA3 | step i  i/h    i/FA3\n";
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int N : {512, 2048, 8192}) {
        const Problem p = figure5(N, d, causal);
        const Profile& pg = step_g_at(one, *g, p);
        const Profile ph = one.run(*h, p);  // a copy: a run's profile lives until the next
        const Profile pi = one.run(*i, p);
        REQUIRE(pg.result.verdict.pass);
        REQUIRE(ph.result.verdict.pass);
        REQUIRE(pi.result.verdict.pass);
        const double tg = flop(p) / remodel(pg, h100).us / 1e6, th = flop(p) / remodel(ph, h100).us / 1e6;
        const double ti = flop(p) / remodel(pi, h100).us / 1e6;
        const PublishedRate* fa3 = flash_attention3_h100(p.B, p.H, N, N, d, true, causal, true, false);
        REQUIRE(fa3 != nullptr);
        char line[200];
        std::snprintf(line, sizeof line, "%-4d %-7s %-6d %6.0f  %6.0f  %5.3f  %6.0f         %5.2f | %6.0f  %5.3f  %5.2f\n", d,
                      causal ? "yes" : "no", N, tg, th, th / tg, fa3->tflops, th / fa3->tflops, ti, ti / th, ti / fa3->tflops);
        t << line;
        INFO(line);
        // Step i hides what step h's blocks wait for at their ends under the next Q tile's work: never
        // slower, and most where a Q tile visits few K/V tiles (N = 512: one to four).
        CHECK(ti >= th);
        if (N == 512) CHECK(ti > 1.2 * th);
        if (d == 128) CHECK(th == Approx(tg).epsilon(0.005));  // one source; two functions ptxas compiles apart
        if (d == 64 && N >= 2048) CHECK(th >= tg);
        if (d == 64 && N == 8192) CHECK(th > 1.02 * tg);
        if (N == 8192 && !causal) {
          const Profile pf = one.run(*fa2, p);
          REQUIRE(pf.result.verdict.pass);
          const double tf = flop(p) / remodel(pf, h100).us / 1e6;
          const PublishedRate* fa2_published = flash_attention2_h100(p.B, p.H, N, N, d, true, false, true, false);
          REQUIRE(fa2_published != nullptr);
          const double published = fa3->tflops / fa2_published->tflops;
          std::snprintf(line, sizeof line, "  N = 8192, d = %d: step h / lean_loop %.3f (%.0f / %.0f), published FA3 / FA2 %.3f "
                        "(%.0f / %.0f): %+.1f %%\n", d, th / tf, th, tf, published, fa3->tflops, fa2_published->tflops,
                        100 * (th / tf / published - 1));
          t << line;
          INFO(line);
          CHECK(std::fabs(th / tf / published - 1) <= 0.10);
        }
      }
  std::printf("%s", t.str().c_str());
}

// The FlashAttention-3 paper's ablation (Table 2; model/published.h): B = 4, H = 16, N = 8448,
// d = 128, fp16, not causal, on an H100. Its rows do not map one to one onto this chapter's steps:
// its "no warp specialization" keeps the GEMM-softmax pipelining, which step c lacks, and its full
// kernel masks only the tiles that need it, as step g does, where steps b to f mask every tile (on
// this problem step g is step f's loop on unmasked tiles). Printed: steps c to g modelled on the
// H100's profile (today's kernels) beside the three published rates. Held, the issue's shape of the
// ablation: warp specialization pays (step d ahead of step c), and the overlaps of FA3's full
// kernel are worth at least 8 % over step d (step g at least 1.08 times step d's rate). Step f is
// printed, not held: its every-tile mask lengthens the chain its overlap shortens (notes/09).
TEST_CASE("chapter 09's steps beside FlashAttention-3's ablation", "[published][hopper]") {
  OneHead one;
  const gpus::Gpu& h100 = *gpus::find_gpu("h100");
  Problem p;
  p.B = 4, p.H = 16, p.Lq = p.Lk = 8448, p.d = 128, p.dtype = DType::fp16;
  std::map<std::string, double> tflops;
  std::ostringstream t;
  t << "FlashAttention-3's ablation, B=4 H=16 N=8448 d=128 fp16, not causal: the H100 model (today's kernels), TFLOP/s\n";
  for (const char* name : {"tma_ring", "warp_specialized", "ping_pong", "intra_overlap", "causal_skip"}) {
    const Variant* v = find_variant(name);
    REQUIRE(v != nullptr);
    const Profile& pr = one.run(*v, p);
    REQUIRE(pr.result.verdict.pass);
    tflops[name] = flop(p) / remodel(pr, h100).us / 1e6;
    char line[128];
    std::snprintf(line, sizeof line, "  %-18s %6.0f\n", name, tflops[name]);
    t << line;
  }
  t << "published (measured by the paper's authors on an H100, not here):";
  for (const PublishedAblation& a : kFlashAttention3Ablation) t << " " << a.what << " " << a.tflops << ";";
  const double no_ws = kFlashAttention3Ablation[0].tflops, no_pipelining = kFlashAttention3Ablation[1].tflops,
               full = kFlashAttention3Ablation[2].tflops;
  t << "\n  modelled: step d / step c " << tflops["warp_specialized"] / tflops["tma_ring"] << ", step g / step d "
    << tflops["causal_skip"] / tflops["warp_specialized"] << " (the targets: at least 1 and 1.08); published: full / "
    << "without warp specialization " << full / no_ws << ", full / without pipelining " << full / no_pipelining << "\n";
  std::printf("%s", t.str().c_str());
  INFO(t.str());
  CHECK(tflops["warp_specialized"] >= tflops["tma_ring"]);
  CHECK(tflops["causal_skip"] >= 1.08 * tflops["warp_specialized"]);
}

// The breakdown lines of an H200 session's log (results/nvidia-h200/logs/NAME): each variant's
// time per stage, ms. A variant's line, then its stages': "    S = QK^T      7.1257 ms   47%   ...".
static std::map<std::string, std::map<std::string, double>> breakdown_ms(const std::string& name) {
  std::ifstream in(std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/logs/" + name);
  REQUIRE(in);
  std::map<std::string, std::map<std::string, double>> stage_ms;
  std::string variant;
  const std::regex stage_line(R"(^    (\S.*?) {2,}([0-9.]+) ms .*)"), variant_line(R"(^(\w+) +[0-9.e+-]+ +pass .*)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, variant_line)) variant = m[1];
    else if (!variant.empty() && std::regex_match(line, m, stage_line)) stage_ms[variant][m[1]] = std::stod(m[2]);
  }
  return stage_ms;
}

// The logged time of each of a profile's stages (from breakdown_ms), in the profile's order: the
// variant logged, and every stage the model has timed under the same name.
static std::vector<double> logged_stage_ms(const std::map<std::string, std::map<std::string, double>>& logged,
                                           const std::string& name, const Profile& pr) {
  REQUIRE(logged.count(name) == 1);
  const std::map<std::string, double>& stages = logged.at(name);
  REQUIRE(stages.size() == pr.stages.size());
  std::vector<double> ms;
  for (const StageProfile& s : pr.stages) {
    INFO(name << ": " << s.stage);
    REQUIRE(stages.count(s.stage) == 1);
    ms.push_back(stages.at(s.stage));
  }
  return ms;
}

// Chapters 01 to 03 run two or three kernels each, and the H200's logs of P1 and P3
// (results/nvidia-h200/logs/promise_P1.log, promise_P3.log) time every one of them: each stage
// beside its model on the H200's profile, and the model of the code as it is now (the GEMM's loads
// and chapter 03's scores since batched: a prediction for the next GPU session). Printed, not held: a
// stage's model misses by up to 2.4x either way at these shapes (notes/performance_model.md,
// "Measured on an H200"), and chapter 03's fused stage as it ran is modelled without its score
// loads' waits (h200_sass_as_run.inc says why); what is held is that every stage the model has was
// timed, under the same name.
TEST_CASE("each stage of chapters 01 to 03 beside the H200's breakdown at P1 and P3", "[published]") {
  OneHead one;
  REQUIRE(gpus::find_gpu("h200"));
  std::ostringstream t;
  t << "each stage on the H200 (results/nvidia-h200/logs/promise_P1.log, promise_P3.log: the breakdown lines), ms: measured, "
       "the model on the H200's profile (of the code it ran), model/measured; and the model of today's code, not yet measured\n";
  for (const auto& [log, B, H, N, d] : {std::tuple{"promise_P1.log", 16, 32, 1024, 64}, std::tuple{"promise_P3.log", 1, 16, 4096, 128}}) {
    const std::map<std::string, std::map<std::string, double>> stage_ms = breakdown_ms(log);
    Problem p;
    p.B = B, p.H = H, p.Lq = p.Lk = N, p.d = d, p.dtype = DType::fp16;
    for (const char* name : {"register_blocked", "exp2", "blocked_softmax_pv"}) {
      const Variant* v = find_variant(name);
      REQUIRE(v != nullptr);
      const Profile& pr = one.run(*v, p);
      REQUIRE(pr.result.verdict.pass);
      const std::vector<double> logged = logged_stage_ms(stage_ms, name, pr);
      for (const StageProfile& s : pr.stages) {
        INFO(name << ": " << s.stage);
        const double ms = logged[&s - pr.stages.data()], model_ms = as_run_on_h200(s).us / 1e3;
        const double today_ms = remodel(s, *gpus::find_gpu("h200")).us / 1e3;
        CHECK(ms > 0);
        char line[256];
        std::snprintf(line, sizeof line, "B=%-2d H=%-2d N=%-5d d=%-3d %-18s %-24s %9.3f %9.3f  %5.2f   today %9.3f\n", B, H, N,
                      d, &s == &pr.stages.front() ? name : "", s.stage.c_str(), ms, model_ms, model_ms / ms, today_ms);
        t << line;
      }
    }
  }
  std::printf("%s", t.str().c_str());
}

// Chapter 04's steps c and d as the H200 ran them at P1 and P3 (results/nvidia-h200/promise.csv),
// modelled on its profile with the rows of the code it ran (h200_sass_as_run.inc). Step d, O in
// registers, is held within 15 % of its time at both, and the model of that code ranks it ahead of
// step c at P1, as measured. Step c, which moves O_i, l and m to global memory and back for every
// (K/V tile, Q tile) pair, models a quarter to a third short of its time: held within 2x, as the
// decoding steps the model misses are. At P3 the H200 ran step d ahead (48.53 against 57.42 ms)
// where the model of the code it ran puts step c ahead: the miss is step c's, and no counter here
// says what it waits for (notes/04_flash_v1.md, "At d = 128 step d beats step c"). Today's code
// modelled beside it, not yet measured.
TEST_CASE("chapter 04's steps c and d beside the H200 at P1 and P3", "[published]") {
  OneHead one;
  const std::string csv = std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/promise.csv";
  std::ostringstream t;
  t << "chapter 04's steps c and d on the H200 (results/nvidia-h200/promise.csv), ms: measured, the model on its profile "
       "(of the code it ran), model/measured; and the model of today's code, not yet measured\n";
  for (const auto& [B, H, N, d] : {std::tuple{16, 32, 1024, 64}, std::tuple{1, 16, 4096, 128}}) {
    Problem p;
    p.B = B, p.H = H, p.Lq = p.Lk = N, p.d = d, p.dtype = DType::fp16;
    std::map<std::string, double> model_ms;
    for (const char* name : {"register_tiles", "o_in_registers"}) {
      const Variant* v = find_variant(name);
      REQUIRE(v != nullptr);
      const Profile& pr = one.run(*v, p);
      REQUIRE(pr.result.verdict.pass);
      const double ms = recorded_ms(csv, "measured", p, *v);
      REQUIRE(ms > 0);
      model_ms[name] = as_run_on_h200(pr).us / 1e3;
      const double ratio = model_ms[name] / ms, today_ms = remodel(pr, *gpus::find_gpu("h200")).us / 1e3;
      char line[192];
      std::snprintf(line, sizeof line, "B=%-2d H=%-2d N=%-5d d=%-3d %-15s %9.3f %9.3f  %5.2f   today %9.3f\n", B, H, N, d, name,
                    ms, model_ms[name], ratio, today_ms);
      t << line;
      INFO(line);
      if (std::string(name) == "o_in_registers") CHECK(std::fabs(ratio - 1) <= 0.15);
      else CHECK((ratio >= 0.5 && ratio <= 2));
    }
    if (N == 1024) CHECK(model_ms["o_in_registers"] < model_ms["register_tiles"]);
  }
  std::printf("%s", t.str().c_str());
}

// Chapter 08's split steps end with a second launch, the combine (split_kv.cu), which reads every
// split's partial O and lse: at B = 1, Hq = 32, Hkv = 8, d = 128 and 32k keys the H200 timed it at
// 0.0042 ms after split_kv's 8 splits and at 0.0067 ms after the 33 of gqa_packed and paged
// (results/nvidia-h200/logs/decode32k.log, the breakdown lines). Its loop over the splits has loads
// alone; its trips are the loads left once the column loop's stores have counted that loop's
// (model/sass.h, loop_trips), where they were the stores' (a combine of 33 splits modelled as one
// of 8, 0.56 of its time). Held: each combine within 25 % of its time, and 33 splits' combine
// modelled longer than 8 splits'. Every stage printed.
TEST_CASE("chapter 08's stages beside the H200's breakdown: the combine grows with the splits", "[published]") {
  OneHead one;
  const std::map<std::string, std::map<std::string, double>> stage_ms = breakdown_ms("decode32k.log");
  DecodeProblem dp;
  dp.B = 1, dp.Hq = 32, dp.Hkv = 8, dp.d = 128, dp.Lq = 1, dp.dtype = DType::fp16, dp.cache_lens = {32768};
  RunOptions sampled;
  sampled.sample = true;
  std::ostringstream t;
  t << "chapter 08's stages, B=1 Hq=32 Hkv=8 d=128, 32769 keys (results/nvidia-h200/logs/decode32k.log), ms: measured on the "
       "H200, the model on its profile, model/measured\n";
  std::map<std::string, double> combine;  // modelled, by step
  for (const char* name : {"split_kv", "gqa_packed", "paged"}) {
    const DecodeVariant* v = find_decode(name);
    REQUIRE(v != nullptr);
    const Profile& pr = profile_decode(one.profiler, *v, dp, true, sampled, false);
    REQUIRE(pr.result.verdict.pass);
    const std::vector<double> logged = logged_stage_ms(stage_ms, name, pr);
    for (const StageProfile& s : pr.stages) {
      INFO(name << ": " << s.stage);
      const double ms = logged[&s - pr.stages.data()], model_ms = as_run_on_h200(s).us / 1e3;
      REQUIRE(ms > 0);
      char line[256];
      std::snprintf(line, sizeof line, "  %-11s %-22s %9.4f %9.4f  %5.2f\n", &s == &pr.stages.front() ? name : "", s.stage.c_str(), ms,
                    model_ms, model_ms / ms);
      t << line;
      if (s.stage == "combine") {
        combine[name] = model_ms;
        CHECK(std::fabs(model_ms / ms - 1) <= 0.25);
      }
    }
  }
  std::printf("%s", t.str().c_str());
  INFO(t.str());
  REQUIRE(combine.size() == 3);
  CHECK(combine["gqa_packed"] > 1.2 * combine["split_kv"]);
}

// The model's DRAM reads beside what Nsight Compute read on the H200 (results/nvidia-h200/ncu,
// dram__bytes_read.sum of every launch of the variant, B = 4, H = 16, N = 4096, d = 128): each
// sector once, and again where L2 has lost it before its next read (model.h's dram_rereads): by the
// grid's order (chapter 09's step g: heads in x, K/V read again by each group of blocks, ten times
// the footprint) and by a block's own re-reads (chapter 04's block per head reads its K/V once per
// Q tile; chapter 01's softmax, a thread per row, reads S three times). Held within 10 %, but
// chapter 01's register_blocked: its softmax read 4.2 times S's bytes on the H200 where the model
// counts the three passes its code makes (0.77 of the whole), held between 0.7 and 1. The fourth
// fits L2 filling P's sectors, which that softmax writes 4 bytes of 32 rows' at a time (with ECC a
// sector written in parts needs the rest read to merge; NVIDIA's patent US 9,110,809 has L2 issue
// such fills once more partial writes are pending than a threshold): not modelled, since the
// threshold is not published and chapter 05's O, written in parts too but completed by the next
// store, read nothing more (counting every such sector gave 0.97 here and 1.30 for lean_loop).
// And each launch's time beside Nsight Compute's (gpu__time_duration.sum; the kernel's name checked
// against the emulator's launch), held within 2x: a variant's total can hide two launches that miss
// in opposite directions: chapter 01's softmax (a thread per row) models 0.51 of its time, at the
// bound's edge, which its register-blocked GEMMs hid in its total (1.05) while they modelled 1.34-1.62
// times their time, before a lockstep block's load waits counted once per scheduler (76d784a; now
// 0.91-1.18, the total 0.81; notes/performance_model.md, "Measured on an H200").
TEST_CASE("the model's DRAM reads beside what Nsight Compute read on the H200", "[published]") {
  OneHead one;
  REQUIRE(gpus::find_gpu("h200"));
  const std::string dir = std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/ncu/";
  Problem p;
  p.B = 4, p.H = 16, p.Lq = p.Lk = 4096, p.d = 128, p.dtype = DType::fp16;
  std::ostringstream t, times;
  t << "DRAM read, B=4 H=16 N=4096 d=128: Nsight Compute on the H200 (dram__bytes_read.sum), the model (each sector once + again)\n";
  times << "each launch's time, B=4 H=16 N=4096 d=128: Nsight Compute on the H200 (gpu__time_duration.sum), the model on the H200's profile "
           "(of the code it ran), model/measured, bound; and the model of today's code, not yet measured\n";
  for (const char* name : {"register_blocked", "exp2", "blocked_softmax_pv", "o_in_registers", "lean_loop", "balanced", "causal_skip"}) {
    std::ifstream in(dir + "ncu_" + name + ".csv");
    REQUIRE(in);
    // Nsight Compute's --csv rows, every field quoted, the numbers with thousands separators, one
    // launch per ID in launch order; the columns named by the header row ("ID", ...).
    std::map<int, std::string> kernel;
    std::map<int, double> read, ns;
    std::map<std::string, size_t> column;
    const auto fields = [](const std::string& line) {
      std::vector<std::string> f;
      for (size_t at = 1;;) {
        const size_t end = line.find("\",\"", at);
        f.push_back(line.substr(at, end == std::string::npos ? line.size() - 1 - at : end - at));
        if (end == std::string::npos) return f;
        at = end + 3;
      }
    };
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.size() < 2 || line.front() != '"') continue;  // ncu's own messages
      const std::vector<std::string> f = fields(line);
      if (column.empty()) {
        for (size_t i = 0; i < f.size(); ++i) column[f[i]] = i;
        for (const char* c : {"ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"}) REQUIRE(column.count(c) == 1);
        continue;
      }
      REQUIRE(f.size() == column.size());
      std::string value = f[column["Metric Value"]];
      value.erase(std::remove(value.begin(), value.end(), ','), value.end());
      const int id = std::stoi(f[column["ID"]]);
      const std::string& metric = f[column["Metric Name"]];
      const std::string& unit = f[column["Metric Unit"]];
      kernel[id] = f[column["Kernel Name"]];
      // The units ncu picks for the size of a value (without --print-units base).
      static const std::map<std::string, double> bytes = {{"byte", 1}, {"Kbyte", 1e3}, {"Mbyte", 1e6}, {"Gbyte", 1e9}},
                                                 nanoseconds = {{"ns", 1}, {"nsecond", 1}, {"usecond", 1e3}, {"msecond", 1e6}, {"second", 1e9}};
      if (metric == "dram__bytes_read.sum") {
        REQUIRE(bytes.count(unit) == 1);
        read[id] = std::stod(value) * bytes.at(unit);
      } else if (metric == "gpu__time_duration.sum") {
        REQUIRE(nanoseconds.count(unit) == 1);
        ns[id] = std::stod(value) * nanoseconds.at(unit);
      }
    }
    double measured = 0;  // every launch of the variant
    for (const auto& [id, bytes] : read) measured += bytes;
    REQUIRE(measured > 0);
    const Variant* v = find_variant(name);
    REQUIRE(v != nullptr);
    const auto [pr, today] = ran_and_today(one, *v, p);  // as the H200 ran it, and today's kernel
    REQUIRE(today.stages.size() == pr.stages.size());
    const Remodelled m = as_run_on_h200(pr);
    double once = 0;
    for (const StageProfile& s : pr.stages) once += 32 * s.counters.dram_read_sectors;
    char line[256];
    std::snprintf(line, sizeof line, "%-18s %8.0f MB  %8.0f MB (%.0f + %.0f)  %5.2f\n", name, measured / 1e6, m.dram_read_bytes / 1e6,
                  once / 1e6, (m.dram_read_bytes - once) / 1e6, m.dram_read_bytes / measured);
    t << line;
    INFO(line);
    if (std::string(name) == "register_blocked") {
      CHECK(m.dram_read_bytes / measured > 0.7);
      CHECK(m.dram_read_bytes / measured < 1.0);
    } else {
      CHECK(std::fabs(m.dram_read_bytes / measured - 1) <= 0.10);
    }
    REQUIRE(ns.size() == pr.stages.size());
    double ncu_ms = 0;
    for (const StageProfile& s : pr.stages) {
      REQUIRE(s.launches.size() == 1);
      const int id = static_cast<int>(&s - pr.stages.data());
      REQUIRE(ns.count(id) == 1);
      INFO(name << ", launch " << id << ": Nsight Compute's " << kernel.at(id) << ", the emulator's " << s.kernels.at(0));
      REQUIRE(base_name(kernel.at(id)) == base_name(s.kernels.at(0)));  // the same kernel, in the same order
      const Remodelled r = as_run_on_h200(s, pr.problem);
      const double ms = ns.at(id) / 1e6, model_ms = r.us / 1e3;
      ncu_ms += ms;
      std::snprintf(line, sizeof line, "%-18s %-34.34s %9.3f ms %9.3f ms  %5.2f  %-8s today %9.3f ms\n", id == 0 ? name : "",
                    s.stage.c_str(), ms, model_ms, model_ms / ms, r.bound.c_str(),
                    remodel(today.stages[static_cast<size_t>(id)], *gpus::find_gpu("h200")).us / 1e3);
      times << line;
      INFO(line);
      CHECK(ms > 0);
      CHECK(std::fabs(std::log(model_ms / ms)) <= std::log(2.0));
    }
    std::snprintf(line, sizeof line, "%-18s %-34s %9.3f ms %9.3f ms  %5.2f           today %9.3f ms\n", "", "(all its launches)",
                  ncu_ms, m.us / 1e3, m.us / 1e3 / ncu_ms, remodel(today, *gpus::find_gpu("h200")).us / 1e3);
    times << line;
  }
  std::printf("%s%s", t.str().c_str(), times.str().c_str());
}

// Chapter 07's backward on the H200 (results/nvidia-h200/backward.csv: steps c and d and step d's
// deterministic option at B = 4, H = 32, N = 4096, d = 64, fp16, not causal), modelled on the
// H200's profile from one emulated head (backward/profile.cpp), stage by stage beside the
// measured breakdown (logs/backward.log), twice: today's kernels, and the kernels as the H200 ran
// them (step d's kernel before 9db7cdd, at 175 registers: two blocks per SM where today's 168 fit
// three; h200_sass_as_run.inc). Held: the stages that run step d's kernel (its main loop, the
// deterministic option's K/V pass) model more than 10 % slower as they ran than today (a third
// fewer warps to hide their waits), every other stage the same; each step's time as it ran closer
// to the measurement than the floors without latency, and within 1.5 times it, as chapter 08's
// steps are. Printed, not held within 15 %: the model is optimistic about every step, by 1.20 to
// 1.32 as they ran (notes/07_backward.md, "The model beside the H200").
TEST_CASE("chapter 07 beside its H200 measurements", "[published]") {
  Problem p;
  p.B = 4, p.H = 32, p.Lq = p.Lk = 4096, p.d = 64, p.dtype = DType::fp16;
  ProfileOptions o;
  o.emulated_heads = 1;
  Profiler profiler(o);
  std::vector<const BackwardVariant*> steps;
  for (const char* name : {"tensor_cores", "causal", "deterministic"}) {
    steps.push_back(find_backward(name));
    REQUIRE(steps.back() != nullptr);
  }
  const HeadSample heads = backward_heads(profiler, steps, p);
  REQUIRE(heads.emulated == 1);
  const Problem e = backward_emulated(p, heads);
  const RunOptions checks;  // a sample of the rows, as the H200 session checked them
  BackwardRun run(e, checks);
  run.reference_forward();
  const std::string csv = std::string(FLASHSTEPS_SOURCE_DIR) + "/results/nvidia-h200/backward.csv";
  const gpus::Gpu& h200 = *gpus::find_gpu("h200");
  std::ostringstream t;
  t << "chapter 07 on the H200, B=4 H=32 N=4096 d=64 fp16, not causal: measured (backward.csv) beside the model on the "
       "H200's profile, today's kernels and as the H200 ran them, ms\n"
       "step           measured  today   as run  as run/measured  floors/measured\n";
  for (const BackwardVariant* v : steps) {
    const Profile pr = profile_backward(profiler, *v, p, heads, e, run.dev, run.checker, checks, false);  // a copy
    REQUIRE(pr.result.verdict.pass);
    const double ms = recorded_ms(csv, "measured", p, v->info);
    REQUIRE(ms > 0);
    const double today = remodel(pr, h200).us / 1e3, ran = remodel(pr, h200, true, true, kAsRun).us / 1e3;
    const double floors = remodel(pr, h200, false, true, kAsRun).us / 1e3;
    char line[200];
    std::snprintf(line, sizeof line, "%-14s %8.3f %8.3f %8.3f  %6.2f           %6.2f\n", v->info.name.c_str(), ms, today, ran,
                  ran / ms, floors / ms);
    t << line;
    for (const StageProfile& s : pr.stages) {
      const Remodelled stage_today = remodel(s, h200), stage_ran = remodel(s, h200, true, true, kAsRun);
      std::snprintf(line, sizeof line, "  %-34s today %8.3f  as run %8.3f ms (%s)\n", s.stage.c_str(), stage_today.us / 1e3,
                    stage_ran.us / 1e3, stage_ran.bound.c_str());
      t << line;
      INFO(line);
      // Step d's kernel as it ran: two blocks per SM where today's has three, its chains' waits
      // hidden by fewer warps; every other kernel is today's.
      const bool step_d = std::any_of(s.kernels.begin(), s.kernels.end(),
                                      [](const std::string& k) { return k.find("causal_kernel") != std::string::npos; });
      if (step_d)
        CHECK(stage_ran.us > 1.1 * stage_today.us);
      else
        CHECK(stage_ran.us == Approx(stage_today.us).epsilon(1e-9));
    }
    INFO(t.str());
    CHECK(std::fabs(std::log(ran / ms)) < std::fabs(std::log(floors / ms)));
    CHECK(ran / ms > 1 / 1.5);
    CHECK(ran / ms < 1.5);
  }
  std::printf("%s", t.str().c_str());
}
