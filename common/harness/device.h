// device.h: the device the kernels run on, and device memory.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "dtype.h"
#include "gpus/gpus.h"

namespace attn {

struct DeviceInfo {
  bool emulated = false;  // the cpu backend
  std::string name;       // "NVIDIA H100 80GB HBM3", or the emulator's
  const gpus::Gpu* gpu = nullptr;  // emulated: the GPU of common/gpus/gpus.h the emulator stands for
  int cc_major = 0, cc_minor = 0, sms = 0;
  int driver = 0, runtime = 0;  // CUDA versions of the driver API and the runtime: 12080 = 12.8
  std::string driver_version;   // the driver's own version (nvidia-smi's "570.86.15"), or "none"
  size_t total_bytes = 0, l2_bytes = 0;
  int smem_optin = 0;  // the shared memory one block may use, static and dynamic, with the opt-in
  std::string summary() const;  // one line for the tables
  int cc() const { return 10 * cc_major + cc_minor; }
  // "the NVIDIA GeForce RTX 4090 (sm_89)", "the emulated GeForce RTX 4090 (sm_89)": for messages.
  std::string target() const;
  // Why this build has no code this device runs ("" when it has): the kernels are compiled for the
  // architectures of CMAKE_CUDA_ARCHITECTURES (sm90a: for sm_90a alone). Always "" when emulated.
  std::string lacks_code(bool sm90a = false) const;
  // The device the emulator would be standing for `g` (its limits; the rest as this machine's).
  static DeviceInfo emulating(const gpus::Gpu& g);
};
// The device at hand; on the cpu backend, the emulator standing for the GPU it is set to (SIMT_GPU,
// --gpu; simt::gpu()), read again when that changes.
const DeviceInfo& device();
// The same, or nullptr on a gpu build where no GPU can be used (what can run is then not known).
const DeviceInfo* device_if_any();
// cpu backend: the emulator stands for g from now on (simt::set_gpu), and device() says so. On the
// gpu backend a UsageError: the GPU at hand is the one.
void emulate_gpu(const gpus::Gpu& g);
std::string version_string(int cuda_version);  // 12080 -> "12.8"
size_t free_device_bytes();
// Host memory this process can still take: the least of the memory the kernel reports available
// (MemAvailable), what a cgroup's memory.max leaves, and what the address-space limit (ulimit -v)
// leaves beyond `address_space_extra` bytes of mappings that cost no memory (the emulator's fiber
// stacks). `limit` names the smallest.
struct HostMemory {
  double bytes = 0;
  std::string limit;
};
HostMemory available_host_memory(double address_space_extra);
// GB/s of a device-to-device copy (bytes read + bytes written), measured once per process: what
// a memory-bound kernel can hope for. 0 on the CPU backend.
double copy_bandwidth_gbps();

// Throws CudaError naming `what` unless e is cudaSuccess.
void check(cudaError_t e, const std::string& what);
// After a CUDA error: whether it was sticky, i.e. the context is lost and every later call fails
// (a kernel that faulted on a GPU). Never on the CPU emulator, whose errors are the launch's own.
bool context_lost();

// Device memory, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t bytes);
  void download(void* dst, size_t bytes) const;

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// A tensor of floats uploaded as the dtype's values (rounded), and downloaded back as floats.
void upload_as(DType t, DeviceBuffer& dst, const std::vector<float>& src);
std::vector<float> download_as(DType t, const DeviceBuffer& src, size_t n);

// "1.50 GiB", "512 B"
std::string human_bytes(double bytes);

}  // namespace attn
