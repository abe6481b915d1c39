// backward/backward.h: the backward pass's variants, in a registry of their own, and their runner.
//
// A backward variant is another operation than a forward one (inputs Q, K, V, O, L, dO; outputs
// dQ, dK, dV), so it stays out of the forward registry and of everything that loops over it (the
// tour, the benchmark runner, the forward sweep, the C interface). Chapter 07 registers its
// steps here from its variants.cpp; `flashsteps backward`, the chapter's binary and
// tests/test_backward.cpp iterate this list.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/backward/reference.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "kernels/backward_params.h"
#include "model/sampling.h"

namespace attn {

class Profiler;
struct Profile;

struct BackwardVariant {
  // What a forward Variant says of itself, reused as it is: chapter, name, description, dtypes,
  // head dims, causal, mask, max_heads, best, workspace_bytes, hbm_bytes (the backward's own
  // traffic), cpu_flops_per_second (of the backward's FLOPs), plan. Its `run` stays empty.
  Variant info;
  bool deterministic = false;  // dQ, dK and dV are bit-identical from run to run
  // Cost model beside info.hbm_bytes: the matrix-product FLOPs the variant executes (TFLOP/s
  // divides backward_flops, the convention's count, whatever a variant recomputes or skips), and
  // the fp32 atomic additions it makes to global memory.
  std::function<double(const Problem&)> flops_executed;
  std::function<double(const Problem&)> atomics = [](const Problem&) { return 0.0; };
  // Launches the kernels, through stages.run().
  std::function<void(const BackwardParams&, Stages&)> run;
};

std::vector<BackwardVariant>& backward_registry();
const BackwardVariant* find_backward(const std::string& name);
// At namespace scope in a chapter's variants.cpp:  static attn::RegisterBackward r({...});
struct RegisterBackward {
  explicit RegisterBackward(BackwardVariant v);
};

// The FLOP convention of the backward (FlashAttention's benchmarks, and this book's): 2.5 times
// the forward's, i.e. five products of 2 Lq Lk d (S recomputed, dP, dV, dQ, dK) on the visible
// (query, key) pairs only: with is_causal, what the mask removes is not counted.
double backward_flops(const Problem& p);

// The forward a backward run starts from: the best variant of the latest chapter that writes the
// log-sum-exp and runs p; failing that chapter's best, its last (most advanced) step that does.
// nullptr when no forward kernel runs p (then O and L come from the fp64 reference).
const Variant* fastest_forward(const Problem& p);

// The reference gradients of one problem, computed once for every variant that runs it.
class BackwardChecker {
 public:
  BackwardChecker(const Problem& p, const Inputs& in, const std::vector<float>& dout, const RunOptions& o);
  GradVerdict check(const std::vector<float>& dq, const std::vector<float>& dk, const std::vector<float>& dv) const;
  const GradSelection& selection() const { return sel_; }
  const ExpectedGrads& expected() const { return ref_; }

 private:
  Problem p_;
  GradSelection sel_;
  ExpectedGrads ref_;
  NaiveGrads naive_;  // fp16, bf16
};

// What the backward kernels read, on the device: Q, K, V, the mask, dO, and the forward's O and L,
// which come from a forward kernel (run_forward) or from the reference (set_forward).
struct BackwardInputs {
  DeviceInputs fwd;
  DeviceBuffer o, lse, dout;
  BackwardInputs(const Problem& p, const Inputs& in, const std::vector<float>& dout);
  // O rounded to the dtype and L to fp32, from the forward reference of every row (reference.h,
  // with Selection::all).
  void set_forward(const Problem& p, const Expected& every_row);
  // One untimed run of forward variant v into o and lse.
  void run_forward(const Variant& v, const Problem& p);
};

struct BackwardResult {
  Result row;  // row.variant = &info: printed and written to CSV as any other row
  GradVerdict grads;
  double atomics = 0, flops_executed = 0;
  std::vector<float> dq, dk, dv;  // the outputs, when run_backward was asked to keep them
};

// Device memory a run of v on p needs: Q, K, V, O, dO, mask, L, dQ, dK, dV and the workspace.
double backward_bytes_needed(const BackwardVariant& v, const Problem& p);
// DRAM bytes a run of v on p moves: its model's (info.hbm_bytes), or without one Q, K, V, O, dO
// and L read once and dQ, dK, dV written once.
double backward_hbm_bytes(const BackwardVariant& v, const Problem& p);
// Seconds one run of v on p takes in the CPU emulator of a plain build (info.cpu_flops_per_second
// per emulated SM): the estimate behind the CPU budget and a profile's head sample.
double backward_emulation_seconds(const BackwardVariant& v, const Problem& p);
// Throws UsageError when v cannot run p: unsupported dtype, head dim or feature; more device
// memory than is free (naming both); more time than the CPU budget (suggesting a size).
void check_backward_runnable(const BackwardVariant& v, const Problem& p, const RunOptions& o);
// Runs v with poisoned outputs and workspace (0xFF bytes: NaN), times it, checks dQ, dK, dV.
BackwardResult run_backward(const BackwardVariant& v, const Problem& p, const BackwardInputs& in,
                            const BackwardChecker& checker, const RunOptions& o, bool keep_outputs = false);

// A profile (backward/profile.cpp). What of p it emulates: every head, or where that would take long
// for the slowest of `variants`, the first few (Profiler::heads_to_emulate; --emulated-heads).
HeadSample backward_heads(const Profiler& profiler, const std::vector<const BackwardVariant*>& variants, const Problem& p);
// The problem the emulator runs for p under that sample: p, or its first heads.emulated heads.
Problem backward_emulated(const Problem& p, const HeadSample& heads);
// Runs v once with the counters on over `emulated` (p, or its first heads.emulated heads as
// emulated_problems makes them), whose inputs, forward and reference `dev` and `checker` hold, and
// models p: a sampled run's launches counted as the whole problem's (model/sampling.h's as_whole).
const Profile& profile_backward(Profiler& profiler, const BackwardVariant& v, const Problem& p, const HeadSample& heads,
                                const Problem& emulated, const BackwardInputs& dev, const BackwardChecker& checker,
                                const RunOptions& o, bool details = true);

}  // namespace attn
