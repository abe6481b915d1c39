// profile.h: `flashsteps profile` and `--profile`: what the emulator's counters say about a
// variant, stage by stage (simt/counters.h), and the time a GPU would take by the model of
// common/model. Only a counters build counts (cmake -DFLASHSTEPS_COUNTERS=ON); elsewhere asking
// for a profile is refused before any work, with the command that configures one. A problem too
// large to emulate whole is modelled from a few of its heads (model/sampling.h).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/sampling.h"
#include "runner.h"

// Declared, not included: CLI11 is a header library that costs every translation unit including
// it several seconds, and only the command lines need it (profile.cpp, cli.cpp).
namespace CLI {
class App;
}

namespace attn {

struct ProfileOptions {
  bool on = false;
  int sample_blocks = 1;
  long long emulated_heads = 0;  // 0: chosen by the problem's size
  std::string row_groups = "auto";  // auto, always (when it can), never: extrapolate from a few row groups
  std::string gpu;  // --gpu: a key of common/gpus/gpus.h, or "list"; empty: SIMT_GPU's, else the H100 SXM5
  std::string counters_csv;
  std::string emulator_times;  // a CSV of a plain build's run on the same problem
};
// --profile (when `flag`: `flashsteps profile` needs none), --sample-blocks, --emulated-heads,
// --row-groups, --gpu, --counters-csv, --emulator-times.
void add_profile_options(CLI::App& app, ProfileOptions& o, bool flag);
// --gpu, before any work: the emulator stands for that GPU from now on (its limits hold every
// launch; a variant that does not fit it is skipped with the reason), and the model too. Returns
// true after printing the table for `--gpu list` (the command then ends). A name not in the table,
// or --gpu on the gpu backend, is a UsageError.
bool apply_gpu_option(const ProfileOptions& o);
// After parsing, before any work: a UsageError for an option of --profile's given without it
// (`profiling`: --profile given, or `flashsteps profile`), an empty --gpu, or --counters-csv naming
// the results' --csv file (`csv`; "" when the command has none), which would mix two kinds of row.
void check_profile_options(const CLI::App& app, const ProfileOptions& o, bool profiling, const std::string& csv);
// A UsageError when the model has no rates for g (a row of common/gpus/gpus.h whose rates are zero:
// none is, today; the Profiler asks this of every GPU it models).
void require_rates(const gpus::Gpu& g);
// The registers per thread the compiler allotted `kernel` (named as the emulator names it) for g's
// own architecture, as this build knows them (model/sass.h): sm_90's committed rows unless an edit
// left them stale, the rows the counters build compiled again for an edit or for
// FLASHSTEPS_SASS_ARCHS (an sm_86/89 GPU runs sm_80's); 0 where only a stand-in's rows or none are
// at hand. The emulator's register source (simt::set_register_source, installed by device.cpp):
// registers x threads past the register file refuse a launch as that GPU would.
int own_registers(const std::string& kernel, const gpus::Gpu& g);

// The rows of the SASS data a problem's kernels take (find_sass): its is_causal, attn_mask,
// mask_mod and score mods by their names.
SassPath sass_path(const Problem& p);

// One stage's counters, summed over its launches, and its modelled time.
struct StageProfile {
  std::string stage;
  simt::Counters counters;
  Modelled terms;      // summed over the launches
  double us = 0;       // modelled: the launches' times summed
  std::string bound;   // of its longest launch
  std::string unknown_kernel;  // a kernel of the stage that the SASS data does not know ("" when none)
  // Each launch's counters and kernel, to model the same counts on another GPU (model/model.h).
  std::vector<simt::Counters> launches;
  std::vector<std::string> kernels;
  std::vector<std::vector<float>> work;  // each launch's blocks' (LaunchCounters::block_work), for the whole problem
  SassPath path;  // the problem's mask and score mods, which pick the kernels' rows in the SASS data
};
// What a profile emulates of a problem (model/sampling.h): every head or a few, every row or a
// few row groups.
struct SamplePlan {
  HeadSample heads;
  std::vector<int> rows;  // the Lq of each problem emulated (1, 2 (, 3) row groups); empty: Lq itself
  int degree = 0;         // of the polynomial through them: 1, or 2 for causal tile skipping
  int row_group = kRowGroup;  // the rows of a group (Variant::row_group)
  bool sampled() const { return heads.sampled() || !rows.empty(); }
  std::string describe(const Problem& p) const;  // "" when not sampled
};

struct Profile {
  Result result;  // of the counted runs (checked like any other), on what was emulated
  Problem problem;     // the problem modelled: result.problem unless sampled
  SamplePlan plan;
  std::vector<StageProfile> stages;
  double us = 0;            // modelled, all stages
  std::string bound;        // of the longest stage
  std::string bound_stage;  // its name
};

class Profiler {
 public:
  // Throws UsageError (exit code 2) when this build cannot profile or an option is wrong.
  explicit Profiler(const ProfileOptions& o);
  // What of p to emulate for v: all of it unless the emulation would take long (or
  // --emulated-heads, --row-groups say otherwise).
  SamplePlan plan(const Variant& v, const Problem& p) const;
  // Throws UsageError when v launches other kernels for the plan's problems than for p (a dry run
  // of each: no work), so that a profile that cannot be sampled is refused before it starts.
  void check_plan(const Variant& v, const Problem& p, const SamplePlan& plan) const;
  // Runs v with the counters on, once per problem the plan emulates (each checked against its fp64
  // reference, `checks` choosing which rows), and prints what the counts say about p, stage by
  // stage when `details`. Throws UsageError when the plan's problems cannot run.
  const Profile& run(const Variant& v, const Problem& p, const SamplePlan& plan, const RunOptions& checks,
                     bool details = true);
  // The same for any one checked execution: `counted` runs it once (a backward variant, say:
  // backward/profile.cpp) and returns its Result, whose stages carry the launches' counters, counted
  // as the whole problem's (Result::problem); `heads`: what of its heads it emulated, when a few.
  const Profile& run(const std::function<Result()>& counted, bool details = true, const HeadSample& heads = {});
  // How many of a problem's `heads` to emulate when one of them takes the emulator about
  // `seconds_per_head` seconds on the plain build (Variant::cpu_flops_per_second): --emulated-heads's
  // number, else all of them when that takes 20 s or less with the counters on, else as many as fit
  // in 20 s, at least one.
  long long heads_to_emulate(double seconds_per_head, long long heads) const;
  // The modelled time of every variant profiled, and the speedups over the first variant; beside
  // them, the emulator's times of --emulator-times. When a step models slower than the one before
  // it, why: its bound, how much of the GPU its grid fills, its bank conflicts.
  void print_summary() const;
  // Modelled rows (kind = modelled) into the results CSV; the counters, per stage, into --counters-csv.
  void write_csv(const std::string& results_csv) const;
  const std::vector<Profile>& profiles() const { return profiles_; }
  const gpus::Gpu& gpu() const { return *gpu_; }
  const ProfileOptions& options() const { return o_; }

 private:
  // The inputs and reference of a problem emulated, kept for the next variants (the last few).
  const Prepared& prepared(const Problem& p, const RunOptions& checks);
  // Models and prints the stages' counters (one per launch, each for the whole problem, with its
  // kernel's name; as_mask: Stages::Time's, per stage).
  const Profile& finish(Profile prof, const std::vector<std::string>& stages, const std::vector<MaskKind>& as_mask,
                        const std::vector<std::vector<simt::Counters>>& launches,
                        const std::vector<std::vector<std::string>>& kernels,
                        const std::vector<std::vector<std::vector<float>>>& work, bool details);
  ProfileOptions o_;
  const gpus::Gpu* gpu_;
  std::vector<Profile> profiles_;
  std::vector<std::pair<std::string, std::unique_ptr<Prepared>>> prepared_;
};

// For the commands whose profiles sample no rows (backward, decode): the profiler when --profile
// asks for one (refusing before any work), after refusing the forward's --row-groups, and
// --emulated-heads unless `heads` (backward: its profile emulates a few heads, backward/profile.cpp;
// decode chooses its own), with a sentence that names the command.
std::optional<Profiler> whole_problem_profiler(const ProfileOptions& o, const std::string& command, bool heads = false);

// The median of v on p from a results CSV this project wrote, among its rows of `kind` (emulated,
// measured, modelled): the last such row's, 0 when there is none.
double recorded_ms(const std::string& path, const std::string& kind, const Problem& p, const Variant& v);

// Counts a profile took, modelled again on g (the same counts on another GPU, without the latency
// floor, or without each block's fill and drain in it; with `first`, the kernels it holds as an
// earlier commit compiled them: find_sass): the launches' times summed, and the longest launch's
// time and bound.
struct Remodelled {
  double us = 0, longest_us = 0;
  std::string bound;
  double dram_read_bytes = 0;  // each sector once, and again where L2 lost it (the grid's order, a block's own re-reads)
};
Remodelled remodel(const StageProfile& s, const gpus::Gpu& g, bool latency = true, bool fill_drain = true,
                   const SassRows& first = {});
Remodelled remodel(const Profile& pr, const gpus::Gpu& g, bool latency = true, bool fill_drain = true,
                   const SassRows& first = {});

// The problems the emulator runs for p under a plan, one per run (p itself when not sampled).
std::vector<Problem> emulated_problems(const Problem& p, const SamplePlan& plan);

// The launches `run` makes ([stage][launch]: its kernel, grid, block and shared memory) from the
// emulator's dry run, which runs none of their blocks; empty outside a counters build.
std::vector<std::vector<simt::LaunchCounters>> dry_run(const std::function<void(Stages&)>& run);
// Every launch of v on p, so recorded.
std::vector<std::vector<simt::LaunchCounters>> dry_launches(const Variant& v, const Problem& p);

// The header of --counters-csv files (results/README.md).
extern const char* const kCountersCsvHeader;

}  // namespace attn
