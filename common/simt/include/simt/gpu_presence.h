// simt/gpu_presence.h: whether the CUDA runtime can use a GPU here, and if not, whether that means
// "no GPU on this machine" (no NVIDIA driver, or no device: a gpu build's tests are then skipped)
// or a fault the user must fix (a driver older than this build's CUDA runtime, a broken install),
// which the runtime reports with the same cudaGetDeviceCount error as a missing driver.
#pragma once
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

namespace simt {

struct GpuPresence {
  bool usable = false;
  bool absent = false;  // nothing to use: no driver library, or no device
  std::string why;      // when not usable
};

inline GpuPresence gpu_presence() {
  GpuPresence g;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) {
    g.usable = true;
    return g;
  }
  cudaGetLastError();
  // Without the driver's library the runtime says "insufficient driver", as it does for an old one.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) driver = dlopen("libcuda.so.1", RTLD_LAZY);
  if (driver) dlclose(driver);
  g.absent = e == cudaSuccess || e == cudaErrorNoDevice || (e == cudaErrorInsufficientDriver && !driver);
  g.why = g.absent ? (driver ? "no CUDA device on this machine" : "no NVIDIA driver on this machine")
                   : std::string("the CUDA runtime cannot use this machine's GPU: ") + cudaGetErrorName(e) + " (" +
                         cudaGetErrorString(e) + ")" +
                         (e == cudaErrorInsufficientDriver
                              ? ": the NVIDIA driver is older than this build's CUDA runtime " +
                                    std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 100 / 10) +
                                    "; update the driver"
                              : "");
  return g;
}

}  // namespace simt
