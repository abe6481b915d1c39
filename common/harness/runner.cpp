#include "runner.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "errors.h"

namespace attn {

Checker::Checker(const Problem& p, const Inputs& in, const RunOptions& o)
    : p_(p), sel_(o.sample ? Selection::sample(p, 2e8, o.sample_rows, o.sample_heads) : Selection::all(p)),
      ref_(reference(p, in, sel_)) {
  if (p.dtype != DType::fp32) naive_ = naive_same_dtype(p, in, sel_);
}
Verdict Checker::check(const std::vector<float>& out, const std::vector<float>* lse) const {
  return compare(p_, sel_, out, ref_, naive_.empty() ? nullptr : &naive_, lse);
}

DeviceInputs::DeviceInputs(const Problem& p, const Inputs& in)
    : q(p.q_elems() * dtype_size(p.dtype)), k(p.kv_elems() * dtype_size(p.dtype)),
      v(p.kv_elems() * dtype_size(p.dtype)), mask(p.mask_bytes()) {
  std::vector<unsigned char> bytes(std::max(p.q_elems(), p.kv_elems()) * dtype_size(p.dtype));
  auto put = [&](DeviceBuffer& dst, const std::vector<float>& src) {
    encode(p.dtype, src.data(), bytes.data(), src.size());
    dst.upload(bytes.data(), src.size() * dtype_size(p.dtype));
  };
  put(q, in.q);
  put(k, in.k);
  put(v, in.v);
  if (p.mask == MaskKind::boolean) mask.upload(in.mask_bool.data(), p.mask_bytes());
  if (p.mask == MaskKind::additive) mask.upload(in.mask_add.data(), p.mask_bytes());
}

namespace {
size_t lse_bytes(const Variant& v, const Problem& p) { return v.writes_lse ? p.heads() * p.Lq * sizeof(float) : 0; }
std::string fmt_seconds(double s) {
  std::ostringstream o;
  o.precision(s < 10 ? 2 : 0);
  o << std::fixed << s << " s";
  return o.str();
}
}  // namespace

double bytes_needed(const Variant& v, const Problem& p) {
  return static_cast<double>(dtype_size(p.dtype)) * static_cast<double>(2 * p.q_elems() + 2 * p.kv_elems()) +
         static_cast<double>(p.mask_bytes()) + static_cast<double>(lse_bytes(v, p)) +
         static_cast<double>(v.workspace_bytes(p));
}

void check_runnable(const Variant& v, const Problem& p, const RunOptions& o) {
  if (const std::string why = v.unsupported(p); !why.empty()) throw UsageError(why);
  const double need = bytes_needed(v, p), free_b = static_cast<double>(free_device_bytes());
  if (need > free_b) {
    std::ostringstream s;
    s << "variant " << v.name << " needs " << human_bytes(need) << " (" << static_cast<long long>(need)
      << " bytes) of device memory for " << p.describe() << ", of which " << human_bytes(static_cast<double>(v.workspace_bytes(p)))
      << " are its own buffers; " << device().name << " has " << human_bytes(free_b) << " (" << static_cast<long long>(free_b)
      << " bytes) free";
    throw UsageError(s.str());
  }
  if (device().emulated && o.cpu_budget_s > 0) {
    // The emulator's time grows with the dense (query, key) pairs, masked or not.
    Problem dense = p;
    dense.causal = Causal::none;
    const double rate = v.cpu_flops_per_second * std::max(1, device().sms);
    const double seconds = dense.flops() / rate;
    if (seconds > o.cpu_budget_s) {
      const double shrink = std::sqrt(o.cpu_budget_s / seconds);
      const int lq = std::max(1, static_cast<int>(p.Lq * shrink) / 16 * 16), lk = std::max(1, static_cast<int>(p.Lk * shrink) / 16 * 16);
      std::ostringstream s;
      s << "the CPU emulation of variant " << v.name << " would take about " << fmt_seconds(seconds) << " for " << p.describe()
        << ", more than its budget of " << fmt_seconds(o.cpu_budget_s) << ": try --lq " << lq << " --lk " << lk
        << " (or raise --cpu-budget; 0 lifts it)";
      throw UsageError(s.str());
    }
  }
}

AttentionParams attention_params(const Problem& p, const DeviceInputs& in) {
  AttentionParams a{};
  a.q = in.q.get();
  a.k = in.k.get();
  a.v = in.v.get();
  a.dtype = p.dtype;
  a.B = p.B, a.H = p.H, a.Lq = p.Lq, a.Lk = p.Lk, a.d = p.d;
  a.scale = p.scale();
  a.causal = p.causal;
  a.mask_kind = p.mask;
  a.mask = p.mask == MaskKind::none ? nullptr : in.mask.get();
  a.mask_stride_h = p.mask_per_head ? static_cast<long long>(p.Lq) * p.Lk : 0;
  a.mask_stride_b = p.mask_per_head ? a.mask_stride_h * p.H : 0;
  return a;
}

Result run_variant(const Variant& v, const Problem& p, const DeviceInputs& in, const Checker& checker, const RunOptions& o) {
  Result r;
  r.variant = &v;
  r.problem = p;
  r.workspace = v.workspace_bytes(p);
  r.flops = p.flops();
  r.hbm_bytes = v.hbm_bytes ? v.hbm_bytes(p) : p.qkvo_bytes();
  if (v.plan) r.plan = v.plan(p);

  DeviceBuffer out(p.q_elems() * dtype_size(p.dtype)), lse(lse_bytes(v, p)), work(r.workspace);
  AttentionParams a = attention_params(p, in);
  a.o = out.get();
  a.workspace = r.workspace ? work.get() : nullptr;
  a.lse = v.writes_lse ? static_cast<float*>(lse.get()) : nullptr;

  // Every execution starts from poisoned outputs and scratch (0xFF bytes are NaN in fp32, fp16
  // and bf16): a kernel that leaves an element unwritten, or reads scratch it never wrote, fails.
  auto poison = [&] {
    check(cudaMemset(out.get(), 0xFF, out.bytes()), "poisoning O");
    if (lse.bytes()) check(cudaMemset(lse.get(), 0xFF, lse.bytes()), "poisoning lse");
    if (r.workspace) check(cudaMemset(work.get(), 0xFF, r.workspace), "poisoning the workspace");
  };
  auto launch = [&](Stages& st) { v.run(a, st); };
  r.timing = time_variant(poison, launch, o.reps > 0 ? o.warmup : 0, std::max(o.reps, 1));
  if (o.reps == 0) r.timing = Timing{};  // ran once, untimed
  std::vector<float> host(p.q_elems());
  {
    std::vector<unsigned char> bytes(out.bytes());
    out.download(bytes.data(), bytes.size());
    decode(p.dtype, bytes.data(), host.data(), host.size());
  }
  std::vector<float> host_lse;
  if (v.writes_lse) {
    host_lse.resize(p.heads() * p.Lq);
    lse.download(host_lse.data(), lse.bytes());
  }
  r.verdict = checker.check(host, v.writes_lse ? &host_lse : nullptr);
  return r;
}

}  // namespace attn
