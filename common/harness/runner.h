// runner.h: one variant on one problem: allocate, upload, launch, time, check.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compare.h"
#include "device.h"
#include "registry.h"

namespace attn {

struct RunOptions {
  int warmup = 1, reps = 10;     // timed repetitions (0: run once, untimed)
  bool sample = true;             // check a sample of the rows of large problems (see Selection)
  int sample_rows = 192, sample_heads = 4;
  double cpu_budget_s = 120;      // cpu backend: refuse problems the emulator would take longer on
};

// The reference of one problem, computed once for every variant that runs it.
class Checker {
 public:
  Checker(const Problem& p, const Inputs& in, const RunOptions& o);
  Verdict check(const std::vector<float>& out, const std::vector<float>* lse) const;
  const Selection& selection() const { return sel_; }

 private:
  Problem p_;
  Selection sel_;
  Expected ref_;
  std::vector<double> naive_;
};

// The inputs of a problem on the device, uploaded once for every variant.
struct DeviceInputs {
  DeviceBuffer q, k, v, mask, doc;  // doc: Problem::kernel_table (a mask_mod's table, ALiBi's given slopes)
  DeviceInputs(const Problem& p, const Inputs& in);
};

struct Result {
  const Variant* variant = nullptr;
  Problem problem;
  Verdict verdict;
  Timing timing;
  size_t workspace = 0;
  double flops = 0, hbm_bytes = 0;
  std::string plan;
  std::string error;  // the CUDA error that stopped the variant ("" when it ran): its row says FAILED
  double tflops() const { return timing.median_ms > 0 ? flops / (timing.median_ms * 1e9) : 0; }
  double gbps() const { return timing.median_ms > 0 ? hbm_bytes / (timing.median_ms * 1e6) : 0; }
};

// The inputs of a problem, made, checked against and uploaded: the Checker and the DeviceInputs,
// built from inputs that are freed once both exist (the host copies of Q, K, V are the largest
// host allocation of a run).
struct Prepared {
  Checker checker;
  DeviceInputs inputs;
  Prepared(const Problem& p, const RunOptions& o) : Prepared(p, o, Inputs::generate(p)) {}

 private:
  Prepared(const Problem& p, const RunOptions& o, const Inputs& in) : checker(p, in, o), inputs(p, in) {}
};

// The memory a run of v on p holds at its peak, counted from what runner.cpp allocates.
struct MemoryNeed {
  double device = 0;     // buffers the kernels use: Q, K, V, O, mask, lse, workspace, L2 flush
  double workspace = 0;  // of which the variant's own
  double host = 0;       // host memory at the host's peak: seeded inputs, reference, output read back
  double total = 0;      // cpu backend (device memory is host memory): the peak of both together
};
MemoryNeed memory_needed(const Variant& v, const Problem& p, const RunOptions& o);
// Throws UsageError when v cannot run p: unsupported dtype, head dim or feature; more memory
// than is free (device or host; naming both numbers); more time than the CPU budget (suggesting
// a size).
void check_runnable(const Variant& v, const Problem& p, const RunOptions& o);
// Seconds as the budget messages give them: "0.25 s", "137 s", and "0.0001 s" below a hundredth.
std::string fmt_seconds(double s);
// Address space that costs little memory but that an address-space limit (ulimit -v) counts,
// mapped once the emulator's kernels run (0 on the gpu backend): available_host_memory's extra.
double emulator_address_space();
// The kernels' view of a problem whose inputs are on the device: everything but the outputs
// (o, lse) and the workspace, which the caller owns.
AttentionParams attention_params(const Problem& p, const DeviceInputs& in);
// The same from the inputs' addresses (a dry run passes addresses no kernel block reads); table: the
// mask_mod's table and the user's ALiBi slopes on the device (Problem::kernel_table, as DeviceInputs::doc
// holds it), when it has either.
AttentionParams attention_params(const Problem& p, const void* q, const void* k, const void* v, const void* mask,
                                 const int* table = nullptr);
Result run_variant(const Variant& v, const Problem& p, const DeviceInputs& in, const Checker& checker,
                   const RunOptions& o);
// The variants, each timed o.reps times, in rounds: one timed repetition of every variant per
// round (each one's warm-up in the first). A machine whose load changes meanwhile then slows
// every variant alike and their ratios hold still, where one variant after the other would give
// one the busy seconds and another the quiet ones. One Result per variant, in order; a variant
// fails when any round fails its check. `round_done(r, rounds)` after each round.
// A variant whose launch fails (a CUDA error) keeps its Result, with the error, and leaves the
// later rounds; the others go on. When the error has lost the GPU's context (every later call
// would fail too), the rounds stop: the variants not yet run get that as their error, and
// context_lost() says so.
std::vector<Result> run_in_rounds(const std::vector<const Variant*>& variants, const Problem& p, const Prepared& in,
                                  const RunOptions& o, const std::function<void(int, int)>& round_done = {});

}  // namespace attn
