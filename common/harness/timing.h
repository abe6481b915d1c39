// timing.h: CUDA events around the kernels of a variant, stage by stage.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

namespace attn {

// A variant launches its kernels through run(): each launch is checked, and between launches an
// event marks where one stage ends, so that multi-kernel chapters show a per-kernel breakdown.
class Stages {
 public:
  Stages();
  ~Stages();
  Stages(const Stages&) = delete;
  Stages& operator=(const Stages&) = delete;

  void run(const std::string& stage, const std::function<cudaError_t()>& launch);

  // Used by the harness around one execution of a variant.
  void begin();
  void end();
  // Stage names and milliseconds of the last execution (after end()).
  std::vector<std::pair<std::string, double>> times() const;

 private:
  cudaEvent_t event(size_t i);
  std::vector<cudaEvent_t> events_;
  std::vector<std::string> names_;
  size_t used_ = 0;
};

struct Timing {
  int reps = 0;
  double median_ms = 0, min_ms = 0;
  std::vector<std::pair<std::string, double>> stages;  // median per stage
};

// Runs `launch` `warmup` times, then `reps` times, each after `prepare` and after writing a buffer
// of twice the L2 size (so that no repetition finds the previous one's data in L2), neither of
// which is timed; returns the median and the minimum of the timed repetitions.
Timing time_variant(const std::function<void()>& prepare, const std::function<void(Stages&)>& launch, int warmup,
                    int reps);

}  // namespace attn
