// test_portability.cpp: every variant (forward, backward, decoding) on every GPU of
// common/gpus/gpus.h, on the CPU emulator standing for each (cpu backend). A variant declares the
// compute capability and the shared memory its kernels need (registry.h); these tests hold the
// declarations to what the kernels ask of the emulator, and the registry's refusals to what the
// emulated GPU refuses: a variant the registry lets through runs and passes, one it refuses fails
// there if run anyway, and the refusal names the GPU.
#include <catch2/catch.hpp>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backward_run.h"
#include "gpus/gpus.h"
#include "harness/decode/decode.h"
#include "harness/errors.h"
#include "harness/reference.h"
#include "harness/runner.h"
#include "simt/cpu/launch.h"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

// What a run of one variant on one problem asked of the GPU, and how it ended.
struct Outcome {
  long long smem = 0;           // the most shared memory (static and dynamic) one of its launches asked for
  bool unknown_static = false;  // a kernel whose static shared memory the emulator could not read
  bool pass = false;
  std::string error;            // the CUDA error that stopped it ("" when none)
};

// One variant on one problem: what the registry says of it on a device, what it declares, and a run.
struct Case {
  std::string what;
  std::function<std::string(const DeviceInfo&)> unsupported;
  std::function<size_t()> declared;
  std::function<bool()> run;  // true when the output passes its check
};

Outcome observe(const Case& c) {
  Outcome o;
  simt::set_launch_observer([&](const simt::LaunchRecord& r) {
    o.unknown_static |= r.static_smem < 0;
    o.smem = std::max(o.smem, static_cast<long long>(r.dynamic_smem) + std::max(0LL, r.static_smem));
  });
  try {
    o.pass = c.run();
  } catch (const CudaError& e) {
    o.error = e.what();
  }
  simt::set_launch_observer({});
  return o;
}

// The head dims every chapter's steps are built for, and the dtypes.
constexpr int kHeadDims[] = {32, 64, 80, 96, 128, 256};
constexpr DType kDtypes[] = {DType::fp32, DType::fp16, DType::bf16};

Problem small_problem(int d, DType t) {
  Problem p;
  p.B = 1, p.H = 1, p.Lq = 40, p.Lk = 70, p.d = d, p.dtype = t;
  p.validate();
  return p;
}

std::vector<Case> forward_cases() {
  std::vector<Case> out;
  for (const Variant& v : registry())
    for (int d : kHeadDims)
      for (DType t : kDtypes) {
        const Problem p = small_problem(d, t);
        out.push_back({v.name + " at d = " + std::to_string(d) + " in " + dtype_name(t),
                       [&v, p](const DeviceInfo& dev) { return v.unsupported(p, dev); },
                       [&v, p] { return v.smem_bytes(p); },
                       [&v, p] {
                         const RunOptions o = untimed();
                         const Inputs in = Inputs::generate(p);
                         const Checker checker(p, in, o);
                         const DeviceInputs dev(p, in);
                         return run_variant(v, p, dev, checker, o).verdict.pass;
                       }});
      }
  return out;
}

std::vector<Case> backward_cases() {
  std::vector<Case> out;
  for (const BackwardVariant& v : backward_registry())
    for (int d : kHeadDims)
      for (DType t : kDtypes) {
        const Problem p = small_problem(d, t);
        out.push_back({"backward " + v.info.name + " at d = " + std::to_string(d) + " in " + dtype_name(t),
                       [&v, p](const DeviceInfo& dev) { return v.info.unsupported(p, dev); },
                       [&v, p] { return v.info.smem_bytes(p); },
                       [&v, p] {
                         BackwardRun run(p, untimed());
                         run.reference_forward();
                         return run_backward(v, p, run.dev, run.checker, untimed()).row.verdict.pass;
                       }});
      }
  return out;
}

std::vector<Case> decode_cases() {
  std::vector<Case> out;
  for (const DecodeVariant& v : decode_registry())
    for (int d : kHeadDims)
      for (DType t : {DType::fp16, DType::bf16})
        for (int Lq : {1, 4}) {  // a block of 1 and of 8 query rows (GQA 4 x 2 new tokens)
          DecodeProblem p;
          p.B = 2, p.Hq = 8, p.Hkv = 2, p.d = d, p.dtype = t, p.Lq = Lq, p.cache_lens = {50, 9};
          p.paged = v.paged, p.page_size = 16;
          out.push_back({"decode " + v.info.name + " at d = " + std::to_string(d) + " in " + dtype_name(t) + ", " +
                             std::to_string(Lq) + " new tokens",
                         [&v, p](const DeviceInfo& dev) {
                           // The decode registry asks the device at hand: the test makes dev that one.
                           REQUIRE(dev.gpu == device().gpu);
                           return v.unsupported(p);
                         },
                         [&v, p] { return v.smem_bytes(p); },
                         [&v, p] {
                           const RunOptions o = untimed();
                           const DecodeInputs in = DecodeInputs::generate(p);
                           const DecodeChecker checker(p, in, o);
                           DecodeDevice dev(p, in);
                           return run_decode(v, p, dev, in, checker, o).verdict.pass;
                         }});
        }
  return out;
}

std::vector<Case> all_cases() {
  std::vector<Case> all = forward_cases();
  for (auto more : {backward_cases(), decode_cases()}) all.insert(all.end(), more.begin(), more.end());
  return all;
}

// The emulator stands for g while the guard lives, and prints no launch errors (they are expected).
struct Emulating {
  simt::Schedule before = simt::schedule();
  explicit Emulating(const gpus::Gpu& g) {
    simt::Schedule quiet = before;
    quiet.quiet = true;
    simt::set_schedule(quiet);
    simt::set_gpu(g);
  }
  ~Emulating() {
    simt::set_gpu(*gpus::find_gpu("h100"));
    simt::set_schedule(before);
  }
};

// The GPUs whose limits differ: one row of each (compute capability, shared memory, threads).
std::vector<const gpus::Gpu*> distinct_gpus() {
  std::vector<const gpus::Gpu*> out;
  for (const gpus::Gpu& g : gpus::kGpus)
    if (std::none_of(out.begin(), out.end(), [&](const gpus::Gpu* o) {
          return o->cc() == g.cc() && o->smem_optin_bytes == g.smem_optin_bytes &&
                 o->max_threads_per_sm == g.max_threads_per_sm && o->max_blocks_per_sm == g.max_blocks_per_sm;
        }))
      out.push_back(&g);
  return out;
}

}  // namespace

TEST_CASE("every variant declares the shared memory its kernels ask for", "[portability]") {
  const Emulating h100(*gpus::find_gpu("h100"));
  int ran = 0;
  for (const Case& c : all_cases()) {
    if (!c.unsupported(device()).empty()) continue;
    const Outcome o = observe(c);
    INFO(c.what << ": " << o.error);
    CHECK(o.error.empty());
    CHECK(o.pass);
    CHECK_FALSE(o.unknown_static);
    CHECK(static_cast<long long>(c.declared()) == o.smem);
    ++ran;
  }
  CHECK(ran > 300);
}

TEST_CASE("on every GPU of the table, a variant runs and passes or is refused in a sentence naming the GPU",
          "[portability]") {
  std::vector<Case> cases = all_cases();
  // What runs on the H100: every refusal elsewhere is then the other GPU's doing.
  std::vector<bool> runs_on_h100;
  {
    const Emulating h100(*gpus::find_gpu("h100"));
    for (const Case& c : cases) runs_on_h100.push_back(c.unsupported(device()).empty());
  }
  for (const gpus::Gpu* g : distinct_gpus()) {
    if (g == gpus::find_gpu("h100")) continue;  // the test above
    const Emulating on(*g);
    int refused = 0, ran = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      if (!runs_on_h100[i] && g->cc() != 90) continue;
      const std::string why = cases[i].unsupported(device());
      INFO(g->name << ": " << cases[i].what << ": " << why);
      if (why.empty()) {
        const Outcome o = observe(cases[i]);
        INFO(o.error);
        CHECK(o.pass);
        ++ran;
      } else if (runs_on_h100[i]) {
        CHECK_THAT(why, Contains(g->name) && Contains(g->arch()));
        const Outcome o = observe(cases[i]);  // run anyway: the emulated GPU refuses it too
        CHECK_FALSE(o.pass);
        CHECK_FALSE(o.error.empty());
        ++refused;
      }
    }
    std::printf("%-18s %-7s %4d cases run and passed, %4d refused (and failing when run anyway)\n", g->name,
                g->arch().c_str(), ran, refused);
  }
}

TEST_CASE("a variant whose launch fails costs its row, not the run", "[portability]") {
  const Emulating t4(*gpus::find_gpu("t4"));
  // A good variant, one whose launch returns an error, and a copy of chapter 05's lean_loop that
  // claims the T4 can run it (it uses cp.async and mma.sync m16n8k16, which sm_75 lacks).
  const Variant* naive = find_variant("naive");
  REQUIRE(naive != nullptr);
  Variant refused = *naive;
  refused.name = "refused";
  refused.run = [](const AttentionParams&, Stages& st) { st.run("always refused", [] { return cudaErrorInvalidValue; }); };
  Variant lying = *find_variant("lean_loop");
  lying.name = "lying";
  lying.min_cc = 75;
  Problem p = small_problem(64, DType::fp16);
  REQUIRE(lying.unsupported(p).empty());
  RunOptions o;
  o.reps = 2, o.warmup = 0;
  const Prepared in(p, o);
  const std::vector<Result> r = run_in_rounds({naive, &refused, &lying, naive}, p, in, o);
  REQUIRE(r.size() == 4);
  CHECK(r[0].verdict.pass);
  CHECK(r[0].error.empty());
  CHECK_THAT(r[1].error, Contains("always refused") && Contains("cudaErrorInvalidValue"));
  CHECK_FALSE(r[1].verdict.pass);
  // The emulator's own diagnostic comes with the error: the instruction, and the GPU that lacks it.
  CHECK_THAT(r[2].error, Contains("cp.async") && Contains("sm_80") && Contains("Tesla T4"));
  CHECK(r[3].verdict.pass);
  CHECK(r[3].timing.reps == 2);  // the others ran every round
  CHECK_FALSE(context_lost());   // the emulator's errors are the launch's own
}
