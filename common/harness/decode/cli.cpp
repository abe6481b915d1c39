// decode/cli.cpp: `flashsteps decode` and chapter 08's binary. One decoding problem: each variant
// appends the new tokens' K and V to the cache and attends, checked against the fp64 reference
// (each sequence as a forward problem, heads repeated) and timed. With --profile, each runs once
// with the counters on instead, through the forward's profiler (profile.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>

#include "harness/cli.h"
#include "harness/command.h"
#include "harness/decode/decode.h"
#include "harness/errors.h"
#include "harness/profile.h"
#include "harness/report.h"

namespace attn {
namespace {

void print_list() {
  std::string chapter;
  for (const DecodeVariant& d : decode_registry()) {
    const Variant& v = d.info;
    if (v.chapter != chapter) std::printf("%s%s (decoding)\n", chapter.empty() ? "" : "\n", (chapter = v.chapter).c_str());
    std::printf("  %-20s %s%s\n  %-20s supports %s; d %s%s%s\n", v.name.c_str(), v.description.c_str(),
                v.best ? " (best)" : "", "", v.supports().substr(0, v.supports().find(';')).c_str(),
                v.head_dims.describe().c_str(), d.paged ? "; paged" : "", d.splits ? "; splits" : "");
  }
}

// What a sampled profile emulated (decode_profile_sampled): said once for the tour's line and the
// command's header; `hint` names how to emulate every sequence, where there is a way.
void print_sampled(const DecodeProblem& p, const char* indent, const char* hint) {
  std::string part;
  if (p.group() == 1 && p.Hq > 1) part = "head 0 of the " + std::to_string(p.Hq);  // no GQA: a KV head per query head
  else if (p.Hkv > 1) part = "KV head 0 of the " + std::to_string(p.Hkv) + " (its " + std::to_string(p.group()) + " query heads)";
  else if (p.Hq > 1) part = "the " + std::to_string(p.Hq) + " heads";
  if (p.B > 1) part += (part.empty() ? "" : " of ") + std::string("sequence 0 of the ") + std::to_string(p.B) + ", all of one length";
  std::printf("%semulated: %s; its counts x %d stand for the whole problem%s; the rest goes unchecked\n", indent,
              part.c_str(), p.B * p.Hkv, hint);
}

}  // namespace

void tour_decoding(const Problem& f, const RunOptions& o, Profiler* profiler) {
  DecodeProblem p;
  p.B = f.B, p.Hq = p.Hkv = f.H, p.d = f.d, p.dtype = f.dtype, p.Lq = 1, p.seed = f.seed;
  p.cache_lens = {std::max(f.Lk - 1, 0)};
  const DecodeVariant* base = find_decode("prefill_kernel");
  const DecodeVariant* best = best_decode();
  if (!base || !best) return;
  std::printf("\ndecoding (chapter 08; flashsteps decode for more): one new token per sequence against a cache of %d "
              "keys, %d heads: %s\n",
              p.cache_len(0), p.Hq, p.describe().c_str());
  // Each that cannot run here (a GPU without chapter 05's instructions, for the baseline) is said so,
  // and the other still runs.
  const DecodeVariant* vs[2] = {base, best};
  bool runs[2] = {false, false};
  for (int i = 0; i < 2; ++i) {
    try {
      p.validate();
      check_decode_runnable(*vs[i], p, o);
      runs[i] = true;
    } catch (const UsageError& e) {
      std::printf("  %-16s skipped: %s\n", vs[i]->info.name.c_str(), e.what());
    }
  }
  if (!runs[0] && !runs[1]) return;
  double t[2] = {0, 0};
  bool pass[2] = {false, false};
  const auto report = [&](int i) {
    std::printf("  %-16s %s %12.4f %s\n", vs[i]->info.name.c_str(), pass[i] ? "pass" : "FAIL", t[i],
                profiler ? "us modelled" : "ms");
  };
  if (profiler) {
    // As `flashsteps decode --profile`: sequences of one length, one emulated for all (profile_decode).
    const bool sampled = decode_profile_sampled(p);
    if (sampled) print_sampled(p, "  ", "");
    for (int i = 0; i < 2; ++i) {
      if (!runs[i]) continue;
      const Profile& pr = profile_decode(*profiler, *vs[i], p, sampled, o, false);
      t[i] = pr.us, pass[i] = pr.result.verdict.pass;
      report(i);
    }
  } else {
    const DecodeInputs in = DecodeInputs::generate(p);
    const DecodeChecker checker(p, in, o);
    DecodeDevice dev(p, in);
    for (int i = 0; i < 2; ++i) {
      if (!runs[i]) continue;
      const Result r = run_decode(*vs[i], p, dev, in, checker, o);
      t[i] = r.timing.median_ms, pass[i] = r.verdict.pass;
      report(i);
    }
  }
  if (t[0] > 0 && t[1] > 0)
    std::printf("  %s is %.2fx faster than chapter 05's best run on it (%s)\n", best->info.name.c_str(), t[0] / t[1],
                times_kind(profiler));
}

int decode_main(int argc, char** argv, const std::string& chapter) {
  CLI::App app{"Decoding (chapter 08): new query tokens against a KV cache, paged or not, with fewer KV heads than "
               "query heads (GQA). Each variant appends the new tokens' K and V to the cache in place, then attends; "
               "each is checked against the fp64 reference (every sequence as a forward problem with the KV heads "
               "repeated) and its cache against the expected one, bit for bit, and timed."};
  app.name(chapter.empty() ? "flashsteps decode" : chapter);
  DecodeProblem p;
  std::vector<std::string> lens;
  int cache_len = 1024, page_size = 0;
  std::string dtype = "fp16", csv, seed = std::to_string(p.seed);
  std::optional<double> scale;
  bool no_append = false, list = false, full_check = false, all_sequences = false;
  RunOptions o;
  std::vector<std::string> names;
  app.add_option("-b,--batch", p.B, "sequences (B)")->capture_default_str();
  app.add_option("-H,--heads", p.Hq, "query heads (Hq)")->capture_default_str();
  app.add_option("--kv-heads", p.Hkv, "KV heads (Hkv; Hq must be a multiple: query head h reads KV head h / (Hq/Hkv))")
      ->capture_default_str();
  app.add_option("-d,--head-dim", p.d, "head dim")->capture_default_str();
  app.add_option("--new-tokens", p.Lq, "new query tokens per sequence (1: decoding; 2 to 16: speculative verification)")
      ->capture_default_str();
  app.add_option("--cache-len", cache_len, "keys in every sequence's cache before the new tokens")->capture_default_str();
  app.add_option("--cache-lens", lens, "one cache length per sequence, e.g. 100,2000 (replaces --cache-len)");
  app.add_option("--capacity", p.capacity, "keys a sequence's cache can hold (default: the longest sequence's, in whole pages)");
  app.add_option("--page-size", page_size, "a paged cache: pages of this many keys (any size >= 1) and a block table");
  app.add_flag("--no-append", no_append, "the new tokens' K and V are not appended: attend over the cache as it is");
  app.add_flag("--causal", p.causal, "causal among the new tokens, aligned bottom-right (FlashAttention's alignment)");
  app.add_option("--splits", p.splits, "split each sequence's keys in this many parts (0: the heuristic; split variants)")
      ->capture_default_str();
  app.add_option("--dtype", dtype, "fp16 or bf16")->capture_default_str();
  app.add_option("--scale", scale, "the softmax scale (default 1/sqrt(d))");
  app.add_option("--seed", seed, "seed of the inputs, 0 to 18446744073709551615")->capture_default_str()->type_name("UINT");
  app.add_option("-v,--variant", names, "run only this variant (repeatable)");
  app.add_flag("--list", list, "list the decoding variants and what they support");
  app.add_option("--reps", o.reps, "timed repetitions (0: run once, untimed)")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed runs first")->capture_default_str();
  app.add_flag("--full-check", full_check, "check every sequence and head, however large");
  app.add_option("--cpu-budget", o.cpu_budget_s, "cpu backend: refuse problems the emulator would take longer on (s; 0: no limit)")
      ->capture_default_str();
  app.add_option("--csv", csv, "append one row per variant to this CSV file");
  ProfileOptions profile;
  add_profile_options(app, profile, true);
  app.add_flag("--all-sequences", all_sequences,
               "with --profile: emulate the whole problem, every sequence and KV head, where KV head 0 of the first "
               "sequence would stand for all (sequences of one length)");
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    check_profile_options(app, profile, profile.on, csv);
    if (all_sequences && !profile.on) throw UsageError("--all-sequences is --profile's: add --profile");
    if (apply_gpu_option(profile)) return 0;  // --gpu list
    std::optional<Profiler> profiler = whole_problem_profiler(profile, "decode");
    if (list) {
      print_list();
      return 0;
    }
    const auto t = parse_dtype(dtype);
    if (!t) throw UsageError("unknown dtype \"" + dtype + "\" (fp16, bf16)");
    p.dtype = *t;
    p.scale_override = scale;
    p.seed = parse_seed(seed);
    p.append = !no_append;
    if (app.count("--cache-len") && app.count("--cache-lens"))
      throw UsageError("--cache-lens gives every sequence's length: drop --cache-len");
    p.cache_lens = lens.empty() ? std::vector<int>{cache_len} : lengths_of("--cache-lens", lens);
    if (app.count("--page-size")) p.paged = true, p.page_size = page_size;
    check_run_options(o, !csv.empty());
    o.sample = !full_check;
    p.validate();
    if (!csv.empty()) check_csv_target(csv);
    const auto chosen = select_named(decode_registry(), find_decode, names, "decoding variant");
    // A profile of sequences of one length emulates the first (profile_decode), when the cache is
    // large enough for the emulation to take a while.
    const bool sampled = profiler && !all_sequences && decode_profile_sampled(p);
    const DecodeProblem e = decode_emulated(p, sampled);
    std::vector<const DecodeVariant*> runnable;
    for (const DecodeVariant* v : chosen) {
      try {
        p.validate();
        if (const std::string why = v->unsupported(p); !why.empty()) throw UsageError(why);
        DecodeProblem ev = e;
        ev.splits = v->splits_for(p);
        check_decode_runnable(*v, ev, o);
        runnable.push_back(v);
      } catch (const UsageError& err) {
        if (!names.empty() || chosen.size() == 1) throw;
        print_skip(v->info.name, err.what());
      }
    }
    if (runnable.empty()) throw UsageError("no decoding variant runs " + p.describe() + " (--list shows what each supports)");

    std::printf("device:  %s\nproblem: %s, scale %.6g, seed %llu\n", device().summary().c_str(), p.describe().c_str(),
                p.scale(), static_cast<unsigned long long>(p.seed));
    std::printf("         the cache read once is %s (K and V of %d keys at most per sequence); %d query heads per KV head\n",
                human_bytes(p.cache_bytes()).c_str(), p.max_keys(), p.group());
    if (sampled) print_sampled(p, "", " (--all-sequences: all of it)");
    if (!chapter.empty()) std::printf("chapter: %s\n", chapter.c_str());
    bool pass = true;
    if (profiler) {
      std::printf("checked: what is emulated, every new token of every query head, against the fp64 reference; the "
                  "cache bit for bit\n");
      for (const DecodeVariant* v : runnable)
        pass = profile_decode(*profiler, *v, p, sampled, o).result.verdict.pass && pass;
      profiler->print_summary();
      profiler->write_csv(csv);
      return pass ? 0 : 1;
    }
    const DecodeInputs in = DecodeInputs::generate(p);
    check_decode_inputs(p, in);
    const DecodeChecker checker(p, in, o);
    DecodeDevice dev(p, in);
    std::printf("checked: %zu of %d sequences, %zu of %d query heads, every new token, against the fp64 reference; the "
                "whole cache bit for bit\n",
                checker.sequences_checked(), p.B, checker.heads_checked().size(), p.Hq);
    std::printf("\n");
    print_table_header();
    std::vector<Result> rows;
    for (const DecodeVariant* v : runnable) {
      rows.push_back(run_decode(*v, p, dev, in, checker, o));
      const Result& r = rows.back();
      print_row(r);
      print_stages(r);
      if (!r.verdict.pass) std::printf("    FAILED: %s\n", r.verdict.why.c_str());
      std::fflush(stdout);
      pass = pass && r.verdict.pass;
    }
    if (device().emulated) std::printf("\n(CPU emulation: these times measure the emulator, not a GPU)\n");
    if (!csv.empty()) append_csv(csv, rows);
    return pass ? 0 : 1;
  });
}

}  // namespace attn
