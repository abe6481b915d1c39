// runtime_api.cpp: the part of the CUDA runtime API that the harness uses, on host memory.
// The "device" is the emulator: device memory is host memory, a launch runs to completion before
// it returns, and events read the host clock (so they time the emulation, not a GPU).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "runtime_state.h"
#include "simt/cpu/counters_hooks.h"
#include "simt/cpu/launch.h"

namespace simt::detail {
namespace {
std::mutex g_mu;
cudaError_t g_last = cudaSuccess;
std::map<const void*, int> g_smem_opt_in;

size_t physical_bytes(int name) { return static_cast<size_t>(sysconf(name)) * static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
int worker_count() {
  const Schedule s = schedule();
  return s.workers > 0 ? s.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
}  // namespace

cudaError_t record_error(cudaError_t e) {
  std::lock_guard<std::mutex> g(g_mu);
  g_last = e;
  return e;
}
size_t max_dynamic_smem(const void* kernel) {
  std::lock_guard<std::mutex> g(g_mu);
  const auto it = g_smem_opt_in.find(kernel);
  return static_cast<size_t>(it == g_smem_opt_in.end() ? kMaxDynamicSmemDefault : it->second);
}
}  // namespace simt::detail

using simt::detail::record_error;

struct CUevent_st {
  std::chrono::steady_clock::time_point t;
  bool recorded = false;
};
struct CUstream_st {};

extern "C" {

// Exact sizes (no rounding up), so that AddressSanitizer sees a kernel's access one past the end.
cudaError_t cudaMalloc(void** p, size_t n) {
  if (posix_memalign(p, 256, n ? n : 1) != 0) {
    *p = nullptr;
    return record_error(cudaErrorMemoryAllocation);
  }
  simt::detail::counters::allocated(*p, n);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  simt::detail::counters::freed(p);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t n) { return cudaMalloc(p, n); }
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* dst, int v, size_t n) {
  std::memset(dst, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int v, size_t n, cudaStream_t) { return cudaMemset(dst, v, n); }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = simt::detail::physical_bytes(_SC_AVPHYS_PAGES);
  *total_bytes = simt::detail::physical_bytes(_SC_PHYS_PAGES);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaPeekAtLastError(); }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaPeekAtLastError(); }
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : record_error(cudaErrorInvalidDevice); }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceReset(void) {
  std::lock_guard<std::mutex> g(simt::detail::g_mu);
  simt::detail::g_last = cudaSuccess;
  simt::detail::g_smem_opt_in.clear();
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 0;  // no driver: the emulator runs without one
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

// An "emulated device" shaped like an sm_90 part, with one multiprocessor per worker thread.
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int device) {
  if (device != 0) return record_error(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "CPU emulation (simt)");
  p->totalGlobalMem = simt::detail::physical_bytes(_SC_PHYS_PAGES);
  p->sharedMemPerBlock = simt::detail::kMaxDynamicSmemDefault;
  p->sharedMemPerBlockOptin = simt::detail::kMaxDynamicSmemOptIn;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = simt::detail::worker_count();
  p->maxThreadsPerMultiProcessor = 2048;
  p->l2CacheSize = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (device != 0) return record_error(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = simt::detail::kMaxDynamicSmemOptIn; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = simt::detail::kMaxDynamicSmemDefault; break;
    case cudaDevAttrMultiProcessorCount: *value = simt::detail::worker_count(); break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    default: *value = 0; break;  // clocks, L2, bus width: the CPU has no such figures
  }
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  std::lock_guard<std::mutex> g(simt::detail::g_mu);
  const cudaError_t e = simt::detail::g_last;
  simt::detail::g_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) {
  std::lock_guard<std::mutex> g(simt::detail::g_mu);
  return simt::detail::g_last;
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    default: return "cudaErrorUnknown";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return "unspecified launch failure (see the simt message above)";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    default: return "unknown error";
  }
}

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > simt::detail::kMaxDynamicSmemOptIn) return record_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> g(simt::detail::g_mu);
    simt::detail::g_smem_opt_in[func] = value;
  }
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->t = std::chrono::steady_clock::now();
  e->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!a->recorded || !b->recorded) return record_error(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}

}  // extern "C"
