// bench.cpp: `flashsteps bench`, the benchmark runner. It sweeps chapters, variants and shapes,
// appends one CSV row per measurement (report.h's schema) as soon as it is measured, and prints
// its progress on stderr. A variant that cannot run a shape (unsupported, memory, time budget)
// is skipped with a line that says why.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "cli.h"
#include "command.h"
#include "errors.h"
#include "report.h"

namespace attn {
namespace {

struct Shape {
  int B, H, N, d;
  DType dtype;
  bool causal;
};

// FlashAttention's benchmark convention: B * N = 16k tokens, N = 512 .. 16k, hidden size 2048
// (d = 64 with 32 heads, d = 128 with 16), causal off and on, fp16 and bf16; then smaller
// shapes (B * N = 4k) on which the slow early chapters finish.
std::vector<Shape> sweep(const std::string& name) {
  std::vector<Shape> out;
  auto add = [&](int tokens, std::vector<int> lengths, std::vector<DType> types, std::vector<bool> causal) {
    for (DType t : types)
      for (int d : {64, 128})
        for (bool c : causal)
          for (int n : lengths) out.push_back({tokens / n, 2048 / d, n, d, t, c});
  };
  if (name == "default" || name == "small") add(4096, {256, 512, 1024}, {DType::fp16}, {false, true});
  if (name == "default") add(16384, {512, 1024, 2048, 4096, 8192, 16384}, {DType::fp16, DType::bf16}, {false, true});
  if (name == "smoke")
    for (bool c : {false, true})
      for (int n : {64, 128}) out.push_back({1, 2, n, 64, DType::fp16, c});
  if (out.empty()) throw UsageError("unknown sweep \"" + name + "\": use default, small or smoke");
  return out;
}

Problem problem_of(const Shape& s) {
  Problem p;
  p.B = s.B, p.H = s.H, p.Lq = p.Lk = s.N, p.d = s.d, p.dtype = s.dtype;
  p.causal = s.causal ? Causal::top_left : Causal::none;
  return p;
}

bool matches(const std::vector<std::string>& wanted, const std::string& value, bool prefix) {
  if (wanted.empty()) return true;
  for (const std::string& w : wanted)
    if (prefix ? value.rfind(w, 0) == 0 : value == w) return true;
  return false;
}

std::string duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else std::snprintf(buf, sizeof buf, "%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60.0));
  return buf;
}

}  // namespace

int bench_main(int argc, char** argv) {
  CLI::App app{"Sweeps chapters, variants and shapes; one CSV row per measurement (results/README.md).",
               "flashsteps bench"};
  std::string sweep_name = FLASHSTEPS_GPU ? "default" : "smoke", csv;
  std::vector<std::string> chapter_f, variant_f, dtype_f;
  std::vector<int> dims;
  std::string causal_f = "both";
  int reps = FLASHSTEPS_GPU ? 20 : 1, warmup = FLASHSTEPS_GPU ? 3 : 0;
  double budget = FLASHSTEPS_GPU ? 30 : 60;
  app.add_option("--sweep", sweep_name, "default (FlashAttention's shapes, plus small ones), small, or smoke")->capture_default_str();
  app.add_option("--chapter", chapter_f, "only these chapters (a prefix: 05 or 05_flash_v2; repeatable)");
  app.add_option("-v,--variant", variant_f, "only these variants (repeatable)");
  app.add_option("--dtype", dtype_f, "only these dtypes (repeatable)");
  app.add_option("-d,--head-dim", dims, "only these head dims (repeatable)");
  app.add_option("--causal", causal_f, "off, on or both")->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions per measurement")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed runs first")->capture_default_str();
  app.add_option("--budget", budget, "seconds one measurement may take, predicted from the variant's previous N (0: no limit)")
      ->capture_default_str();
  app.add_option("--csv", csv, "append the rows to this CSV file")->required();
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    if (causal_f != "off" && causal_f != "on" && causal_f != "both") throw UsageError("--causal takes off, on or both");
    for (const std::string& t : dtype_f)
      if (!parse_dtype(t)) throw UsageError("unknown dtype \"" + t + "\"");
    if (reps < 1) throw UsageError("--reps must be 1 or more (every row holds measured times), not " + std::to_string(reps));
    if (warmup < 0) throw UsageError("--warmup must be 0 or more, not " + std::to_string(warmup));
    if (!(budget >= 0) || std::isinf(budget)) {
      char got[32];
      std::snprintf(got, sizeof got, "%g", budget);
      throw UsageError(std::string("--budget takes seconds, 0 or more (0: no limit), not ") + got);
    }
    // Each filter value must select something: one that names nothing (a typo, a chapter that is not
    // there) would otherwise shrink the sweep without a word.
    const std::vector<Shape> shapes = sweep(sweep_name);
    for (const std::string& c : chapter_f)
      if (std::none_of(registry().begin(), registry().end(), [&](const Variant& v) { return v.chapter.rfind(c, 0) == 0; }))
        throw UsageError("--chapter " + c + ": no chapter starts with it (flashsteps run --list shows them)");
    for (const std::string& n : variant_f)
      if (std::none_of(registry().begin(), registry().end(), [&](const Variant& v) { return v.name == n; })) {
        for (const auto& [chapter, name] : gpu_only_variants())
          if (name == n) throw UsageError("variant " + n + " of " + chapter + " needs a GPU: not in this build");
        throw UsageError("unknown variant \"" + n + "\" (flashsteps run --list shows them)");
      }
    for (int d : dims)
      if (std::none_of(shapes.begin(), shapes.end(), [&](const Shape& s) { return s.d == d; }))
        throw UsageError("--head-dim " + std::to_string(d) + ": the " + sweep_name + " sweep has d = 64 and 128 only");
    for (const std::string& t : dtype_f)
      if (std::none_of(shapes.begin(), shapes.end(), [&](const Shape& s) { return dtype_name(s.dtype) == t; }))
        throw UsageError("--dtype " + t + ": the " + sweep_name + " sweep has no shape of it");
    check_csv_target(csv);
    RunOptions o;
    o.reps = reps, o.warmup = warmup, o.sample_rows = 64, o.sample_heads = 2;
    o.cpu_budget_s = budget;
    std::vector<std::pair<Shape, const Variant*>> items;
    for (const Shape& s : shapes) {
      if (!dtype_f.empty() && !matches(dtype_f, dtype_name(s.dtype), false)) continue;
      if (!dims.empty() && std::find(dims.begin(), dims.end(), s.d) == dims.end()) continue;
      if ((causal_f == "off" && s.causal) || (causal_f == "on" && !s.causal)) continue;
      for (const Variant& v : registry())
        if (matches(chapter_f, v.chapter, true) && matches(variant_f, v.name, false)) items.emplace_back(s, &v);
    }
    if (items.empty()) throw UsageError("nothing to measure: the filters leave no (variant, shape)");
    std::fprintf(stderr, "device: %s\n%zu measurements to make, rows appended to %s\n", device().summary().c_str(), items.size(),
                 csv.c_str());

    // The last measurement of each variant in each (dtype, d, causal, tokens) group, to predict the
    // next N's time: at a fixed number of tokens the work grows like N.
    std::map<std::string, std::pair<double, double>> last;  // key -> (flops, ms)
    const auto start = std::chrono::steady_clock::now();
    int done = 0, failed = 0, skipped = 0;
    for (size_t k = 0; k < items.size();) {
      const Shape shape = items[k].first;
      const Problem p = problem_of(shape);
      size_t end = k;
      while (end < items.size() && items[end].first.N == shape.N && items[end].first.d == shape.d &&
             items[end].first.B == shape.B && items[end].first.dtype == shape.dtype && items[end].first.causal == shape.causal)
        ++end;
      // Who runs this shape, and why the others do not.
      std::vector<const Variant*> run;
      for (size_t x = k; x < end; ++x) {
        const Variant& v = *items[x].second;
        const std::string key = v.name + "/" + dtype_name(p.dtype) + "/" + std::to_string(p.d) + "/" +
                                std::to_string(shape.causal) + "/" + std::to_string(p.B * p.Lq);
        std::string why;
        try {
          check_runnable(v, p, o);
          if (budget > 0 && last.count(key)) {
            const auto [flops, ms] = last[key];
            const double predicted = ms * (p.flops() / flops) * (o.reps + o.warmup + 1) / 1e3;
            if (predicted > budget)
              why = "would take about " + duration(predicted) + " (from its time at the previous N), over the budget of " +
                    duration(budget);
          }
        } catch (const UsageError& e) {
          why = e.what();
        }
        if (why.empty()) {
          run.push_back(&v);
        } else {
          ++skipped;
          std::fprintf(stderr, "skipped %s/%s on %s: %s\n", v.chapter.c_str(), v.name.c_str(), p.describe().c_str(), why.c_str());
        }
      }
      done += static_cast<int>(end - k - run.size());
      if (!run.empty()) {
        const Prepared prepared(p, o);
        for (const Variant* v : run) {
          const Result r = run_variant(*v, p, prepared.inputs, prepared.checker, o);
          append_csv(csv, {r});
          failed += !r.verdict.pass;
          last[v->name + "/" + dtype_name(p.dtype) + "/" + std::to_string(p.d) + "/" + std::to_string(shape.causal) + "/" +
               std::to_string(p.B * p.Lq)] = {p.flops(), r.timing.median_ms};
          ++done;
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          std::fprintf(stderr, "[%d/%zu] %s/%s %s: %.4f ms, %.1f TFLOP/s, %s | %s so far, about %s left\n", done, items.size(),
                       v->chapter.c_str(), v->name.c_str(), p.describe().c_str(), r.timing.median_ms, r.tflops(),
                       r.verdict.pass ? "pass" : ("FAIL: " + r.verdict.why).c_str(), duration(elapsed).c_str(),
                       duration(elapsed / done * (static_cast<double>(items.size()) - done)).c_str());
        }
      }
      k = end;
    }
    std::fprintf(stderr, "%d measured, %d skipped, %d failed their check\n", done - skipped, skipped, failed);
    return failed ? 1 : 0;
  });
}

}  // namespace attn
