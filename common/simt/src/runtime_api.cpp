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
#include "simt/counters.h"
#include "simt/cpu/counters_hooks.h"
#include "simt/cpu/launch.h"
#include "symbols.h"

namespace simt::detail {
namespace {
std::mutex g_mu;
cudaError_t g_last = cudaSuccess;
std::map<const void*, int> g_smem_opt_in;

const gpus::Gpu* gpu_from_environment() {
  const char* key = std::getenv("SIMT_GPU");
  if (!key || !*key) return gpus::find_gpu("h100");
  if (const gpus::Gpu* g = gpus::find_gpu(key)) return g;
  std::fprintf(stderr, "simt: SIMT_GPU=%s is not a GPU of common/gpus/gpus.h: use one of %s\n", key, gpus::gpu_keys().c_str());
  std::exit(2);
}
const gpus::Gpu*& gpu_ref() {
  static const gpus::Gpu* g = gpu_from_environment();
  return g;
}
long long static_smem(const void* kernel) { return std::max(0LL, static_smem_bytes(kernel)); }

size_t physical_bytes(int name) { return static_cast<size_t>(sysconf(name)) * static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
int worker_count() {
  const Schedule s = schedule();
  return s.workers > 0 ? s.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
// The SMs a launch's host code sees: the CPU's workers, but while the counters count, the GPU's
// they stand for, so that a grid sized by the SMs (chapter 09's persistent blocks) is the one the
// GPU would run, the grid the model times.
int reported_sms() {
#if SIMT_COUNTERS
  if (simt::counters::counting()) return simt::gpu().sms;
#endif
  return worker_count();
}
}  // namespace

cudaError_t record_error(cudaError_t e) {
  std::lock_guard<std::mutex> g(g_mu);
  g_last = e;
  return e;
}
size_t max_dynamic_smem(const void* kernel) {
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (const auto it = g_smem_opt_in.find(kernel); it != g_smem_opt_in.end()) return static_cast<size_t>(it->second);
  }
  return static_cast<size_t>(std::max(0LL, kSmemWithoutOptIn - static_smem(kernel)));
}
std::string emulated_gpu_name() {
  const gpus::Gpu& g = gpu();
  return std::string("the emulated ") + g.name + " (" + g.arch() + ")";
}

cudaError_t opt_in(const void* kernel, size_t smem, int arch_specific) {
  const gpus::Gpu& g = gpu();
  if (arch_specific && arch_specific != g.cc())
    return refuse_launch(cudaErrorNoKernelImageForDevice,
                         "no kernel image for " + emulated_gpu_name() + ": this kernel's file is built for sm_" +
                             std::to_string(arch_specific) + "a alone, which only sm_" + std::to_string(arch_specific) +
                             " GPUs run");
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e == cudaSuccess) return e;
  observe(LaunchRecord{kernel, {}, {}, smem, static_smem_bytes(kernel)});
  // Refused by gpus.h's rule (past the GPU's opt-in maximum), which says so in a sentence.
  return refuse_launch(e, gpus::refusal(g, {.threads = 1, .dynamic_smem = static_cast<long long>(smem),
                                            .static_smem = static_smem(kernel), .registers = 0}).why);
}

void require_arch(int cc, const char* instruction, const char* file, int line, bool specific) {
  if (specific ? gpu().cc() == cc : gpu().cc() >= cc) return;
  // kernel_error leaves this fiber without unwinding it: the message is formatted into the stack
  // first, so that no std::string is left alive (LeakSanitizer counts one as leaked).
  char what[256];
  std::snprintf(what, sizeof what, "%s needs sm_%d%s: %s has no such instruction (a GPU build for it traps here)",
                instruction, cc, specific ? "a" : " or later", emulated_gpu_name().c_str());
  kernel_error(file, line, "%s", what);
}
}  // namespace simt::detail

namespace simt {
const gpus::Gpu& gpu() {
  std::lock_guard<std::mutex> g(detail::g_mu);
  return *detail::gpu_ref();
}
void set_gpu(const gpus::Gpu& gpu) {
  std::lock_guard<std::mutex> g(detail::g_mu);
  detail::gpu_ref() = &gpu;
  detail::g_smem_opt_in.clear();  // a new device: no kernel has opted in on it
}
}  // namespace simt

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

// An "emulated device" with the compute capability and limits of the GPU it stands for
// (simt::gpu()), and one multiprocessor per worker thread.
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int device) {
  if (device != 0) return record_error(cudaErrorInvalidDevice);
  const gpus::Gpu& g = simt::gpu();
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "CPU emulation (simt)");
  p->totalGlobalMem = simt::detail::physical_bytes(_SC_PHYS_PAGES);
  p->sharedMemPerBlock = simt::detail::kSmemWithoutOptIn;
  p->sharedMemPerBlockOptin = static_cast<size_t>(g.smem_optin_bytes);
  p->sharedMemPerMultiprocessor = static_cast<size_t>(g.smem_per_sm_bytes);
  p->reservedSharedMemPerBlock = static_cast<size_t>(g.smem_reserved_bytes);
  p->regsPerBlock = g.registers_per_block;
  p->regsPerMultiprocessor = g.registers_per_sm;
  p->warpSize = 32;
  p->maxThreadsPerBlock = g.max_threads_per_block;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->major = g.cc_major;
  p->minor = g.cc_minor;
  p->multiProcessorCount = simt::detail::reported_sms();
  p->maxThreadsPerMultiProcessor = g.max_threads_per_sm;
  p->maxBlocksPerMultiProcessor = g.max_blocks_per_sm;
  p->l2CacheSize = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (device != 0) return record_error(cudaErrorInvalidDevice);
  const gpus::Gpu& g = simt::gpu();
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = g.smem_optin_bytes; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = simt::detail::kSmemWithoutOptIn; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = g.smem_per_sm_bytes; break;
    case cudaDevAttrMultiProcessorCount: *value = simt::detail::reported_sms(); break;
    case cudaDevAttrComputeCapabilityMajor: *value = g.cc_major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = g.cc_minor; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = g.max_threads_per_sm; break;
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
    case cudaErrorNoKernelImageForDevice: return "cudaErrorNoKernelImageForDevice";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
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
    case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    default: return "unknown error";
  }
}

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    // The GPU's per-block opt-in covers static and dynamic shared memory together (gpus.h's rule).
    if (value < 0 || gpus::refusal(simt::gpu(), {.threads = 1, .dynamic_smem = value, .static_smem = simt::detail::static_smem(func),
                                                 .registers = 0}).limit == gpus::Limit::shared_memory)
      return record_error(cudaErrorInvalidValue);
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
