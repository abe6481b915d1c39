// test_gpus.cpp: the emulator standing for a GPU of common/gpus/gpus.h (SIMT_GPU, simt::set_gpu):
// the runtime reports that GPU's properties, and its launches are held to its limits as the GPU
// would hold them: shared memory per block counting the kernel's static __shared__, sm_80's
// instructions, code built for sm_90a alone, registers x threads (cpu backend only).
#include <string>
#include <vector>

#include "gpus_kernels.h"
#include "support.h"

using namespace simt_tests;
using Catch::Matchers::Contains;

namespace {
// The emulator stands for `key` while the guard lives; launch errors are expected, not printed.
struct Standing {
  simt::Schedule before = simt::schedule();
  explicit Standing(const char* key) {
    simt::Schedule quiet = before;
    quiet.quiet = true;
    simt::set_schedule(quiet);
    simt::set_gpu(*gpus::find_gpu(key));
  }
  ~Standing() {
    simt::set_gpu(*gpus::find_gpu("h100"));
    simt::set_schedule(before);
  }
};
}  // namespace

TEST_CASE("the emulated device is the GPU the emulator stands for", "[simt][gpus]") {
  for (const gpus::Gpu& g : gpus::kGpus) {
    const Standing on(g.key);
    cudaDeviceProp p;
    REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
    INFO(g.name);
    CHECK(p.major == g.cc_major);
    CHECK(p.minor == g.cc_minor);
    CHECK(p.sharedMemPerBlockOptin == static_cast<size_t>(g.smem_optin_bytes));
    CHECK(p.maxThreadsPerMultiProcessor == g.max_threads_per_sm);
    int optin = 0;
    REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
    CHECK(optin == g.smem_optin_bytes);
  }
}

TEST_CASE("static __shared__ counts against the GPU's shared memory per block", "[simt][gpus]") {
  Device<float> out(32);
  long long seen_static = -2;
  simt::set_launch_observer([&](const simt::LaunchRecord& r) { seen_static = r.static_smem; });
  const size_t fixed = kStaticFloats * sizeof(float);
  {
    const Standing on("t4");  // 64 KB per block in all
    REQUIRE(launch_static_and_dynamic(8 * 1024, out.get()) == cudaSuccess);  // 48 KB: no opt-in needed
    CHECK(seen_static == static_cast<long long>(fixed));
    CHECK(out.host()[31] == 31.f);
    // 24 KB of dynamic beside 40 KB of static: 64 KB, the T4's limit, with the opt-in.
    CHECK(launch_static_and_dynamic(24 * 1024, out.get()) == cudaSuccess);
    // One float more is refused, and the message counts both kinds.
    CHECK(launch_static_and_dynamic(24 * 1024 + 4, out.get()) == cudaErrorInvalidValue);
    CHECK_THAT(simt::last_launch_error(), Contains("24580 bytes of dynamic and 40960 of static shared memory") &&
                                              Contains("Tesla T4 (sm_75)") && Contains("65536"));
  }
  {
    const Standing on("h100");
    CHECK(launch_static_and_dynamic(100 * 1024, out.get()) == cudaSuccess);
  }
  simt::set_launch_observer({});
}

TEST_CASE("an sm_80 instruction fails on an emulated GPU older than sm_80", "[simt][gpus]") {
  std::vector<float> in(128);
  for (int i = 0; i < 128; ++i) in[i] = static_cast<float>(i);
  Device<float> src(in), dst(128);
  {
    const Standing on("a100");
    REQUIRE(launch_cp_async(src.get(), dst.get()) == cudaSuccess);
    CHECK(dst.host() == in);
  }
  const Standing on("t4");
  CHECK(launch_cp_async(src.get(), dst.get()) == cudaErrorLaunchFailure);
  CHECK_THAT(simt::last_launch_error(),
             Contains("cp.async") && Contains("needs sm_80 or later") && Contains("the emulated Tesla T4 (sm_75)"));
}

TEST_CASE("a file built for sm_90a alone has no kernel image for any other GPU", "[simt][gpus]") {
  Device<float> out(32);
  for (const char* key : {"a100", "rtx4090", "b200", "rtx5090"}) {
    const Standing on(key);
    INFO(key);
    CHECK(launch_as_sm90a(out.get()) == cudaErrorNoKernelImageForDevice);
    CHECK_THAT(simt::last_launch_error(), Contains("built for sm_90a alone"));
  }
  const Standing on("h200");
  CHECK(launch_as_sm90a(out.get()) == cudaSuccess);
  CHECK(out.host()[0] == 1.f);
}

TEST_CASE("registers x threads past the register file refuse the launch, as the GPU does", "[simt][gpus]") {
  Device<float> out(1024);
  std::vector<std::string> asked;  // the kernels and GPUs the source was asked about
  int registers = 128;
  struct Source {  // none again when the test ends, however it ends (the lambda's captures die with it)
    ~Source() { simt::set_register_source({}); }
  } source;
  simt::set_register_source([&](const std::string& kernel, const gpus::Gpu& g) {
    asked.push_back(kernel + " on " + g.key);
    return kernel.find("write_one") != std::string::npos ? registers : 0;
  });
  {
    const Standing on("a100");
    // 128 registers: 4096 per warp; 16 warps fill the 65536 a block may have, 17 do not.
    CHECK(launch_write_one(512, out.get()) == cudaSuccess);
    CHECK(out.host()[511] == 1.f);
    REQUIRE_FALSE(asked.empty());
    CHECK_THAT(asked.back(), Contains("write_one(float*)") && Contains("on a100"));
    CHECK(launch_write_one(544, out.get()) == cudaErrorLaunchOutOfResources);
    CHECK(std::string(cudaGetErrorString(cudaErrorLaunchOutOfResources)) == "too many resources requested for launch");
    CHECK_THAT(simt::last_launch_error(), Contains("too many resources requested for launch") &&
                                              Contains("128 registers x 544 threads") && Contains("A100") &&
                                              Contains("(sm_80)"));
    // Allocated per warp, 256 at a time: 121 registers take 3872 per warp, allocated as 4096.
    registers = 121;
    CHECK(launch_write_one(544, out.get()) == cudaErrorLaunchOutOfResources);
    registers = 120;  // 3840 per warp: 17 warps take 65280
    CHECK(launch_write_one(544, out.get()) == cudaSuccess);
    registers = 0;  // not known: not checked
    CHECK(launch_write_one(1024, out.get()) == cudaSuccess);
  }
  simt::set_register_source({});
  const Standing on("a100");
  registers = 255;
  CHECK(launch_write_one(1024, out.get()) == cudaSuccess);  // no source: registers are not checked
}
