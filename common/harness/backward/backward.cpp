#include "harness/backward/backward.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "harness/errors.h"

namespace attn {

std::vector<BackwardVariant>& backward_registry() {
  static std::vector<BackwardVariant> r;
  return r;
}
RegisterBackward::RegisterBackward(BackwardVariant v) { backward_registry().push_back(std::move(v)); }
const BackwardVariant* find_backward(const std::string& name) {
  for (const BackwardVariant& v : backward_registry())
    if (v.info.name == name) return &v;
  return nullptr;
}

double backward_flops(const Problem& p) { return 2.5 * p.flops(); }

const Variant* fastest_forward(const Problem& p) {
  // Chapter 10's steps run plain and causal problems too, but are for mask_mods: without one, the
  // fastest forward is the chapters' before.
  auto runs = [&](const Variant& v) {
    return v.writes_lse && v.unsupported(p).empty() && (p.mod != ModKind::none || v.mask_mods.empty());
  };
  const std::vector<std::string> all = chapters();
  for (auto c = all.rbegin(); c != all.rend(); ++c) {
    const Variant* last = nullptr;
    for (const Variant& v : registry())
      if (v.chapter == *c && runs(v)) {
        if (v.best) return &v;
        last = &v;
      }
    if (last) return last;
  }
  return nullptr;
}

BackwardChecker::BackwardChecker(const Problem& p, const Inputs& in, const std::vector<float>& dout, const RunOptions& o)
    : p_(p),
      // Of a large problem, at most two heads: each costs the reference four products of Lq x Lk x d
      // in double (30 s a head at N = 16k, d = 128 on one core, arithmetic at 15 GFLOP/s), whatever
      // the rows sampled.
      sel_(o.sample ? GradSelection::sample(p, 2e8, o.sample_rows, std::min(o.sample_heads, 2)) : GradSelection::all(p)),
      ref_(reference_backward(p, in, dout, sel_)) {
  if (p.dtype != DType::fp32) naive_ = naive_backward_same_dtype(p, in, dout, sel_);
}

GradVerdict BackwardChecker::check(const std::vector<float>& dq, const std::vector<float>& dk,
                                   const std::vector<float>& dv) const {
  return compare_grads(p_, sel_, ref_, p_.dtype == DType::fp32 ? nullptr : &naive_, dq, dk, dv);
}

namespace {
size_t lse_bytes(const Problem& p) { return p.heads() * static_cast<size_t>(p.Lq) * sizeof(float); }
}  // namespace

BackwardInputs::BackwardInputs(const Problem& p, const Inputs& in, const std::vector<float>& d_out)
    : fwd(p, in), o(p.q_elems() * dtype_size(p.dtype)), lse(lse_bytes(p)), dout(p.q_elems() * dtype_size(p.dtype)) {
  upload_as(p.dtype, dout, d_out);
}

void BackwardInputs::set_forward(const Problem& p, const Expected& e) {
  if (e.o.size() != p.q_elems() || e.lse.size() != p.heads() * static_cast<size_t>(p.Lq))
    throw std::logic_error("set_forward needs the forward reference of every row (Selection::all)");
  std::vector<float> o_f(e.o.begin(), e.o.end()), lse_f(e.lse.begin(), e.lse.end());
  for (float& x : o_f) x = round_to(p.dtype, x);
  upload_as(p.dtype, o, o_f);
  lse.upload(lse_f.data(), lse_bytes(p));
}

void BackwardInputs::run_forward(const Variant& v, const Problem& p) {
  DeviceBuffer work(v.workspace_bytes(p));
  AttentionParams a = attention_params(p, fwd);
  a.o = o.get();
  a.lse = static_cast<float*>(lse.get());
  a.workspace = work.bytes() ? work.get() : nullptr;
  Stages st;
  st.begin();
  v.run(a, st);
  st.end();
}

double backward_bytes_needed(const BackwardVariant& v, const Problem& p) {
  const double t = static_cast<double>(dtype_size(p.dtype));
  return t * (4.0 * static_cast<double>(p.q_elems()) + 4.0 * static_cast<double>(p.kv_elems())) +  // Q O dO dQ, K V dK dV
         static_cast<double>(lse_bytes(p)) + static_cast<double>(p.mask_bytes()) +
         static_cast<double>(v.info.workspace_bytes(p));
}

double backward_hbm_bytes(const BackwardVariant& v, const Problem& p) {
  if (v.info.hbm_bytes) return v.info.hbm_bytes(p);
  const double t = static_cast<double>(dtype_size(p.dtype));
  return t * (4.0 * static_cast<double>(p.q_elems()) + 4.0 * static_cast<double>(p.kv_elems())) +
         static_cast<double>(lse_bytes(p));
}

double backward_emulation_seconds(const BackwardVariant& v, const Problem& p) {
  Problem dense = p;  // the emulator's time grows with the dense (query, key) pairs
  dense.causal = Causal::none;
  return backward_flops(dense) / (v.info.cpu_flops_per_second * std::max(1, device().sms));
}

void check_backward_runnable(const BackwardVariant& v, const Problem& p, const RunOptions& o) {
  if (const std::string why = v.info.unsupported(p); !why.empty()) throw UsageError(why);
  const double need = backward_bytes_needed(v, p), free_b = static_cast<double>(free_device_bytes());
  if (need > free_b) {
    std::ostringstream s;
    s << "variant " << v.info.name << " needs " << human_bytes(need) << " (" << static_cast<long long>(need)
      << " bytes) of device memory for " << p.describe() << ", of which "
      << human_bytes(static_cast<double>(v.info.workspace_bytes(p))) << " are its own buffers; " << device().name << " has "
      << human_bytes(free_b) << " (" << static_cast<long long>(free_b) << " bytes) free";
    throw UsageError(s.str());
  }
  if (device().emulated && o.cpu_budget_s > 0) {
    const int runs = o.reps > 0 ? o.warmup + o.reps : 1;
    const double seconds = backward_emulation_seconds(v, p) * runs;
    if (seconds > o.cpu_budget_s) {
      const double shrink = std::sqrt(o.cpu_budget_s / seconds);
      std::ostringstream s;
      s << "the CPU emulation of variant " << v.info.name << " would take about " << fmt_seconds(seconds) << " for "
        << p.describe() << " (" << runs << (runs == 1 ? " run" : " runs") << "), more than its budget of "
        << fmt_seconds(o.cpu_budget_s) << ": try --lq " << std::max(1, static_cast<int>(p.Lq * shrink) / 16 * 16) << " --lk "
        << std::max(1, static_cast<int>(p.Lk * shrink) / 16 * 16) << " (or raise --cpu-budget; 0 lifts it)";
      throw UsageError(s.str());
    }
  }
}

BackwardResult run_backward(const BackwardVariant& v, const Problem& p, const BackwardInputs& in,
                            const BackwardChecker& checker, const RunOptions& o, bool keep_outputs) {
  BackwardResult r;
  Result& row = r.row;
  row.variant = &v.info;
  row.problem = p;
  row.workspace = v.info.workspace_bytes(p);
  row.flops = backward_flops(p);
  row.hbm_bytes = backward_hbm_bytes(v, p);
  if (v.info.plan) row.plan = v.info.plan(p);
  r.atomics = v.atomics(p);
  r.flops_executed = v.flops_executed ? v.flops_executed(p) : row.flops;

  const size_t q_bytes = p.q_elems() * dtype_size(p.dtype), kv_bytes = p.kv_elems() * dtype_size(p.dtype);
  DeviceBuffer dq(q_bytes), dk(kv_bytes), dv(kv_bytes), work(row.workspace);
  BackwardParams a{};
  static_cast<AttentionParams&>(a) = attention_params(p, in.fwd);
  a.o = in.o.get();
  a.lse = static_cast<float*>(in.lse.get());
  a.workspace = row.workspace ? work.get() : nullptr;
  a.dout = in.dout.get();
  a.dq = dq.get();
  a.dk = dk.get();
  a.dv = dv.get();

  // Every execution starts from poisoned outputs and scratch (0xFF bytes are NaN in fp32, fp16 and
  // bf16): a gradient left unwritten, or an accumulator never zeroed, fails the check.
  auto poison = [&] {
    for (DeviceBuffer* b : {&dq, &dk, &dv}) check(cudaMemset(b->get(), 0xFF, b->bytes()), "poisoning the gradients");
    if (row.workspace) check(cudaMemset(work.get(), 0xFF, row.workspace), "poisoning the workspace");
  };
  auto launch = [&](Stages& st) { v.run(a, st); };
  row.timing = time_variant(poison, launch, o.reps > 0 ? o.warmup : 0, std::max(o.reps, 1));
  if (o.reps == 0) row.timing = Timing{};  // ran once, untimed

  std::vector<float> g_dq = download_as(p.dtype, dq, p.q_elems()), g_dk = download_as(p.dtype, dk, p.kv_elems()),
                     g_dv = download_as(p.dtype, dv, p.kv_elems());
  r.grads = checker.check(g_dq, g_dk, g_dv);
  Verdict& vd = row.verdict;
  vd.checked = r.grads.dq.checked + r.grads.dk.checked + r.grads.dv.checked;
  vd.nonfinite = r.grads.dq.nonfinite + r.grads.dk.nonfinite + r.grads.dv.nonfinite;
  vd.max_abs = r.grads.max_abs();
  vd.ref_max = std::max({r.grads.dq.ref_max, r.grads.dk.ref_max, r.grads.dv.ref_max});
  vd.max_rel = vd.ref_max > 0 ? vd.max_abs / vd.ref_max : vd.max_abs;
  vd.pass = r.grads.pass;
  vd.why = r.grads.why;
  if (keep_outputs) r.dq = std::move(g_dq), r.dk = std::move(g_dk), r.dv = std::move(g_dv);
  return r;
}

}  // namespace attn
