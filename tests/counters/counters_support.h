// counters_support.h: what the [counters] tests share.
#pragma once
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "simt/counters.h"
#include "support.h"  // the emulator's tests': Device, for_each_schedule

namespace counters_test {

using simt_tests::Device;

// The counters of the launches `run` makes, summed; every k-th block sampled.
inline simt::Counters count(const std::function<cudaError_t()>& run, int sample_blocks = 1) {
  simt::counters::start({sample_blocks});
  const cudaError_t e = run();
  simt::counters::stop();
  REQUIRE(e == cudaSuccess);
  simt::Counters sum;
  for (const simt::LaunchCounters& l : simt::counters::take()) sum += l.counters;
  return sum;
}

}  // namespace counters_test
