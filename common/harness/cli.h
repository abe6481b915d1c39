// cli.h: the command lines of the chapter binaries and of `flashsteps`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runner.h"

namespace CLI {
class App;
}

namespace attn {

// A chapter binary: the chapter's variants on one problem (chapter "": every chapter's).
// Exit code 0 when every variant passed its check, 1 when one failed or CUDA failed, 2 for bad input.
// profile_only: `flashsteps profile`, each variant run once with the counters on (profile.h).
int chapter_main(int argc, char** argv, const std::string& chapter, bool profile_only = false);
// `flashsteps tour`: every chapter's best variant on one problem, with its speedup over chapter 01.
int tour_main(int argc, char** argv);
// `flashsteps bench`: the benchmark runner (bench.cpp).
int bench_main(int argc, char** argv);
// `flashsteps backward` and chapter 07's binary: the fastest forward, then the backward variants
// (backward/cli.cpp).
int backward_main(int argc, char** argv, const std::string& chapter);
// `flashsteps decode` and chapter 08's binary: the decoding variants on one problem (decode/cli.cpp).
int decode_main(int argc, char** argv, const std::string& chapter);
// `flashsteps support`: which chapter runs on which GPU (support.cpp), the README's support matrix.
int support_main(int argc, char** argv);
// The tour's decoding line: chapter 08's best against chapter 05's best run on one new token per
// sequence of the tour's problem (a cache of Lk - 1 keys, every head its own KV head).
class Profiler;
void tour_decoding(const Problem& p, const RunOptions& o, Profiler* profiler);
// What the tour's extra lines' times are: "modelled" (a profiler's), "emulator times" or "measured".
const char* times_kind(const Profiler* profiler);

// --seed's text as a 64-bit seed: digits only, within 64 bits (CLI11 would wrap -1 and clamp 2^64),
// else a UsageError.
uint64_t parse_seed(const std::string& given);
// A list option's lengths as given, "100,2000,37" (or in separate arguments), each a whole number:
// an empty item (two commas, or one at an end) is a UsageError, where CLI11's delimiter would drop it.
std::vector<int> lengths_of(const char* option, const std::vector<std::string>& given);
// --reps, --warmup and --cpu-budget as given (reps and warmup 0 or more, the budget a number of
// seconds, 0 or more), and --csv (`csv`: given) only with timed repetitions: else a UsageError.
void check_run_options(const RunOptions& o, bool csv);

// The problem options every command shares (sizes, dtype, is_causal, mask, scale, seed, --reps,
// --warmup, --full-check, --cpu-budget, --csv), for a command defined in another file: declared
// on `app` by the constructor; after parsing, problem() and options() check them as the chapter
// binaries do (UsageError on bad input).
class ProblemArgs {
 public:
  explicit ProblemArgs(CLI::App& app);
  ~ProblemArgs();
  Problem problem() const;
  RunOptions options() const;
  const std::string& csv() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attn
