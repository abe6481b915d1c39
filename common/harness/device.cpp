#include "device.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "errors.h"

namespace attn {

std::string version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string DeviceInfo::summary() const {
  char buf[256];
  if (emulated) {
    std::snprintf(buf, sizeof buf, "%s, %d worker thread(s): timings are not GPU timings", name.c_str(), sms);
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

const DeviceInfo& device() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      throw CudaError("no CUDA device: this build is for the gpu backend (configure with -DFLASHSTEPS_BACKEND=cpu to run on the CPU)");
    }
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
    return d;
  }();
  return info;
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
