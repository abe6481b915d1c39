// timing.h: CUDA events around the kernels of a variant, stage by stage.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/params.h"
#include "simt/counters.h"

namespace attn {

// A variant launches its kernels through run(): each launch is checked, and between launches an
// event marks where one stage ends, so that multi-kernel chapters show a per-kernel breakdown.
class Stages {
 public:
  Stages();
  ~Stages();
  Stages(const Stages&) = delete;
  Stages& operator=(const Stages&) = delete;

  // `bytes`: what the stage moves to and from device memory by the variant's cost model (0 if
  // not modelled), so that the breakdown can show each kernel's GB/s. per_head = false: the
  // stage's work is the same whatever B and H (chapter 10's mask written once for every head), so
  // a profile that emulates some of the heads does not scale its counts up to all of them.
  // as_mask: the stage's kernels take the problem's pattern as an attn_mask of this kind, whatever
  // the problem names (chapter 10's step a): the profile models them on that mask's path.
  void run(const std::string& stage, const std::function<cudaError_t()>& launch, double bytes = 0, bool per_head = true,
           MaskKind as_mask = MaskKind::none);

  // Used by the harness around one execution of a variant.
  void begin();
  void end();
  struct Time {
    std::string stage;
    double ms, bytes;
    std::vector<simt::LaunchCounters> counters;  // its launches', while the counters count (simt/counters.h)
    bool per_head = true;
    MaskKind as_mask = MaskKind::none;
  };
  std::vector<Time> times() const;  // of the last execution (after end())

 private:
  cudaEvent_t event(size_t i);
  std::vector<cudaEvent_t> events_;
  std::vector<std::string> names_;
  std::vector<double> bytes_;
  std::vector<bool> per_head_;
  std::vector<MaskKind> as_mask_;
  std::vector<std::vector<simt::LaunchCounters>> counters_;
  size_t used_ = 0;
};

struct Timing {
  int reps = 0;
  double median_ms = 0, min_ms = 0;
  std::vector<Stages::Time> stages;  // median per stage
};

// Runs `launch` `warmup` times, then `reps` times, each after `prepare` and after writing a buffer
// of twice the L2 size (so that no repetition finds the previous one's data in L2), neither of
// which is timed; returns the median and the minimum of the timed repetitions.
Timing time_variant(const std::function<void()>& prepare, const std::function<void(Stages&)>& launch, int warmup,
                    int reps);
// The Timing of several timings of one repetition each (taken in turns with other variants).
Timing combine_repetitions(const std::vector<Timing>& each);

}  // namespace attn
