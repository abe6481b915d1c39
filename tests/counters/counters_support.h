// counters_support.h: what the [counters] tests share.
#pragma once
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "simt/counters.h"

namespace counters_test {

// Zeroed device memory, optionally filled from a host vector.
template <class T>
class Buffer {
 public:
  explicit Buffer(size_t n) : n_(n) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemset(p_, 0, n * sizeof(T)) == cudaSuccess);
  }
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) {
    REQUIRE(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~Buffer() { cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* get() const { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    REQUIRE(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

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
