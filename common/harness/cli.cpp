#include "cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "command.h"
#include "errors.h"
#include "report.h"

namespace attn {
namespace {

struct Args {
  int B = 0, H = 0, seq = 0, Lq = 0, Lk = 0, d = 64;  // 0: the backend's default
  std::string dtype = "fp16", causal, mask = "none";
  bool mask_per_head = false, full_check = false;
  double scale = NAN;
  unsigned long long seed = 1;
  std::vector<std::string> variants;
  int reps = -1, warmup = -1;
  double cpu_budget = 120;
  std::string csv;
  bool list = false;
};

bool emulated() { return !FLASHSTEPS_GPU; }

void add_problem_options(CLI::App& app, Args& a) {
  app.add_option("-b,--batch", a.B, "batch size B (default 4 on a GPU, 1 on the CPU)");
  app.add_option("-H,--heads", a.H, "heads H (default 16 on a GPU, 2 on the CPU)");
  app.add_option("-n,--seq", a.seq, "sequence length: Lq = Lk = N (default 2048 on a GPU, 256 on the CPU)");
  app.add_option("--lq", a.Lq, "query length Lq (overrides --seq)");
  app.add_option("--lk", a.Lk, "key/value length Lk (overrides --seq)");
  app.add_option("-d,--head-dim", a.d, "head dim d")->capture_default_str();
  app.add_option("--dtype", a.dtype, "input and output type: fp32, fp16 or bf16")->capture_default_str();
  app.add_option("--causal", a.causal,
                 "is_causal; alignment top-left (torch's is_causal, the default) or bottom-right")
      ->expected(0, 1);
  app.add_option("--mask", a.mask, "attn_mask: none, bool or additive")->capture_default_str();
  app.add_flag("--mask-per-head", a.mask_per_head, "one mask per (batch, head) instead of one shared [Lq, Lk]");
  app.add_option("--scale", a.scale, "softmax scale (default 1/sqrt(d))");
  app.add_option("--seed", a.seed, "seed of the random inputs")->capture_default_str();
  app.add_option("--reps", a.reps, "timed repetitions (default 20 on a GPU, 1 on the CPU; 0: check only)");
  app.add_option("--warmup", a.warmup, "untimed runs first (default 3 on a GPU, 0 on the CPU)");
  app.add_flag("--full-check", a.full_check, "check every output row, however large the problem");
  app.add_option("--cpu-budget", a.cpu_budget, "seconds the CPU emulation may take per variant (0: no limit)")
      ->capture_default_str();
  app.add_option("--csv", a.csv, "append the results to this CSV file");
}

Problem build_problem(const Args& a, const CLI::App& app) {
  Problem p;
  const bool gpu = !emulated();
  const int seq = app.count("--seq") ? a.seq : gpu ? 2048 : 256;
  p.Lq = app.count("--lq") ? a.Lq : seq;
  p.Lk = app.count("--lk") ? a.Lk : seq;
  p.B = app.count("--batch") ? a.B : gpu ? 4 : 1;
  p.H = app.count("--heads") ? a.H : gpu ? 16 : 2;
  p.d = a.d;
  const auto t = parse_dtype(a.dtype);
  if (!t) throw UsageError("unknown dtype \"" + a.dtype + "\": use fp32, fp16 or bf16");
  p.dtype = *t;
  if (app.count("--causal")) {
    if (a.causal.empty() || a.causal == "top-left")
      p.causal = Causal::top_left;
    else if (a.causal == "bottom-right")
      p.causal = Causal::bottom_right;
    else
      throw UsageError("unknown causal alignment \"" + a.causal + "\": use top-left or bottom-right");
  }
  if (a.mask == "bool")
    p.mask = MaskKind::boolean;
  else if (a.mask == "additive")
    p.mask = MaskKind::additive;
  else if (a.mask != "none")
    throw UsageError("unknown mask \"" + a.mask + "\": use none, bool or additive");
  p.mask_per_head = a.mask_per_head;
  if (!std::isnan(a.scale)) p.scale_override = a.scale;
  p.seed = a.seed;
  p.validate();
  return p;
}

RunOptions build_options(const Args& a) {
  RunOptions o;
  const bool gpu = !emulated();
  o.reps = a.reps >= 0 ? a.reps : gpu ? 20 : 1;
  o.warmup = a.warmup >= 0 ? a.warmup : gpu ? 3 : 0;
  o.sample = !a.full_check;
  o.cpu_budget_s = a.cpu_budget;
  if (o.reps < 0 || o.warmup < 0) throw UsageError("--reps and --warmup must not be negative");
  return o;
}

void print_list(const std::vector<const Variant*>& pool) {
  std::string chapter;
  for (const Variant* v : pool) {
    if (v->chapter != chapter) std::printf("%s%s\n", chapter.empty() ? "" : "\n", (chapter = v->chapter).c_str());
    std::printf("  %-20s %s%s\n  %-20s supports %s\n", v->name.c_str(), v->description.c_str(), v->best ? " (best)" : "",
                "", v->supports().c_str());
  }
}

std::vector<const Variant*> variants_of(const std::string& chapter) {
  std::vector<const Variant*> pool;
  for (const Variant& v : registry())
    if (chapter.empty() || v.chapter == chapter) pool.push_back(&v);
  return pool;
}

// The variants a command runs: those named with --variant, or the whole pool.
std::vector<const Variant*> select(const std::vector<const Variant*>& pool, const std::vector<std::string>& names) {
  if (names.empty()) return pool;
  std::vector<const Variant*> chosen;
  for (const std::string& n : names) {
    const Variant* found = nullptr;
    for (const Variant* v : pool)
      if (v->name == n) found = v;
    if (!found) {
      std::string known;
      for (const Variant* v : pool) known += (known.empty() ? "" : ", ") + v->name;
      throw UsageError("unknown variant \"" + n + "\" (known here: " + known + ")");
    }
    chosen.push_back(found);
  }
  return chosen;
}

// Runs each variant on the problem; variants that cannot run it are skipped with the reason,
// unless the user named them. Returns the results; throws UsageError when nothing could run.
std::vector<Result> run_all(const std::vector<const Variant*>& chosen, bool named, const Problem& p,
                            const RunOptions& o, bool show_stages) {
  std::vector<const Variant*> runnable;
  std::vector<std::string> reasons;
  for (const Variant* v : chosen) {
    try {
      check_runnable(*v, p, o);
      runnable.push_back(v);
    } catch (const UsageError& e) {
      if (named || chosen.size() == 1) throw;
      reasons.push_back(e.what());
    }
  }
  if (runnable.empty()) {
    std::string all;
    for (const auto& r : reasons) all += (all.empty() ? "" : "\n") + r;
    throw UsageError(all);
  }
  print_device_and_problem(p);
  const Inputs in = Inputs::generate(p);
  const Checker checker(p, in, o);
  const DeviceInputs dev(p, in);
  std::printf("checked: %zu of %zu output rows against the fp64 reference\n",
              checker.selection().heads.size() * checker.selection().rows.size(), p.heads() * static_cast<size_t>(p.Lq));
  print_table_header();
  std::vector<Result> results;
  for (const Variant* v : chosen) {
    const bool ok = std::find(runnable.begin(), runnable.end(), v) != runnable.end();
    if (!ok) {
      try {
        check_runnable(*v, p, o);
      } catch (const UsageError& e) {
        print_skip(v->name, e.what());
      }
      continue;
    }
    results.push_back(run_variant(*v, p, dev, checker, o));
    print_row(results.back());
    if (show_stages) print_stages(results.back());
    std::fflush(stdout);
  }
  return results;
}

int finish(const std::vector<Result>& results, const std::string& csv) {
  if (!csv.empty()) append_csv(csv, results);
  for (const Result& r : results)
    if (!r.verdict.pass) return 1;
  return 0;
}

}  // namespace

int chapter_main(int argc, char** argv, const std::string& chapter) {
  CLI::App app{chapter.empty() ? "Every variant of every chapter on one attention problem."
                               : "Chapter " + chapter + ": its variants on one attention problem, checked against "
                                 "the fp64 reference and timed."};
  Args a;
  add_problem_options(app, a);
  app.add_option("-v,--variant", a.variants, "run only this variant (repeatable)");
  app.add_flag("--list", a.list, "list the variants and what they support");
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    const auto pool = variants_of(chapter);
    if (a.list) {
      print_list(pool);
      return 0;
    }
    const Problem p = build_problem(a, app);
    const RunOptions o = build_options(a);
    const auto results = run_all(select(pool, a.variants), !a.variants.empty(), p, o, true);
    return finish(results, a.csv);
  });
}

int tour_main(int argc, char** argv) {
  CLI::App app{"Every chapter's best variant on one problem: its error against the fp64 reference, its time, and its "
               "speedup over chapter 01."};
  Args a;
  add_problem_options(app, a);
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    const Problem p = build_problem(a, app);
    const RunOptions o = build_options(a);
    std::vector<const Variant*> best;
    for (const std::string& c : chapters()) best.push_back(best_of(c));
    const auto results = run_all(best, false, p, o, false);
    if (!results.empty() && results.front().variant->chapter.rfind("01", 0) == 0 && results.front().timing.median_ms > 0) {
      std::printf("\n%-22s %-22s %13s\n", "chapter", "variant", "speedup vs 01");
      for (const Result& r : results)
        std::printf("%-22s %-22s %12.2fx\n", r.variant->chapter.c_str(), r.variant->name.c_str(),
                    results.front().timing.median_ms / r.timing.median_ms);
    }
    if (emulated())
      std::printf("\n(CPU emulation: these times measure the emulator, not a GPU; the speedups are not GPU speedups)\n");
    return finish(results, a.csv);
  });
}

struct ProblemArgs::Impl {
  Args a;
  CLI::App* app;
};
ProblemArgs::ProblemArgs(CLI::App& app) : impl_(std::make_unique<Impl>()) {
  impl_->app = &app;
  add_problem_options(app, impl_->a);
}
ProblemArgs::~ProblemArgs() = default;
Problem ProblemArgs::problem() const { return build_problem(impl_->a, *impl_->app); }
RunOptions ProblemArgs::options() const { return build_options(impl_->a); }
const std::string& ProblemArgs::csv() const { return impl_->a.csv; }

}  // namespace attn
