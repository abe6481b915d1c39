// support.h: small helpers of the emulator's tests.
#pragma once
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#if !FLASHSTEPS_GPU
#include "simt/cpu/launch.h"
#endif

namespace simt_tests {

// Device memory holding a copy of a host vector, and back.
template <class T>
class Device {
 public:
  explicit Device(size_t n) : n_(n) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T) + 1) == cudaSuccess);
    REQUIRE(cudaMemset(p_, 0, n * sizeof(T)) == cudaSuccess);
  }
  explicit Device(const std::vector<T>& host) : Device(host.size()) {
    REQUIRE(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~Device() { cudaFree(p_); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
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

// Runs `check` once per schedule: on the CPU in every order (forward, reverse, shuffled) with one
// and with two worker threads; on the GPU once.
inline void for_each_schedule(const std::function<void()>& check) {
#if FLASHSTEPS_GPU
  check();
#else
  const simt::Schedule saved = simt::schedule();
  for (simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::shuffle})
    for (int workers : {1, 2}) {
      simt::Schedule s = saved;
      s.order = order;
      s.workers = workers;
      simt::set_schedule(s);
      INFO("schedule: order " << simt::order_name(order) << ", " << workers << " worker(s)");
      check();
    }
  simt::set_schedule(saved);
#endif
}

// Hopper's instructions (mbarrier transaction counts, TMA) need sm_90: false, with a warning,
// on an older GPU; always true on the CPU.
inline bool hopper_or_warn(const char* what) {
#if FLASHSTEPS_GPU
  cudaDeviceProp prop{};
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  if (prop.major != 9) {  // sm_90a's instructions (wgmma, setmaxnreg) load on sm_90 alone
    WARN("not run: " << what << " need sm_90");
    return false;
  }
#else
  (void)what;
#endif
  return true;
}

inline void require_ok(cudaError_t e) {
  INFO(cudaGetErrorName(e));
  REQUIRE(e == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

}  // namespace simt_tests
