// profile.h: `flashsteps profile` and `--profile`: what the emulator's counters say about a
// variant, stage by stage (simt/counters.h), and the time a GPU would take by the model of
// common/model. Only a counters build counts (cmake -DFLASHSTEPS_COUNTERS=ON); elsewhere asking
// for a profile is refused before any work, with the command that configures one. A problem too
// large to emulate whole is modelled from a few of its heads (model/sampling.h).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/sampling.h"
#include "runner.h"

namespace attn {

struct ProfileOptions {
  bool on = false;
  int sample_blocks = 1;
  long long emulated_heads = 0;  // 0: chosen by the problem's size
  std::string gpu = "h100";
  std::string counters_csv;
  std::string emulator_times;  // a CSV of a plain build's run on the same problem
};
// --profile (when `flag`: `flashsteps profile` needs none), --sample-blocks, --emulated-heads, --gpu,
// --counters-csv, --emulator-times.
void add_profile_options(CLI::App& app, ProfileOptions& o, bool flag);

// One stage's counters, summed over its launches, and its modelled time.
struct StageProfile {
  std::string stage;
  simt::Counters counters;
  Modelled terms;      // summed over the launches
  double us = 0;       // modelled: the launches' times summed
  std::string bound;   // of its longest launch
};
struct Profile {
  Result result;  // of the counted run (checked like any other), on the heads emulated
  Problem problem;     // the problem modelled: result.problem unless sampled
  HeadSample sample;   // heads emulated, of the problem's
  std::vector<StageProfile> stages;
  double us = 0;            // modelled, all stages
  std::string bound;        // of the longest stage
  std::string bound_stage;  // its name
};

class Profiler {
 public:
  // Throws UsageError (exit code 2) when this build cannot profile or an option is wrong.
  explicit Profiler(const ProfileOptions& o);
  // The heads of p to emulate for the variants: all of them unless the emulation would take long
  // (or --emulated-heads says otherwise).
  HeadSample heads_to_emulate(const std::vector<const Variant*>& variants, const Problem& p) const;
  // Runs v once with the counters on, on `emulated` (the heads of `sample`, or p itself), and
  // prints what they say about p, stage by stage when `details`.
  const Profile& run(const Variant& v, const Problem& p, const HeadSample& sample, const Problem& emulated,
                     const DeviceInputs& in, const Checker& checker, bool details = true);
  // The same for any one checked execution of every head: `counted` runs it once (a backward
  // variant, say: backward_cli.cpp) and returns its Result, whose stages carry the launches' counters.
  const Profile& run(const std::function<Result()>& counted, bool details = true);
  // The modelled time of every variant profiled, and the speedups over the first variant; beside
  // them, the emulator's times of --emulator-times. When a step models slower than the one before
  // it, why: its bound, how much of the GPU its grid fills, its bank conflicts.
  void print_summary() const;
  // Modelled rows (kind = modelled) into the results CSV; the counters, per stage, into --counters-csv.
  void write_csv(const std::string& results_csv) const;
  const std::vector<Profile>& profiles() const { return profiles_; }
  const GpuSpec& gpu() const { return *gpu_; }
  const ProfileOptions& options() const { return o_; }

 private:
  const Profile& run(const std::function<Result()>& counted, const Problem* p, const HeadSample& sample,
                     const std::vector<const void*>& shared, bool details);
  ProfileOptions o_;
  const GpuSpec* gpu_;
  std::vector<Profile> profiles_;
};

// The problem the emulator runs for p: B = 1 and H = the heads emulated (p itself when not sampled).
Problem emulated_problem(const Problem& p, const HeadSample& s);

// The header of --counters-csv files (results/README.md).
extern const char* const kCountersCsvHeader;

}  // namespace attn
