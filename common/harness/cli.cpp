#include "cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iterator>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "command.h"
#include "errors.h"
#include "profile.h"
#include "report.h"

namespace attn {
namespace {

struct Args {
  int B = 0, H = 0, Hkv = 0, seq = 0, Lq = 0, Lk = 0, d = 64;  // 0: the backend's default (Hkv: H)
  std::string dtype = "fp16", causal, mask = "none", mask_mod = "none";
  int window = -1, prefix = -1;  // -1: not given
  std::vector<int> window_size;  // --window-size L,R
  std::vector<std::string> seqlens, seqlens_k;  // --seqlens, --seqlens-k: a packed batch (lengths_of)
  std::vector<std::string> documents;           // --documents: the document mask_mod's lengths
  std::string block_mask;                       // --block-mask: the blocks mask_mod's lists, as words or @FILE
  bool mask_per_head = false, full_check = false, alibi = false;
  double scale = 0, softcap = 0;
  std::string alibi_slopes;  // --alibi-slopes, read as the mods word alibi_slopes= is
  std::string seed = "1";
  std::vector<std::string> variants;
  int reps = 0, warmup = 0;  // with no --reps, --warmup: the backend's defaults (build_options)
  double cpu_budget = 120;
  std::string csv;
  bool list = false;
  ProfileOptions profile;
  std::vector<std::string> chapters;  // `flashsteps profile --chapter`
};

bool emulated() { return !FLASHSTEPS_GPU; }
std::string number(double x) {  // as the user would write it: -1, 0.5, nan
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

void add_problem_options(CLI::App& app, Args& a) {
  app.add_option("-b,--batch", a.B, "batch size B (default 4 on a GPU, 1 on the CPU)");
  app.add_option("-H,--heads", a.H, "heads H (default 16 on a GPU, 2 on the CPU)");
  app.add_option("-n,--seq", a.seq, "sequence length: Lq = Lk = N (default 2048 on a GPU, 256 on the CPU)");
  app.add_option("--lq", a.Lq, "query length Lq (overrides --seq)");
  app.add_option("--lk", a.Lk, "key/value length Lk (overrides --seq)");
  app.add_option("-d,--head-dim", a.d, "head dim d")->capture_default_str();
  app.add_option("--dtype", a.dtype, "input and output type: fp32, fp16 or bf16")->capture_default_str();
  app.add_option("--causal", a.causal,
                 "is_causal; alignment top-left (torch's is_causal, the default) or bottom-right; with --mask-mod "
                 "document, documents each causal (document_causal)")
      ->expected(0, 1);
  app.add_option("--mask", a.mask, "attn_mask: none, bool or additive")->capture_default_str();
  app.add_flag("--mask-per-head", a.mask_per_head, "one mask per (batch, head) instead of one shared [Lq, Lk]");
  app.add_option("--mask-mod", a.mask_mod,
                 "a mask as a rule (chapter 10): none, sliding_window (with --window), prefix_lm (with --prefix), "
                 "document or document_causal (with --documents, or lengths drawn from --seed), random_blocks, window "
                 "(with --window-size) or blocks (with --block-mask)")->capture_default_str();
  app.add_option("--window", a.window, "sliding_window: the keys a query sees before itself")
      ->check([](const std::string& w) -> std::string {
        if (w.find(',') == std::string::npos) return "";
        return "--window W is sliding_window's keys before the query; FlashAttention-2's window_size " + w +
               " is --mask-mod window --window-size " + w;
      });
  app.add_option("--window-size", a.window_size,
                 "window: FlashAttention-2's window_size L,R, the keys before and after the bottom-right diagonal "
                 "(-1: unbounded); with --causal, R is 0 as in FlashAttention-2")
      ->delimiter(',')
      ->expected(2);
  app.add_option("--prefix", a.prefix, "prefix_lm: the keys every query sees");
  app.add_option("--block-mask", a.block_mask,
                 "blocks: FlexAttention's BlockMask as its lists, in the results CSV's words (results/README.md), or @FILE "
                 "holding them: \"block_size=Q,KV kv_num_blocks=... kv_indices=...\" (and full_kv_num_blocks=... "
                 "full_kv_indices=... for whole blocks), each Q block's listed K/V blocks end to end");
  app.add_option("--documents", a.documents,
                 "document, document_causal: the documents' lengths in order, e.g. 2048,2048, adding up to max(Lq, Lk) (default: "
                 "lengths drawn from --seed, 1 to a third of the sequence)");
  app.add_option("--seqlens", a.seqlens,
                 "a packed batch (chapter 10, flash_attn_varlen_func): the sequences' lengths, e.g. 100,2000,37; "
                 "Lq and Lk are their sums, B is 1, and is_causal (or --mask-mod window) applies within each sequence");
  app.add_option("--seqlens-k", a.seqlens_k,
                 "with --seqlens: the sequences' key lengths, when they differ from their query lengths "
                 "(is_causal's bottom-right diagonal is then each sequence's)");
  app.add_option("--kv-heads", a.Hkv,
                 "with --seqlens: K and V's heads, a divisor of H; query head h reads K/V head h / (H / Hkv) "
                 "(grouped-query attention, as flash_attn_varlen_func takes it; default H)");
  app.add_option("--softcap", a.softcap, "a score_mod (chapter 10): scores become C * tanh(score / C) (FlashAttention-2's softcap)");
  app.add_flag("--alibi", a.alibi, "a score_mod (chapter 10): ALiBi's bias, -slope_h * |i + Lk - Lq - j| (FlashAttention-2's alibi_slopes; in a packed "
                "batch, each sequence's own i, j, Lq and Lk)");
  app.add_option("--alibi-slopes", a.alibi_slopes,
                 "ALiBi with these slopes (FlashAttention-2's alibi_slopes): H of them, one per head, or B x H, "
                 "batch-major (a packed batch: its sequences x H) (default with --alibi: Press et al.'s 2^(-8 (h + 1) / H), params.h)");
  app.add_option("--scale", a.scale, "softmax scale (default 1/sqrt(d))");
  app.add_option("--seed", a.seed, "seed of the random inputs, 0 to 18446744073709551615")
      ->capture_default_str()
      ->type_name("UINT");
  app.add_option("--reps", a.reps, "timed repetitions (default 20 on a GPU, 10 on the CPU; 0: check only, no --csv)");
  app.add_option("--warmup", a.warmup, "untimed runs first (default 3 on a GPU, 1 on the CPU)");
  app.add_flag("--full-check", a.full_check, "check every output row, however large the problem");
  app.add_option("--cpu-budget", a.cpu_budget, "seconds the CPU emulation may take per variant (0: no limit)")
      ->capture_default_str();
  app.add_option("--csv", a.csv, "append the results to this CSV file (new, or one this project wrote)");
}

// The spelling of a pattern as a rule, for --mask given one ("sliding:1024"): its options here, or "".
std::string mask_as_rule(const std::string& m) {
  const size_t colon = m.find(':');
  const std::string kind = m.substr(0, colon), arg = colon == std::string::npos ? "N" : m.substr(colon + 1);
  if (kind == "causal") return "--causal";
  if (kind == "sliding" || kind == "sliding_window") return "--mask-mod sliding_window --window " + arg;
  if (kind == "prefix" || kind == "prefix_lm") return "--mask-mod prefix_lm --prefix " + arg;
  if (kind == "document") return "--mask-mod document --documents " + (colon == std::string::npos ? "L1,L2,..." : arg);
  if (kind == "window") return "--mask-mod window --window-size " + (colon == std::string::npos ? "L,R" : arg);
  return "";
}

// --block-mask's lists: its words (or @FILE's), read as the mods words of mask_mod blocks are, with
// the problem's sizes (validate() checks them against Lq and Lk).
Problem::BlockLists block_lists(const std::string& given, const Problem& sizes) {
  std::string words = given;
  if (!given.empty() && given[0] == '@') {
    const std::string path = given.substr(1);
    std::error_code ec;
    std::ifstream in(path);
    if (!std::filesystem::is_regular_file(path, ec) || !in) throw UsageError("--block-mask: cannot read the file " + path);
    words.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string known;  // "block_size=, kv_num_blocks=, ..."
  for (const char* word : Problem::BlockLists::kWords) known += (known.empty() ? "" : ", ") + std::string(word) + "=";
  std::istringstream list(words);
  for (std::string w; list >> w;)
    if (std::none_of(std::begin(Problem::BlockLists::kWords), std::end(Problem::BlockLists::kWords),
                     [&](const char* word) { return w.rfind(std::string(word) + "=", 0) == 0; }))
      throw UsageError("--block-mask: '" + w + "' is not one of " + known);
  Problem p = sizes;
  try {
    p.apply_mods("mask_mod=blocks " + words);
  } catch (const UsageError& e) {
    const std::string why = e.what();
    throw UsageError("--block-mask: " + (why.rfind("mods: ", 0) == 0 ? why.substr(6) : why));
  }
  return p.blocks;
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
  else if (const std::string rule = mask_as_rule(a.mask); !rule.empty())
    throw UsageError("--mask takes an attn_mask's kind (none, bool or additive); the pattern " + a.mask + " is " + rule);
  else if (a.mask != "none")
    throw UsageError("unknown mask \"" + a.mask + "\": use none, bool or additive");
  if (a.mask_per_head && p.mask == MaskKind::none)
    throw UsageError("--mask-per-head needs a mask: add --mask bool or --mask additive");
  p.mask_per_head = a.mask_per_head;
  const ModKind* mod =
      std::find_if(std::begin(kModKinds), std::end(kModKinds), [&](ModKind m) { return a.mask_mod == mod_name(m); });
  if (mod == std::end(kModKinds))
    throw UsageError("unknown mask_mod \"" + a.mask_mod +
                     "\": use none, sliding_window, prefix_lm, document, document_causal, random_blocks, window or blocks");
  p.mod = *mod;
  if ((p.mod == ModKind::window) != (app.count("--window-size") > 0))
    throw UsageError(p.mod == ModKind::window ? "--mask-mod window needs --window-size L,R (-1 for an unbounded side)"
                                             : "--window-size is window's: add --mask-mod window");
  if (p.mod == ModKind::window) p.left = a.window_size[0], p.right = a.window_size[1];
  if ((p.mod == ModKind::sliding_window) != (a.window >= 0) && (p.mod == ModKind::sliding_window || app.count("--window")))
    throw UsageError(p.mod == ModKind::sliding_window ? "--mask-mod sliding_window needs --window N (N >= 0)"
                                                      : "--window is sliding_window's: add --mask-mod sliding_window");
  if ((p.mod == ModKind::prefix_lm) != (a.prefix >= 0) && (p.mod == ModKind::prefix_lm || app.count("--prefix")))
    throw UsageError(p.mod == ModKind::prefix_lm ? "--mask-mod prefix_lm needs --prefix N (N >= 0)"
                                                 : "--prefix is prefix_lm's: add --mask-mod prefix_lm");
  if (app.count("--documents") && !reads_documents(p.mod))
    throw UsageError("--documents is document's and document_causal's: add --mask-mod document or document_causal");
  p.doc_lengths = lengths_of("--documents", a.documents);  // validate() checks that they add up
  if ((p.mod == ModKind::blocks) != (app.count("--block-mask") > 0))
    throw UsageError(p.mod == ModKind::blocks ? "--mask-mod blocks needs --block-mask (its lists, or @FILE)"
                                              : "--block-mask is blocks': add --mask-mod blocks");
  if (p.mod == ModKind::blocks) p.blocks = block_lists(a.block_mask, p);
  if (app.count("--seqlens-k") && !app.count("--seqlens")) throw UsageError("--seqlens-k needs --seqlens (the query lengths)");
  if (app.count("--seqlens")) {
    for (const char* sized : {"--seq", "--lq", "--lk"})
      if (app.count(sized))
        throw UsageError(std::string("--seqlens sets Lq and Lk (the sums of the lengths): drop ") + sized);
    // pack() refuses a mask_mod other than a window; validate() a negative length.
    const std::vector<int> q = lengths_of("--seqlens", a.seqlens);
    p.pack(q, app.count("--seqlens-k") ? lengths_of("--seqlens-k", a.seqlens_k) : q);
    if (!app.count("--batch")) p.B = 1;
  }
  if (p.windowed()) {
    // FlashAttention-2's causal=True with a window: the window's right side becomes 0, on its own
    // (bottom-right) diagonal, each sequence's in a packed batch; top-left's differs from it where
    // Lq != Lk.
    const bool square = p.packed() ? p.seqlens_q == p.seqlens_k : p.Lq == p.Lk;
    if (p.causal == Causal::top_left && !square)
      throw UsageError(std::string("a window's diagonal is bottom-right (FlashAttention-2's): with Lq != Lk") +
                       (p.packed() ? " in a sequence" : "") + ", use --causal bottom-right");
    if (p.causal != Causal::none) p.right = 0, p.causal = Causal::none;
  }
  if (!p.fold_causal_documents())
    throw UsageError("causal documents' diagonal is top-left (a query sees its own document's keys up to its own "
                     "position): with Lq != Lk, use --causal top-left");
  if (app.count("--kv-heads")) {
    if (a.Hkv < 1) throw UsageError("--kv-heads must be at least 1 (got " + std::to_string(a.Hkv) + ")");
    p.Hkv = a.Hkv;  // validate() refuses one that does not divide H, or without --seqlens
  }
  p.window = std::max(a.window, 0), p.prefix = std::max(a.prefix, 0);
  p.softcap = static_cast<float>(a.softcap), p.alibi = a.alibi;  // validate() refuses a negative or non-finite cap
  // Given slopes are ALiBi, each item a number as in the mods word; validate() checks their count and
  // that each is finite in fp32.
  if (app.count("--alibi-slopes")) {
    Problem words;
    try {
      words.apply_mods("alibi_slopes=" + a.alibi_slopes);
    } catch (const UsageError&) {
      throw UsageError("--alibi-slopes " + a.alibi_slopes + ": not a list of numbers, S1,S2,...");
    }
    p.alibi_slopes = words.alibi_slopes, p.alibi = true;
  }
  if (a.softcap > 0 && p.softcap == 0.f)
    throw UsageError("--softcap " + number(a.softcap) + " is below the smallest fp32 number: give 0 for no cap");
  if (app.count("--scale")) p.scale_override = a.scale;  // validate() refuses NaN, Inf and overflowing ones
  p.seed = parse_seed(a.seed);
  p.validate();
  return p;
}

RunOptions build_options(const Args& a, const CLI::App& app) {
  RunOptions o;
  const bool gpu = !emulated();
  // On the CPU, 10 repetitions: with one, a busy machine swings the speedups by tens of percent.
  o.reps = app.count("--reps") ? a.reps : gpu ? 20 : 10;
  o.warmup = app.count("--warmup") ? a.warmup : gpu ? 3 : 1;
  o.sample = !a.full_check;
  o.cpu_budget_s = a.cpu_budget;
  check_run_options(o, app.count("--csv") > 0);
  if (app.count("--csv")) check_csv_target(a.csv);
  return o;
}

void print_list(const std::vector<const Variant*>& pool) {
  std::string chapter;
  auto gpu_only_of = [](const std::string& c) {  // the variants this (cpu) build lacks
    if (!emulated()) return;
    for (const auto& [in, name] : gpu_only_variants())
      if (in == c) std::printf("  %-20s needs a GPU: not in this build (the CPU emulator's)\n", name.c_str());
  };
  for (const Variant* v : pool) {
    if (v->chapter != chapter) {
      if (!chapter.empty()) gpu_only_of(chapter);
      std::printf("%s%s\n", chapter.empty() ? "" : "\n", (chapter = v->chapter).c_str());
    }
    std::printf("  %-20s %s%s\n  %-20s supports %s\n", v->name.c_str(), v->description.c_str(), v->best ? " (best)" : "",
                "", v->supports().c_str());
  }
  if (!chapter.empty()) gpu_only_of(chapter);
  std::printf("\n(best): the variant the chapter ends on, the one `flashsteps tour` runs\n");
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
      if (v->answers_to(n)) found = v;
    if (found && found->name != n)
      std::fprintf(stderr, "variant %s is now called %s\n", n.c_str(), found->name.c_str());
    if (!found) {
      for (const auto& [chapter, name] : gpu_only_variants())
        if (name == n)
          throw UsageError("variant " + n + " of " + chapter + " needs a GPU: this build runs the kernels on the CPU "
                           "emulator, and " + n + " calls what only nvcc builds (--list shows what runs here)");
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
// With a profiler, each variant runs with the counters on instead of being timed: on the problem,
// or on the part of it the profiler's plan emulates (model/sampling.h), whose limits of memory and
// time are then the ones that count.
std::vector<Result> run_all(const std::vector<const Variant*>& chosen, bool named, const Problem& p,
                            const RunOptions& o, bool show_stages, Profiler* profiler = nullptr) {
  RunOptions checks = o;
  if (profiler) checks.reps = 0;  // counted once: the CPU budget is for that one run
  std::vector<SamplePlan> plans(chosen.size());
  std::vector<const Variant*> runnable;
  std::vector<std::string> reasons(chosen.size());
  for (size_t i = 0; i < chosen.size(); ++i) {
    try {
      if (profiler) {
        if (const std::string why = chosen[i]->unsupported(p); !why.empty()) throw UsageError(why);
        plans[i] = profiler->plan(*chosen[i], p);
        for (const Problem& e : emulated_problems(p, plans[i])) check_runnable(*chosen[i], e, checks);
        profiler->check_plan(*chosen[i], p, plans[i]);
      } else {
        check_runnable(*chosen[i], p, o);
      }
      runnable.push_back(chosen[i]);
    } catch (const UsageError& e) {
      if (named || chosen.size() == 1) throw;
      reasons[i] = e.what();
    }
  }
  if (runnable.empty()) {
    std::string all;
    for (const auto& r : reasons) all += (all.empty() ? "" : "\n") + r;
    throw UsageError(all);
  }
  print_device_and_problem(p);
  std::vector<Result> results;
  std::optional<Prepared> prepared;
  if (!profiler) {
    prepared.emplace(p, o);
    print_checked_rows(p, prepared->checker.selection());
    if (o.reps > 0)
      std::printf("timed:   median and minimum of %d run%s of each variant, after %d untimed; the variants take turns, "
                  "one run each per round (--reps, --warmup)\n",
                  o.reps, o.reps == 1 ? "" : "s", o.warmup);
    else
      std::printf("timed:   no (--reps 0): each variant runs once and is checked\n");
    std::fflush(stdout);
    // The rows come once every round is done; meanwhile a terminal sees the rounds go by.
    const bool tty = isatty(fileno(stderr));
    results = run_in_rounds(runnable, p, *prepared, o, [&](int r, int rounds) {
      if (tty && rounds > 1) std::fprintf(stderr, "\r  round %d of %d%s", r, rounds, r == rounds ? "\r\033[K" : "");
    });
    print_table_header();
  }
  for (size_t i = 0, next = 0; i < chosen.size(); ++i) {
    if (!reasons[i].empty()) {
      print_skip(chosen[i]->name, reasons[i]);
      continue;
    }
    if (profiler) {
      results.push_back(profiler->run(*chosen[i], p, plans[i], checks, show_stages).result);
    } else {
      const Result& r = results[next++];
      print_row(r);
      if (show_stages) print_stages(r);
    }
    std::fflush(stdout);
  }
  for (const Result& r : results)
    if (!r.error.empty() && context_lost())
      throw CudaError("the GPU's context was lost (" + r.variant->name + ": " + r.error + "); the rows above are what ran");
  return results;
}

int finish(const std::vector<Result>& results, const std::string& csv, const Profiler* profiler = nullptr,
           bool timed = true) {
  if (!csv.empty() && timed) append_csv(csv, results);
  if (profiler) profiler->write_csv(csv);
  for (const Result& r : results)
    if (!r.verdict.pass) return 1;
  if (profiler)
    for (const Profile& pr : profiler->profiles())
      if (!pr.result.verdict.pass) return 1;
  return 0;
}

}  // namespace

uint64_t parse_seed(const std::string& given) {
  // CLI11 would wrap -1 and clamp 2^64 or 1e23 into range: digits only, and within 64 bits.
  uint64_t seed = 0;
  const char* end = given.data() + given.size();
  const auto [at, err] = std::from_chars(given.data(), end, seed);
  if (given.empty() || err != std::errc() || at != end)
    throw UsageError("--seed takes a whole number from 0 to 18446744073709551615, not \"" + given + "\"");
  return seed;
}

std::vector<int> lengths_of(const char* option, const std::vector<std::string>& given) {
  std::vector<int> out;
  for (const std::string& arg : given)
    for (size_t start = 0;;) {
      const size_t comma = arg.find(',', start);
      const std::string item = arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      int v = 0;
      const auto [at, err] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || err != std::errc() || at != item.data() + item.size())
        throw UsageError(std::string(option) + " " + arg + ": " +
                         (item.empty() ? std::string("an empty item") : "\"" + item + "\" is not a whole number") +
                         " (lengths as N1,N2,...)");
      out.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  return out;
}

void check_run_options(const RunOptions& o, bool csv) {
  if (o.reps < 0) throw UsageError("--reps must be 0 or more, not " + std::to_string(o.reps));
  if (o.warmup < 0) throw UsageError("--warmup must be 0 or more, not " + std::to_string(o.warmup));
  if (!(o.cpu_budget_s >= 0) || std::isinf(o.cpu_budget_s))  // NaN too
    throw UsageError("--cpu-budget takes seconds, 0 or more (0: no limit), not " + number(o.cpu_budget_s));
  if (csv && o.reps == 0)
    throw UsageError("--reps 0 checks the output without timing it: a CSV row holds times, so --csv takes "
                     "--reps 1 or more");
}

int chapter_main(int argc, char** argv, const std::string& chapter, bool profile_only) {
  CLI::App app{profile_only ? "Every variant (or those chosen) run once with the emulator's counters on: what a GPU "
                              "profiler would count, stage by stage, and the time the model of "
                              "notes/performance_model.md gives a GPU. Needs a counters build."
               : chapter.empty() ? "Every variant of every chapter on one attention problem."
                                 : "Chapter " + chapter + ": its variants on one attention problem, checked against "
                                   "the fp64 reference and timed."};
  if (chapter.empty()) app.name(profile_only ? "flashsteps profile" : "flashsteps run");
  Args a;
  add_problem_options(app, a);
  app.add_option("-v,--variant", a.variants, "run only this variant (repeatable)");
  if (profile_only) app.add_option("--chapter", a.chapters, "only the variants of these chapters (a prefix: 02; repeatable)");
  app.add_flag("--list", a.list, "list the variants and what they support");
  add_profile_options(app, a.profile, !profile_only);
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    check_profile_options(app, a.profile, a.profile.on || profile_only, a.csv);
    if (apply_gpu_option(a.profile)) return 0;  // --gpu list
    std::optional<Profiler> profiler;
    if (a.profile.on || profile_only) profiler.emplace(a.profile);  // refuses before any work
    auto pool = variants_of(chapter);
    for (const std::string& c : a.chapters)  // each must name one: a typo would shrink the run without a word
      if (std::none_of(pool.begin(), pool.end(), [&](const Variant* v) { return v->chapter.rfind(c, 0) == 0; }))
        throw UsageError("--chapter " + c + ": no chapter starts with it (--list shows them)");
    if (!a.chapters.empty())
      std::erase_if(pool, [&](const Variant* v) {
        return std::none_of(a.chapters.begin(), a.chapters.end(), [&](const std::string& c) { return v->chapter.rfind(c, 0) == 0; });
      });
    if (a.list) {
      print_list(pool);
      return 0;
    }
    const Problem p = build_problem(a, app);
    const RunOptions o = build_options(a, app);
    const auto results =
        run_all(select(pool, a.variants), !a.variants.empty(), p, o, true, profiler ? &*profiler : nullptr);
    if (profiler) profiler->print_summary();
    return finish(results, a.csv, profiler ? &*profiler : nullptr, !profiler);
  });
}

// The tour's summary: one line per chapter, its speedup over chapter 01 measured here. Another
// column (a GPU's time modelled from the emulator's counters, say) goes beside the measured one.
void print_tour_summary(const std::vector<Result>& results) {
  const Result& first = results.front();
  if (first.variant->chapter.rfind("01", 0) != 0 || first.timing.median_ms <= 0) return;
  std::printf("\n%-22s %-22s %11s %15s\n", "chapter", "best variant", "median ms", "speedup vs 01");
  for (const Result& r : results) {
    // *: the chapter's best step does not run here; its most advanced one that does (said below).
    const std::string name = r.variant->name + (r.variant->best ? "" : " *");
    if (r.timing.median_ms > 0)
      std::printf("%-22s %-22s %11.4f %14.2fx\n", r.variant->chapter.c_str(), name.c_str(), r.timing.median_ms,
                  first.timing.median_ms / r.timing.median_ms);
    else
      std::printf("%-22s %-22s %11s %15s\n", r.variant->chapter.c_str(), name.c_str(), "FAILED", "-");
  }
  if (emulated())
    std::printf("\nCPU emulator: these times rank the chapters by what they cost the emulator, which runs every GPU "
                "thread in turn, not by a GPU's speed.\nWhat a GPU would take, modelled from the emulator's counters: "
                "`flashsteps tour --profile` in a counters build (tools/run_chapters.sh does it).\nOn a GPU: the same "
                "table in the GPU's own times; measured GPU results are listed in results/README.md.\n");
}

const char* times_kind(const Profiler* profiler) {
  return profiler ? "modelled" : emulated() ? "emulator times" : "measured";
}

// The tour's masks line: on its plain problem chapter 10's best has no pattern to skip, so it runs
// again, with its first step, on the same problem with a document mask (packed documents of the
// seed's random lengths; with is_causal, each causal: document_causal, whose diagonal is top-left's,
// so a bottom-right one with Lq != Lk is skipped in a sentence): the mask as a tensor against the
// block mask. Not when
// the problem already has a mask or mask_mod (the tour itself then ran chapter 10 on it). Returns
// the two results (for the exit code and the CSV); prints why a step is skipped.
std::vector<Result> tour_masks(const Problem& f, const RunOptions& o, Profiler* profiler) {
  const Variant *tensor = find_variant("mask_tensor"), *best = best_of("10_masks");
  if (!tensor || !best || f.mod != ModKind::none || f.mask != MaskKind::none) return {};
  Problem p = f;
  p.mod = ModKind::document;
  p.fold_causal_documents();  // where it cannot, validate() below refuses and the line says why
  std::printf("\nmasks (chapter 10; 10_masks --mask-mod NAME for more): the same problem with a %s mask, "
              "its first step against its best\n", mod_name(p.mod));
  std::fflush(stdout);
  try {
    p.validate();
    const size_t profiled = profiler ? profiler->profiles().size() : 0;  // run_all adds one per result
    const auto results = run_all({tensor, best}, false, p, o, false, profiler);
    double t[2] = {0, 0};
    for (size_t i = 0; i < results.size(); ++i)
      t[results[i].variant == best] = profiler ? profiler->profiles()[profiled + i].us : results[i].timing.median_ms;
    if (t[0] > 0 && t[1] > 0)
      std::printf("  %s is %.2fx faster than the mask as a tensor (%s)\n", best->name.c_str(), t[0] / t[1],
                  times_kind(profiler));
    return results;
  } catch (const UsageError& e) {  // neither runs: a reason per line
    std::string why = e.what();
    for (size_t at = why.find('\n'); at != std::string::npos; at = why.find('\n', at + 1)) why.insert(at + 1, "  skipped: ");
    std::printf("  skipped: %s\n", why.c_str());
    return {};
  }
}

int tour_main(int argc, char** argv) {
  CLI::App app{"Every chapter's best variant (the one it ends on) on one problem: its error against the fp64 reference, "
               "its time, and its speedup over chapter 01."};
  app.name("flashsteps tour");
  Args a;
  add_problem_options(app, a);
  add_profile_options(app, a.profile, true);
  bool chapters_only = false;
  app.add_flag("--chapters-only", chapters_only,
               "the chapters' table alone: no decoding or masks line after it (tools/model_sweep.sh)");
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    check_profile_options(app, a.profile, a.profile.on, a.csv);
    if (apply_gpu_option(a.profile)) return 0;  // --gpu list
    std::optional<Profiler> profiler;
    if (a.profile.on) profiler.emplace(a.profile);  // refuses before any work
    const Problem p = build_problem(a, app);
    const RunOptions o = build_options(a, app);
    std::vector<const Variant*> best;
    std::vector<std::string> stand_ins;
    for (const std::string& c : chapters()) {
      const Variant* v = best_of(c);
      if (const std::string why = v->unsupported(p); !why.empty())
        if (const Variant* s = runnable_step(c, p)) {
          stand_ins.push_back("* " + c + ": its best step does not run here (" + why + "); the tour runs " + s->name +
                              ", its most advanced step that does");
          v = s;
        }
      best.push_back(v);
    }
    auto results = run_all(best, false, p, o, false, profiler ? &*profiler : nullptr);
    if (profiler)
      profiler->print_summary();
    else if (!results.empty())
      print_tour_summary(results);
    for (const std::string& s : stand_ins) std::printf("%s\n", s.c_str());
    if (!chapters_only) {
      tour_decoding(p, o, profiler ? &*profiler : nullptr);
      const auto masked = tour_masks(p, o, profiler ? &*profiler : nullptr);
      results.insert(results.end(), masked.begin(), masked.end());
    }
    return finish(results, a.csv, profiler ? &*profiler : nullptr, !profiler);
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
RunOptions ProblemArgs::options() const { return build_options(impl_->a, *impl_->app); }
const std::string& ProblemArgs::csv() const { return impl_->a.csv; }

}  // namespace attn
