// backward/cli.cpp: `flashsteps backward` and chapter 07's binary. One problem: the forward first
// (the fastest forward kernel that runs it, checked and timed as `flashsteps run` would), its O and
// L kept for the backward variants, each checked against the fp64 reference gradients and timed;
// then forward + backward side by side. With --profile, each backward variant runs once with the
// counters on instead, through the forward's profiler (profile.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>

#include "harness/backward/backward.h"
#include "harness/cli.h"
#include "harness/command.h"
#include "harness/errors.h"
#include "harness/profile.h"
#include "harness/report.h"

namespace attn {
namespace {

void print_list() {
  std::string chapter;
  for (const BackwardVariant& b : backward_registry()) {
    const Variant& v = b.info;
    if (v.chapter != chapter) std::printf("%s%s (backward)\n", chapter.empty() ? "" : "\n", (chapter = v.chapter).c_str());
    std::printf("  %-20s %s%s\n  %-20s supports %s%s\n", v.name.c_str(), v.description.c_str(), v.best ? " (best)" : "", "",
                v.supports().c_str(), b.deterministic ? "; deterministic" : "");
  }
}


// The forward whose O and L the backward reads: named (--forward), "reference", or the fastest.
const Variant* choose_forward(const std::string& name, const Problem& p, const RunOptions& o) {
  if (name == "reference") return nullptr;
  const Variant* v = name.empty() ? fastest_forward(p) : find_variant(name);
  if (!name.empty() && !v) throw UsageError("unknown forward variant \"" + name + "\" (flashsteps run --list shows them)");
  if (!name.empty() && !v->writes_lse)
    throw UsageError("forward variant " + name + " does not write the log-sum-exp the backward needs");
  if (v) check_runnable(*v, p, o);
  return v;
}

// FNV-1a of the gradients' bits: two runs that print the same value computed the same bits.
unsigned long long fingerprint(const std::vector<float>& x) {
  unsigned long long h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(x.data());
  for (size_t i = 0; i < x.size() * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

void print_gradients(const BackwardResult& r) {
  auto part = [](const GradCheck& c) {
    std::printf(" %s %.2e (%.2f of its tolerance", c.name, c.max_abs, c.worst);
    if (c.bound > 0) std::printf(", %.2f of 2x naive", c.max_abs / c.bound);
    std::printf(")");
  };
  std::printf("    max error:");
  part(r.grads.dq), std::printf(" |"), part(r.grads.dk), std::printf(" |"), part(r.grads.dv);
  std::printf("\n    FLOPs executed %.3g (convention %.3g), fp32 atomics %.3g\n", r.flops_executed, r.row.flops, r.atomics);
  if (!r.dq.empty())
    std::printf("    bits: dQ %016llx dK %016llx dV %016llx\n", fingerprint(r.dq), fingerprint(r.dk), fingerprint(r.dv));
}

// The cost models of the variants on p, nothing run: what the notes' tables are made of.
void print_models(const std::vector<const BackwardVariant*>& chosen, const Problem& p) {
  std::printf("problem: %s (cost models only: nothing is run)\n\n%-16s %12s %12s %12s %12s %10s %12s\n",
              p.describe().c_str(), "variant", "GFLOP conv.", "GFLOP exec.", "model GB", "FLOP/byte", "atomics",
              "extra memory");
  for (const BackwardVariant* v : chosen) {
    if (const std::string why = v->info.unsupported(p); !why.empty()) {
      print_skip(v->info.name, why);
      continue;
    }
    const double flops = backward_flops(p), bytes = backward_hbm_bytes(*v, p);
    std::printf("%-16s %12.2f %12.2f %12.3f %12.1f %10.3g %12s\n", v->info.name.c_str(), flops / 1e9,
                (v->flops_executed ? v->flops_executed(p) : flops) / 1e9, bytes / 1e9, flops / bytes, v->atomics(p),
                human_bytes(static_cast<double>(v->info.workspace_bytes(p))).c_str());
    if (v->info.plan) std::printf("    %s\n", v->info.plan(p).c_str());
  }
}

}  // namespace

int backward_main(int argc, char** argv, const std::string& chapter) {
  CLI::App app{"The backward pass of attention on one problem: the fastest forward kernel gives O and the log-sum-exp "
               "L, then each backward variant computes dQ, dK and dV from Q, K, V, O, L and a seeded dO, checked "
               "against the fp64 reference gradients and timed. Times the forward and the backward separately."};
  app.name(chapter.empty() ? "flashsteps backward" : chapter);
  ProblemArgs args(app);
  std::vector<std::string> names;
  std::string forward;
  bool list = false, bits = false, model = false;
  double dout_scale = 1;
  app.add_option("-v,--variant", names, "run only this backward variant (repeatable)");
  app.add_option("--dout-scale", dout_scale,
                 "multiply the seeded dO by this, as a loss scaler does (rounded to the dtype): large enough, and "
                 "dS leaves fp16's range")
      ->capture_default_str();
  app.add_flag("--bits", bits, "print a fingerprint of each variant's dQ, dK, dV (of its last run): equal bits, equal prints");
  app.add_option("--forward", forward,
                 "the forward variant that computes O and L (default: the fastest that runs the problem; "
                 "\"reference\": the fp64 reference's, rounded)");
  app.add_flag("--list", list, "list the backward variants and what they support");
  app.add_flag("--model", model, "print the variants' cost models for the problem (FLOPs, bytes, atomics), run nothing");
  ProfileOptions profile;
  add_profile_options(app, profile, true);
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    check_profile_options(app, profile, profile.on, args.csv());
    if (apply_gpu_option(profile)) return 0;  // --gpu list
    std::optional<Profiler> profiler = whole_problem_profiler(profile, "backward", true);
    if (list) {
      print_list();
      return 0;
    }
    const Problem p = args.problem();
    const RunOptions o = args.options();
    // Everything refused before any work: unknown names, unsupported problems, memory, time.
    const auto chosen = select_named(backward_registry(), find_backward, names, "backward variant");
    if (model) {
      print_models(chosen, p);
      return 0;
    }
    // A profile runs each variant once, over every head of p or, where that would take long, its
    // first few (backward/profile.cpp): e, the problem the emulator runs, is checked and computed.
    HeadSample heads{static_cast<long long>(p.heads()), static_cast<long long>(p.heads())};
    Problem e = p;
    RunOptions checks = o;
    if (profiler) {
      std::vector<const BackwardVariant*> supported;
      for (const BackwardVariant* v : chosen)
        if (v->info.unsupported(p).empty()) supported.push_back(v);
      heads = backward_heads(*profiler, supported, p);
      e = backward_emulated(p, heads);
      checks.reps = 1, checks.warmup = 0;
    }
    std::vector<const BackwardVariant*> runnable;
    for (const BackwardVariant* v : chosen) {
      try {
        if (const std::string why = v->info.unsupported(p); !why.empty()) throw UsageError(why);
        check_backward_runnable(*v, e, checks);
        runnable.push_back(v);
      } catch (const UsageError& e) {
        if (!names.empty() || chosen.size() == 1) throw;
        print_skip(v->info.name, e.what());
      }
    }
    if (runnable.empty()) throw UsageError("no backward variant runs " + p.describe() + " (--list shows what each supports)");
    const Variant* fwd = choose_forward(forward, e, checks);
    const std::vector<float> dout = seeded_dout(e, dout_scale);  // refuses a scale dO cannot hold

    print_device_and_problem(p);
    if (heads.sampled())
      std::printf("emulated: %s, the first %lld of its %lld (batch, head) pairs, every block (--emulated-heads to "
                  "choose); the rest is neither run nor checked\n",
                  e.describe().c_str(), heads.emulated, heads.total);
    const Inputs in = Inputs::generate(e);
    const BackwardChecker checker(e, in, dout, o);
    BackwardInputs dev(e, in, dout);
    const GradSelection& sel = checker.selection();
    std::printf("checked: dQ on %zu of %d rows, dK and dV on %zu of %d keys, of %zu of %zu heads, against the fp64 "
                "reference gradients (dO seeded like Q, times %g)\n",
                sel.rows.size(), e.Lq, sel.keys.size(), e.Lk, sel.heads.size(), e.heads(), dout_scale);
    if (!chapter.empty()) std::printf("chapter: %s\n", chapter.c_str());

    std::vector<Result> rows;
    double forward_ms = 0;
    if (fwd && profiler) {
      std::printf("\nforward: %s of %s, run once, not counted: its O and L feed the backward\n", fwd->name.c_str(),
                  fwd->chapter.c_str());
      dev.run_forward(*fwd, e);
    } else if (fwd) {
      std::printf("\nforward: %s of %s, the %s, checked and timed; its O and L feed the backward\n", fwd->name.c_str(),
                  fwd->chapter.c_str(), forward.empty() ? "fastest forward kernel for this problem" : "forward asked for");
      print_table_header();
      const Checker fwd_checker(p, in, o);
      rows.push_back(run_variant(*fwd, p, dev.fwd, fwd_checker, o));
      print_row(rows.back());
      forward_ms = rows.back().timing.median_ms;
      dev.run_forward(*fwd, p);
    } else {
      std::printf("\nforward: %s: O and L from the fp64 reference, rounded to %s and fp32\n",
                  forward.empty() ? "no forward kernel runs this problem" : "as asked", dtype_name(p.dtype));
      dev.set_forward(e, reference(e, in, Selection::all(e)));
    }

    if (profiler) {
      std::printf("\nbackward: dQ, dK, dV, each variant run once with the counters on\n");
      bool pass = true;
      for (const BackwardVariant* v : runnable)
        pass = profile_backward(*profiler, *v, p, heads, e, dev, checker, o).result.verdict.pass && pass;
      profiler->print_summary();
      profiler->write_csv(args.csv());
      return pass ? 0 : 1;
    }
    std::printf("\nbackward: dQ, dK, dV (TFLOP/s of 2.5x the forward's FLOPs)\n");
    print_table_header();
    std::vector<BackwardResult> results;
    bool pass = rows.empty() || rows.front().verdict.pass;
    for (const BackwardVariant* v : runnable) {
      results.push_back(run_backward(*v, p, dev, checker, o, bits));
      const BackwardResult& r = results.back();
      print_row(r.row);
      print_gradients(r);
      print_stages(r.row);
      std::fflush(stdout);
      pass = pass && r.row.verdict.pass;
      rows.push_back(r.row);
    }
    if (forward_ms > 0) {
      std::printf("\n%-22s %12s %12s %12s %18s\n", "forward + backward", "forward ms", "backward ms", "total ms",
                  "backward/forward");
      for (const BackwardResult& r : results)
        std::printf("%-22s %12.4f %12.4f %12.4f %17.2fx\n", r.row.variant->name.c_str(), forward_ms, r.row.timing.median_ms,
                    forward_ms + r.row.timing.median_ms, r.row.timing.median_ms / forward_ms);
    }
    if (device().emulated)
      std::printf("\n(CPU emulation: these times measure the emulator, not a GPU)\n");
    if (!args.csv().empty()) append_csv(args.csv(), rows);
    return pass ? 0 : 1;
  });
}

}  // namespace attn
