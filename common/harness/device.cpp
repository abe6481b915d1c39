#include "device.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "errors.h"
#include "profile.h"
#if FLASHSTEPS_GPU
#include "simt/gpu_presence.h"
#else
#include "simt/cpu/launch.h"  // simt::gpu(): the GPU the emulator stands for
#endif

namespace attn {

std::string version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string DeviceInfo::summary() const {
  char buf[320];
  if (emulated) {
    std::snprintf(buf, sizeof buf, "%s of the %s's limits (%s; --gpu), %d worker thread(s): timings are not GPU timings",
                  name.c_str(), gpu ? gpu->name : "?", gpu ? gpu->arch().c_str() : "?", sms);
  } else {
    std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %s), driver %s (CUDA %s), CUDA runtime %s", name.c_str(),
                  cc_major, cc_minor, sms, human_bytes(static_cast<double>(total_bytes)).c_str(), driver_version.c_str(),
                  version_string(driver).c_str(), version_string(runtime).c_str());
  }
  return buf;
}

namespace {
// The CUDA runtime knows the driver's API version only; the driver's own version string is what
// results are usually labelled with, and nvidia-smi prints it.
std::string nvidia_smi_driver() {
  FILE* f = popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null", "r");
  if (!f) return "";
  char buf[64] = {};
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  pclose(f);
  std::string v = got ? buf : "";
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}
}  // namespace

std::string DeviceInfo::target() const {
  const std::string arch = "sm_" + std::to_string(cc());
  if (emulated) return std::string("the emulated ") + (gpu ? gpu->name : name.c_str()) + " (" + arch + ")";
  return "the " + name + " (" + arch + ")";
}

namespace {
// "80,90-real,90a" from CMAKE_CUDA_ARCHITECTURES (common/CMakeLists.txt), on the gpu backend.
#ifndef FLASHSTEPS_CUDA_ARCHS
#define FLASHSTEPS_CUDA_ARCHS ""
#endif
struct Arch {
  int cc;
  bool real, virt;
};
std::vector<Arch> build_archs() {
  std::vector<Arch> out;
  std::istringstream list(FLASHSTEPS_CUDA_ARCHS);
  for (std::string item; std::getline(list, item, ',');) {
    if (item.empty()) continue;
    Arch a{std::atoi(item.c_str()), true, true};
    if (item.find("-real") != std::string::npos) a.virt = false;
    if (item.find("-virtual") != std::string::npos) a.real = false;
    if (item.find('a') != std::string::npos || item.find('f') != std::string::npos) a.virt = false;  // 90a: that GPU only
    if (a.cc > 0) out.push_back(a);
  }
  return out;
}
}  // namespace

std::string DeviceInfo::lacks_code(bool sm90a) const {
  if (emulated) return "";
  const std::string arch = "sm_" + std::to_string(cc());
  if (sm90a) return cc() == 90 ? "" : "its code is built for sm_90a alone, and " + target() + " is not an sm_90 GPU";
  const std::vector<Arch> archs = build_archs();
  if (archs.empty()) return "";  // not known: the launch will tell
  std::string built;
  for (const Arch& a : archs) {
    // SASS runs on its own major generation from its minor on; PTX is compiled at load for newer GPUs.
    if ((a.real && a.cc / 10 == cc() / 10 && a.cc <= cc()) || (a.virt && a.cc <= cc())) return "";
    built += (built.empty() ? "sm_" : ", sm_") + std::to_string(a.cc);
  }
  return "this build has no code for " + target() + " (it is built for " + built +
         "): configure with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(cc()) + " (or native) and build again";
}

DeviceInfo DeviceInfo::emulating(const gpus::Gpu& g) {
  DeviceInfo d;
  d.emulated = true;
  d.name = "CPU emulation (simt)";
  d.gpu = &g;
  d.cc_major = g.cc_major;
  d.cc_minor = g.cc_minor;
  d.smem_optin = g.smem_optin_bytes;
  d.sms = 1;
  d.driver_version = "none";
  return d;
}

namespace {
DeviceInfo read_device() {
    DeviceInfo d;
#if FLASHSTEPS_GPU
    if (const simt::GpuPresence g = simt::gpu_presence(); !g.usable)
      throw CudaError(g.absent ? g.why + ": this build is for the gpu backend (configure with -DFLASHSTEPS_BACKEND=cpu "
                                          "to run on the CPU)"
                               : g.why);
#endif
    cudaDeviceProp p;
    check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
    d.emulated = !FLASHSTEPS_GPU;
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sms = p.multiProcessorCount;
    d.total_bytes = p.totalGlobalMem;
    d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
    d.smem_optin = static_cast<int>(p.sharedMemPerBlockOptin);
    cudaDriverGetVersion(&d.driver);
    cudaRuntimeGetVersion(&d.runtime);
    d.driver_version = d.emulated ? "none" : nvidia_smi_driver();
    if (d.driver_version.empty()) d.driver_version = "unknown";
#if !FLASHSTEPS_GPU
    d.gpu = &simt::gpu();
#endif
    return d;
}
}  // namespace

const DeviceInfo& device() {
  static DeviceInfo info = read_device();
#if !FLASHSTEPS_GPU
  if (info.gpu != &simt::gpu()) info = read_device();  // the emulator was set to another GPU
#endif
  return info;
}

const DeviceInfo* device_if_any() {
  try {
    return &device();
  } catch (const CudaError&) {
    return nullptr;
  }
}

#if !FLASHSTEPS_GPU
namespace {
// The emulator holds every launch to the registers x threads of the GPU it stands for, with the
// registers this build's SASS data gives for that GPU's architecture (profile.h's own_registers).
const bool g_registers_checked = (simt::set_register_source(own_registers), true);
}  // namespace
#endif

void emulate_gpu(const gpus::Gpu& g) {
#if FLASHSTEPS_GPU
  throw UsageError(std::string("--gpu ") + g.key + " chooses the GPU the CPU emulator stands for; this build runs on " +
                   device().target() + " itself");
#else
  simt::set_gpu(g);
#endif
}

size_t free_device_bytes() {
  size_t free_b = 0, total = 0;
  check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
  return free_b;
}

namespace {
// The number after `key` in a "key value" file such as /proc/meminfo (kB there), or -1.
double field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      std::istringstream rest(line.substr(key.size()));
      double v = -1;
      rest >> v;
      return v;
    }
  return -1;
}
double file_number(const char* path) {  // a file holding one number ("max": none)
  std::ifstream in(path);
  double v = -1;
  return in >> v ? v : -1;
}
}  // namespace

HostMemory available_host_memory(double address_space_extra) {
  HostMemory m;
  const double avail_kb = field("/proc/meminfo", "MemAvailable:");
  m.bytes = avail_kb >= 0 ? avail_kb * 1024
                          : static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  m.limit = "memory available on this machine";
  const double cg_max = file_number("/sys/fs/cgroup/memory.max"), cg_now = file_number("/sys/fs/cgroup/memory.current");
  if (cg_max >= 0 && cg_now >= 0 && cg_max - cg_now < m.bytes)
    m.bytes = std::max(0.0, cg_max - cg_now), m.limit = "memory left under the cgroup's memory.max";
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const double used = std::max(0.0, field("/proc/self/status", "VmSize:")) * 1024;
    const double left = std::max(0.0, static_cast<double>(as.rlim_cur) - used - address_space_extra);
    if (left < m.bytes) {
      m.bytes = left;
      m.limit = "address space left under ulimit -v";
      if (address_space_extra > 0) m.limit += " once the emulator has mapped its stacks (" + human_bytes(address_space_extra) + ")";
    }
  }
  return m;
}

double copy_bandwidth_gbps() {
  static const double gbps = [] {
    if (device().emulated) return 0.0;
    const size_t bytes = std::min<size_t>(size_t{512} << 20, free_device_bytes() / 4);
    DeviceBuffer a(bytes), b(bytes);
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    const int reps = 10;
    for (int i = 0; i < 2; ++i) check(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice), "copy");
    check(cudaEventRecord(start), "cudaEventRecord");
    for (int i = 0; i < reps; ++i) check(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice), "copy");
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "copy");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 2.0 * static_cast<double>(bytes) * reps / (ms * 1e6);
  }();
  return gbps;
}

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw CudaError(what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}

bool context_lost() {
  if (device().emulated) return false;
  cudaGetLastError();  // clears an error that is not sticky; a sticky one stays
  return cudaDeviceSynchronize() != cudaSuccess || cudaPeekAtLastError() != cudaSuccess;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  const cudaError_t e = cudaMalloc(&p_, bytes ? bytes : 1);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    p_ = nullptr;
    throw OutOfMemory("out of memory: " + std::string(device().emulated ? "" : "device ") + "memory for a buffer of " +
                      human_bytes(static_cast<double>(bytes)) + " could not be allocated; try a smaller problem (-n, -b, -H)");
  }
  check(e, "cudaMalloc of " + human_bytes(static_cast<double>(bytes)));
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_, bytes_ = o.bytes_;
    o.p_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}
void DeviceBuffer::upload(const void* src, size_t bytes) { check(cudaMemcpy(p_, src, bytes, cudaMemcpyHostToDevice), "upload"); }
void DeviceBuffer::download(void* dst, size_t bytes) const {
  check(cudaMemcpy(dst, p_, bytes, cudaMemcpyDeviceToHost), "download");
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

void upload_as(DType t, DeviceBuffer& dst, const std::vector<float>& src) {
  std::vector<unsigned char> bytes(src.size() * dtype_size(t));
  encode(t, src.data(), bytes.data(), src.size());
  dst.upload(bytes.data(), bytes.size());
}

std::vector<float> download_as(DType t, const DeviceBuffer& src, size_t n) {
  std::vector<unsigned char> bytes(n * dtype_size(t));
  src.download(bytes.data(), bytes.size());
  std::vector<float> out(n);
  decode(t, bytes.data(), out.data(), n);
  return out;
}

}  // namespace attn
