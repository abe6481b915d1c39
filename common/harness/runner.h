// runner.h: one variant on one problem: allocate, upload, launch, time, check.
#pragma once
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
  DeviceBuffer q, k, v, mask;
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
  double tflops() const { return timing.median_ms > 0 ? flops / (timing.median_ms * 1e9) : 0; }
  double gbps() const { return timing.median_ms > 0 ? hbm_bytes / (timing.median_ms * 1e6) : 0; }
};

// Device memory the problem needs with this variant: inputs, output, mask, lse, workspace.
double bytes_needed(const Variant& v, const Problem& p);
// Throws UsageError when v cannot run p: unsupported dtype, head dim or feature; more device
// memory than is free (naming both); more time than the CPU budget (suggesting a size).
void check_runnable(const Variant& v, const Problem& p, const RunOptions& o);
// The kernels' view of a problem whose inputs are on the device: everything but the outputs
// (o, lse) and the workspace, which the caller owns.
AttentionParams attention_params(const Problem& p, const DeviceInputs& in);
Result run_variant(const Variant& v, const Problem& p, const DeviceInputs& in, const Checker& checker,
                   const RunOptions& o);

}  // namespace attn
