#include "runner.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "errors.h"

namespace attn {
namespace {
// Problems up to this many multiply-adds (B*H*Lq*Lk*d) are checked on every row, even sampled.
constexpr double kCheckEveryRowUpTo = 2e8;
}  // namespace

Checker::Checker(const Problem& p, const Inputs& in, const RunOptions& o)
    : p_(p),
      sel_(o.sample ? Selection::sample(p, kCheckEveryRowUpTo, o.sample_rows, o.sample_heads) : Selection::all(p)),
      ref_(reference(p, in, sel_)) {
  if (p.dtype != DType::fp32) naive_ = naive_same_dtype(p, in, sel_);
}
Verdict Checker::check(const std::vector<float>& out, const std::vector<float>* lse) const {
  return compare(p_, sel_, out, ref_, naive_.empty() ? nullptr : &naive_, lse);
}

DeviceInputs::DeviceInputs(const Problem& p, const Inputs& in)
    : q(p.q_elems() * dtype_size(p.dtype)), k(p.kv_elems() * dtype_size(p.dtype)),
      v(p.kv_elems() * dtype_size(p.dtype)), mask(p.mask_bytes()), doc(p.kernel_table_size() * sizeof(int)) {
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
  // Problem::kernel_table from the inputs' rule table (built once, with the inputs).
  if (const std::vector<int> table = p.kernel_table(in.doc); !table.empty()) doc.upload(table.data(), table.size() * sizeof(int));
}

namespace {
size_t lse_bytes(const Variant& v, const Problem& p) { return v.writes_lse ? p.heads() * p.Lq * sizeof(float) : 0; }
}  // namespace

MemoryNeed memory_needed(const Variant& v, const Problem& p, const RunOptions& o) {
  // Every count in double: a problem refused here may hold more elements than a size_t product
  // would survive (Problem::validate keeps them below 2^56, so the casts below are exact).
  const double t = static_cast<double>(dtype_size(p.dtype)), heads = static_cast<double>(p.heads());
  const double kv_heads = static_cast<double>(p.B) * p.kv_heads();  // fewer than heads with grouped K/V heads
  const double q = heads * p.Lq * p.d, kv = kv_heads * p.Lk * p.d, mask = static_cast<double>(p.mask_bytes());
  const double lse_elems = heads * p.Lq;
  // The rows the Checker keeps (Selection::sample): every row of a small problem, else a sample.
  const bool all = !o.sample || heads * p.Lq * p.Lk * p.d <= kCheckEveryRowUpTo;
  const double sel_heads = all ? heads : std::min<double>(heads, std::max(1, o.sample_heads));
  const double sel_rows = all ? p.Lq : std::min<double>(p.Lq, std::max(2, o.sample_rows));
  const double sel = sel_heads * sel_rows;

  MemoryNeed m;
  m.workspace = static_cast<double>(v.workspace_bytes(p));
  const double d_in = t * (q + 2 * kv) + mask;                                  // DeviceInputs
  const double d_run = t * q + (v.writes_lse ? 4 * lse_elems : 0) + m.workspace  // run_variant: O, lse, scratch
                       + 2.0 * static_cast<double>(device().l2_bytes);           // and the L2 flush (timing.cpp)
  m.device = d_in + d_run;
  // Host, in the order a run allocates it (Prepared, then run_variant):
  const double inputs = 4 * (q + 2 * kv) + mask;  // Inputs: Q, K, V as float, the mask
  const double kept = 8 * sel * p.d * (p.dtype == DType::fp32 ? 1 : 2) + 16 * sel  // Expected (+ naive): o, lse, bound
                      + 8 * sel_heads + 4 * sel_rows;                               // the Selection
  // reference(): one head at a time, Q's rows, K, V, O and S (and the product's temporary) in double.
  const double reference = 8 * (2 * sel_rows * p.d + 2.0 * p.Lk * p.d + 2 * sel_rows * p.Lk);
  const double staging = t * std::max(q, kv);                 // DeviceInputs: one tensor's bytes
  const double read_back = 4 * q + t * q + 4 * lse_elems;    // run_variant: O as float and as bytes, lse
  const double host_phase[] = {inputs + kept + reference, inputs + kept + staging, kept + read_back};
  const double device_phase[] = {0, d_in, m.device};
  for (int i = 0; i < 3; ++i) {
    m.host = std::max(m.host, host_phase[i]);
    m.total = std::max(m.total, host_phase[i] + device_phase[i]);
  }
  return m;
}

namespace {
std::string bytes_and_count(double b) {
  std::ostringstream s;
  s.precision(0);
  s << human_bytes(b) << " (" << std::fixed << b << " bytes)";
  return s.str();
}
}  // namespace

std::string fmt_seconds(double s) {
  std::ostringstream o;
  if (s > 0 && s < 0.01) {  // a budget of 0.0001 s is not "0.00 s"
    o.precision(2);
    o << s << " s";
    return o.str();
  }
  o.precision(s < 10 ? 2 : 0);
  o << std::fixed << s << " s";
  return o.str();
}

// Per emulator worker a thread stack (8 MiB), a malloc arena (64 MiB) and a fiber stack of 256 KiB
// + a guard page for each GPU thread of a block (the chapters' blocks have at most 256 threads).
double emulator_address_space() {
  const double mib = 1024.0 * 1024;
  return device().emulated ? std::max(1, device().sms) * (8 * mib + 64 * mib + 256 * (256 + 4) * 1024.0) : 0;
}

void check_runnable(const Variant& v, const Problem& p, const RunOptions& o) {
  if (const std::string why = v.unsupported(p); !why.empty()) throw UsageError(why);
  const MemoryNeed need = memory_needed(v, p, o);
  // Of the memory available now, a run takes at most 90%: other processes and the page cache
  // move meanwhile, and a machine driven to its last page slows everyone on it.
  HostMemory host = available_host_memory(emulator_address_space());
  host.bytes *= 0.9;
  host.limit = "90% of the " + host.limit;
  const std::string parts = "the kernels' buffers " + human_bytes(need.device) + ", of which " +
                            human_bytes(need.workspace) + " the variant's own, and host copies, the reference and the "
                            "output read back " + human_bytes(need.host) + ", not all at once";
  if (device().emulated) {
    if (need.total > host.bytes)
      throw UsageError("variant " + v.name + " needs about " + bytes_and_count(need.total) + " of memory at its peak for " +
                       p.describe() + " (" + parts + "); " + host.limit + ": " + bytes_and_count(host.bytes));
  } else {
    const double free_b = static_cast<double>(free_device_bytes());
    if (need.device > free_b)
      throw UsageError("variant " + v.name + " needs " + bytes_and_count(need.device) + " of device memory for " +
                       p.describe() + ", of which " + human_bytes(need.workspace) + " are its own buffers; " +
                       device().name + " has " + bytes_and_count(free_b) + " free");
    if (need.host > host.bytes)
      throw UsageError("variant " + v.name + " needs about " + bytes_and_count(need.host) + " of host memory for " +
                       p.describe() + " (the inputs as float, the reference, the output read back); " + host.limit +
                       ": " + bytes_and_count(host.bytes));
  }
  if (device().emulated && o.cpu_budget_s > 0) {
    // The emulator's time grows with the dense (query, key) pairs, masked or not, and with the
    // number of executions (warm-up and timed repetitions).
    Problem dense = p;
    dense.causal = Causal::none;
    const double rate = v.cpu_flops_per_second * std::max(1, device().sms);
    const int runs = o.reps > 0 ? o.warmup + o.reps : 1;
    const double seconds = dense.flops() / rate * runs;
    if (seconds > o.cpu_budget_s) {
      const double shrink = std::sqrt(o.cpu_budget_s / seconds);
      const int lq = std::max(1, static_cast<int>(p.Lq * shrink) / 16 * 16), lk = std::max(1, static_cast<int>(p.Lk * shrink) / 16 * 16);
      std::ostringstream s;
      s << "the CPU emulation of variant " << v.name << " would take about " << fmt_seconds(seconds) << " for " << p.describe()
        << " (" << runs << (runs == 1 ? " run" : " runs") << "), more than its budget of " << fmt_seconds(o.cpu_budget_s)
        << ": try --lq " << lq << " --lk " << lk << (runs > 1 ? " or fewer --reps" : "")
        << " (or raise --cpu-budget; 0 lifts it)";
      throw UsageError(s.str());
    }
  }
}

AttentionParams attention_params(const Problem& p, const DeviceInputs& in) {
  return attention_params(p, in.q.get(), in.k.get(), in.v.get(), in.mask.get(), static_cast<const int*>(in.doc.get()));
}
AttentionParams attention_params(const Problem& p, const void* q, const void* k, const void* v, const void* mask,
                                 const int* table) {
  AttentionParams a{};
  a.q = q;
  a.k = k;
  a.v = v;
  a.dtype = p.dtype;
  a.B = p.B, a.H = p.H, a.Lq = p.Lq, a.Lk = p.Lk, a.d = p.d;
  a.scale = p.scale();
  a.causal = p.causal;
  a.mask_kind = p.mask;
  a.mask = p.mask == MaskKind::none ? nullptr : mask;
  a.mask_stride_h = p.mask_per_head ? static_cast<long long>(p.Lq) * p.Lk : 0;
  a.mask_stride_b = p.mask_per_head ? a.mask_stride_h * p.H : 0;
  a.mod = p.mask_mod(nullptr);
  // A document's positions or a packed batch's offsets (a window keeps its right side there), then
  // the user's ALiBi slopes (Problem::kernel_table).
  if (p.reads_table()) a.mod.doc = table;
  if (table && !p.alibi_slopes.empty()) a.mask = table + p.mod_table_size();  // params.h: given_slopes
  a.softcap = p.softcap;
  return a;
}

Result run_variant(const Variant& v, const Problem& p, const DeviceInputs& in, const Checker& checker, const RunOptions& o) {
  Result r;
  r.variant = &v;
  r.problem = p;
  r.workspace = v.workspace_bytes(p);
  r.flops = p.flops();
  r.hbm_bytes = v.bytes_moved(p);
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

std::vector<Result> run_in_rounds(const std::vector<const Variant*>& variants, const Problem& p, const Prepared& in,
                                  const RunOptions& o, const std::function<void(int, int)>& round_done) {
  const int rounds = std::max(o.reps, 1);
  std::vector<Result> results(variants.size());
  std::vector<std::vector<Timing>> timings(variants.size());
  std::string lost;  // the failure that lost the context
  for (int r = 0; r < rounds && lost.empty(); ++r) {
    RunOptions once = o;
    once.reps = o.reps > 0 ? 1 : 0;
    once.warmup = r == 0 ? o.warmup : 0;
    for (size_t i = 0; i < variants.size(); ++i) {
      if (!results[i].error.empty()) continue;
      if (!lost.empty()) {
        results[i].variant = variants[i];
        results[i].error = "not run: " + lost;
        continue;
      }
      try {
        Result one = run_variant(*variants[i], p, in.inputs, in.checker, once);
        timings[i].push_back(one.timing);
        if (r == 0 || (!one.verdict.pass && results[i].verdict.pass)) results[i] = std::move(one);
      } catch (const CudaError& e) {
        results[i] = Result{};
        results[i].variant = variants[i];
        results[i].problem = p;
        results[i].error = e.what();
        if (context_lost())
          lost = "the GPU's context was lost to " + variants[i]->name + "'s error (every later call would fail)";
      }
    }
    if (round_done) round_done(r + 1, rounds);
  }
  for (size_t i = 0; i < variants.size(); ++i)
    if (results[i].error.empty()) results[i].timing = combine_repetitions(timings[i]);
  return results;
}

}  // namespace attn
