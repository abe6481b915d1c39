#include "harness/decode/decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "gpus/gpus.h"
#include "harness/errors.h"
#include "harness/profile.h"

namespace attn {

int DecodeProblem::max_keys() const {
  int m = 0;
  for (int b = 0; b < B; ++b) m = std::max(m, keys(b));
  return m;
}

int DecodeProblem::resolved_capacity() const {
  if (capacity > 0) return capacity;
  const int step = paged ? std::max(page_size, 1) : 1;
  return std::max(step, (max_keys() + step - 1) / step * step);
}

float DecodeProblem::scale() const {
  return static_cast<float>(scale_override ? *scale_override : 1.0 / std::sqrt(static_cast<double>(d)));
}

void DecodeProblem::validate() const {
  auto fail = [](const std::string& why) { throw UsageError(why); };
  if (B < 1 || Hq < 1 || Hkv < 1 || d < 1 || Lq < 1)
    fail("batch, heads, KV heads, head dim and new tokens must each be at least 1 (got B=" + std::to_string(B) +
         " Hq=" + std::to_string(Hq) + " Hkv=" + std::to_string(Hkv) + " d=" + std::to_string(d) +
         " new tokens=" + std::to_string(Lq) + ")");
  if (Hq % Hkv != 0)
    fail("the query heads (" + std::to_string(Hq) + ") must be a multiple of the KV heads (" + std::to_string(Hkv) +
         "): query head h reads KV head h / (Hq / Hkv)");
  if (Lq > 128) fail("at most 128 new tokens per sequence (got " + std::to_string(Lq) + "): longer is a prefill");
  if (paged && page_size < 1) fail("a page size must be at least 1 (got " + std::to_string(page_size) + ")");
  if (cache_lens.size() != 1 && cache_lens.size() != static_cast<size_t>(B))
    fail("one cache length per sequence: " + std::to_string(cache_lens.size()) + " given for B = " + std::to_string(B));
  if (capacity < 0) fail("the capacity must be positive (or 0: the longest sequence's)");
  if (splits < 0 || splits > 128) fail("--splits takes 0 (the heuristic) to 128 (got " + std::to_string(splits) + ")");
  if (scale_override) check_scale(*scale_override, d);
  for (size_t b = 0; b < cache_lens.size(); ++b)
    if (cache_lens[b] < 0) fail("cache length " + std::to_string(cache_lens[b]) + " of sequence " + std::to_string(b) + " is negative");
  // Elements are indexed in 64 bits; pages, rows and blocks in 32 (the harness's pool holds twice
  // the sequences' pages).
  if (2.0 * B * ((static_cast<double>(resolved_capacity()) + page() - 1) / page()) > 2e9 ||
      static_cast<double>(B) * Lq * Hq * d > 2e9 || static_cast<double>(Hq) * (Lq + 2.0 * max_keys()) > 2e9)
    fail(describe() + " has more pages, rows or blocks than the 32-bit indices here can count");
  const int cap = resolved_capacity();
  for (int b = 0; b < B; ++b)
    if (keys(b) > cap)
      fail("sequence " + std::to_string(b) + " holds " + std::to_string(cache_len(b)) + " keys" +
           (append ? " + " + std::to_string(Lq) + " appended" : "") + ", more than the capacity of " + std::to_string(cap));
}

std::string DecodeProblem::describe() const {
  std::ostringstream s;
  s << "B=" << B << " Hq=" << Hq << " Hkv=" << Hkv << " d=" << d << " new=" << Lq << " cache=";
  if (cache_lens.size() == 1)
    s << cache_lens[0];
  else
    for (size_t b = 0; b < cache_lens.size(); ++b) s << (b ? "," : "") << cache_lens[b];
  if (paged) s << " pages of " << page_size;
  if (!append) s << " (no append)";
  if (causal && Lq > 1) s << " causal(bottom-right)";
  s << ' ' << dtype_name(dtype);
  return s.str();
}

double DecodeProblem::visible_pairs() const {
  double n = 0;
  for (int b = 0; b < B; ++b) {
    const long long L = keys(b);
    for (int t = 0; t < Lq; ++t) n += causal ? static_cast<double>(std::clamp<long long>(t + L - Lq + 1, 0, L)) : L;
  }
  return n;
}
double DecodeProblem::flops() const { return 4.0 * d * Hq * visible_pairs(); }
double DecodeProblem::cache_bytes() const {
  double keys_all = 0;
  for (int b = 0; b < B; ++b) keys_all += keys(b);
  return 2.0 * keys_all * Hkv * d * static_cast<double>(dtype_size(dtype));
}
double DecodeProblem::min_bytes() const {
  const double t = static_cast<double>(dtype_size(dtype));
  return cache_bytes() + 2.0 * B * Lq * Hq * d * t + (append ? 4.0 * B * Lq * Hkv * d * t : 0);
}

Problem DecodeProblem::forward(int b) const {
  Problem f;
  f.B = 1, f.H = Hq, f.Lq = Lq, f.Lk = keys(b), f.d = d, f.dtype = dtype;
  f.causal = causal ? Causal::bottom_right : Causal::none;
  f.scale_override = static_cast<double>(scale());
  f.seed = seed + static_cast<uint64_t>(b);
  return f;
}

namespace {
// The pool row of sequence b's key j: the kernels' rule (DecodeParams::paged_row) on the host's table.
size_t row_of(const DecodeProblem& p, const std::vector<int>& table, int b, int j) {
  DecodeParams rule{};
  rule.block_table = table.data(), rule.max_pages = p.max_pages(), rule.page_size = p.page();
  return static_cast<size_t>(rule.paged_row(b, j));
}
}  // namespace

DecodeInputs DecodeInputs::generate(const DecodeProblem& p) {
  DecodeInputs in;
  Bell bell = Bell::of(p.seed, 3);
  const size_t hd = static_cast<size_t>(p.Hkv) * p.d;
  bell.fill(in.q, static_cast<size_t>(p.B) * p.Lq * p.Hq * p.d, p.dtype);
  if (p.append) {
    bell.fill(in.k_new, static_cast<size_t>(p.B) * p.Lq * hd, p.dtype);
    bell.fill(in.v_new, static_cast<size_t>(p.B) * p.Lq * hd, p.dtype);
  }
  const size_t pool_rows = static_cast<size_t>(p.pool_pages()) * p.page();
  in.k_pool.assign(pool_rows * hd, std::numeric_limits<float>::quiet_NaN());
  in.v_pool.assign(pool_rows * hd, std::numeric_limits<float>::quiet_NaN());
  // The block table: sequence b's pages, a seeded choice among all the pool's when paged (so that
  // neighbouring pages of a sequence are far apart in memory), page b when not.
  std::vector<int> pages(static_cast<size_t>(p.pool_pages()));
  std::iota(pages.begin(), pages.end(), 0);
  if (p.paged) std::shuffle(pages.begin(), pages.end(), std::mt19937_64(p.seed + 99));
  in.block_table.assign(pages.begin(), pages.begin() + static_cast<long>(p.B) * p.max_pages());
  in.cache_seqlens.resize(static_cast<size_t>(p.B));
  for (int b = 0; b < p.B; ++b) {
    in.cache_seqlens[static_cast<size_t>(b)] = p.cache_len(b);
    for (int j = 0; j < p.cache_len(b); ++j) {
      const size_t r = row_of(p, in.block_table, b, j) * hd;
      for (size_t e = 0; e < hd; ++e) in.k_pool[r + e] = round_to(p.dtype, bell()), in.v_pool[r + e] = round_to(p.dtype, bell());
    }
  }
  return in;
}

void DecodeInputs::appended(const DecodeProblem& p, std::vector<float>& k, std::vector<float>& v) const {
  k = k_pool, v = v_pool;
  if (!p.append) return;
  const size_t hd = static_cast<size_t>(p.Hkv) * p.d;
  for (int b = 0; b < p.B; ++b)
    for (int t = 0; t < p.Lq; ++t) {
      const size_t dst = row_of(p, block_table, b, cache_seqlens[static_cast<size_t>(b)] + t) * hd;
      const size_t src = (static_cast<size_t>(b) * p.Lq + t) * hd;
      std::copy_n(k_new.begin() + static_cast<long>(src), hd, k.begin() + static_cast<long>(dst));
      std::copy_n(v_new.begin() + static_cast<long>(src), hd, v.begin() + static_cast<long>(dst));
    }
}

void check_decode_inputs(const DecodeProblem& p, const DecodeInputs& in) {
  p.validate();
  const size_t hd = static_cast<size_t>(p.Hkv) * p.d, pages = in.k_pool.size() / (hd * static_cast<size_t>(p.page()));
  auto fail = [](const std::string& why) { throw UsageError(why); };
  if (in.q.size() != static_cast<size_t>(p.B) * p.Lq * p.Hq * p.d) fail("q has the wrong size for " + p.describe());
  if (p.append && (in.k_new.size() != static_cast<size_t>(p.B) * p.Lq * hd || in.v_new.size() != in.k_new.size()))
    fail("the new keys and values have the wrong size for " + p.describe());
  if (in.k_pool.size() % (hd * static_cast<size_t>(p.page())) != 0 || in.v_pool.size() != in.k_pool.size() || pages == 0)
    fail("the K and V caches must be whole pages of " + std::to_string(p.page()) + " x " + std::to_string(p.Hkv) + " x " +
         std::to_string(p.d) + ", of the same size");
  if (in.block_table.size() != static_cast<size_t>(p.B) * p.max_pages())
    fail("the block table must have B x " + std::to_string(p.max_pages()) + " entries (got " +
         std::to_string(in.block_table.size()) + ")");
  if (in.cache_seqlens.size() != static_cast<size_t>(p.B)) fail("cache_seqlens must have one length per sequence");
  std::vector<int> owner(pages, -1);
  for (int b = 0; b < p.B; ++b) {
    const int len = in.cache_seqlens[static_cast<size_t>(b)];
    if (len < 0 || len + (p.append ? p.Lq : 0) > p.resolved_capacity())
      fail("cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(len) + (p.append ? " + the new tokens" : "") +
           " is outside 0.." + std::to_string(p.resolved_capacity()) + ", the capacity");
    const int used = (p.keys(b) + p.page() - 1) / p.page();
    for (int i = 0; i < used; ++i) {
      const int page = in.block_table[static_cast<size_t>(b) * p.max_pages() + i];
      if (page < 0 || static_cast<size_t>(page) >= pages)
        fail("block_table[" + std::to_string(b) + "][" + std::to_string(i) + "] = " + std::to_string(page) +
             " is no page of the pool (0.." + std::to_string(pages - 1) + ")");
      if (owner[static_cast<size_t>(page)] >= 0)
        fail("page " + std::to_string(page) + " is in the block tables of sequences " +
             std::to_string(owner[static_cast<size_t>(page)]) + " and " + std::to_string(b) +
             ": appending to one would overwrite the other");
      owner[static_cast<size_t>(page)] = b;
    }
  }
}

std::string DecodeVariant::unsupported(const DecodeProblem& p) const {
  Problem f = p.forward(0);  // dtype and head dim, as a forward variant states them
  f.causal = Causal::none;
  if (std::string why = info.unsupported(f); !why.empty()) return why;
  if (const DeviceInfo* dev = device_if_any())
    if (std::string why = smem_refusal(info.name, smem_bytes(p), p.d, p.dtype, *dev); !why.empty()) return why;
  if (p.paged && !paged) return info.name + " reads an unpaged cache [B, capacity, Hkv, d]: no --page-size";
  if (p.splits > 1 && !splits) return info.name + " does not split the keys: no --splits";
  return "";
}

int DecodeVariant::splits_for(const DecodeProblem& p) const {
  if (!splits) return 1;
  if (p.splits > 0) return p.splits;
  const int rows = rows_per_block(p);  // the unsplit grid: a block per (sequence, KV head, chunk of rows)
  const long long blocks = static_cast<long long>(p.B) * p.Hkv * ((p.group() * p.Lq + rows - 1) / rows);
  return split_heuristic(blocks, p.max_keys(), decode_sms(), blocks_per_sm(p));
}

int split_heuristic(long long blocks, int max_keys, int sms, int per_sm) {
  const int most = std::clamp(max_keys / kMinSplitKeys, 1, 128);
  // A round: the blocks the SMs hold at once, per_sm on each. The share of its rounds the grid fills:
  // blocks / (round x rounds), 1 for whole rounds.
  const double round = static_cast<double>(sms) * per_sm;
  auto filled = [&](int s) {
    const double n = static_cast<double>(blocks) * s;
    return n / (round * std::ceil(n / round));
  };
  // The fewest splits that give ~per_sm blocks per SM (one block's loads in flight while another
  // computes, at two); none where the grid has them already (FlashAttention-2's num_splits_heuristic
  // says so too: more blocks would only add partials); else up to twice as many if they fill the
  // last round better.
  int first = 1;
  while (first < most && blocks * first * 10 < 9LL * per_sm * sms) ++first;
  if (first == 1) return 1;
  int best = first;
  for (int s = first + 1; s <= std::min(most, 2 * first); ++s)
    if (filled(s) > filled(best) + 1e-9) best = s;
  return best;
}

int decode_sms() {
  try {
    return device().emulated ? device().gpu->sms : device().sms;
  } catch (const CudaError&) {  // a gpu build asked without a GPU (the C interface's queries)
    return gpus::kGpus[0].sms;
  }
}

std::vector<DecodeVariant>& decode_registry() {
  static std::vector<DecodeVariant> r;
  return r;
}
const DecodeVariant* find_decode(const std::string& name) {
  for (const DecodeVariant& v : decode_registry())
    if (v.info.name == name) return &v;
  return nullptr;
}
const DecodeVariant* best_decode() {
  for (const DecodeVariant& v : decode_registry())
    if (v.info.best) return &v;
  return nullptr;
}
RegisterDecode::RegisterDecode(DecodeVariant v) { decode_registry().push_back(std::move(v)); }

DecodeChecker::DecodeChecker(const DecodeProblem& p, const DecodeInputs& in, const RunOptions& o) : p_(p) {
  in.appended(p, k_after_, v_after_);
  // Large problems: four query heads (first, last, two seeded) of four sequences (the same).
  const bool small = !o.sample || p.flops() <= 4e8;
  auto pick = [&](int n, uint64_t seed) {
    std::vector<int> out;
    if (small || n <= 4) {
      for (int i = 0; i < n; ++i) out.push_back(i);
      return out;
    }
    std::mt19937_64 rng(seed);
    out = {0, n - 1};
    while (out.size() < 4) {
      const int x = static_cast<int>(rng() % static_cast<uint64_t>(n));
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  heads_ = pick(p.Hq, p.seed + 5);
  const size_t hd = static_cast<size_t>(p.Hkv) * p.d;
  for (int b : pick(p.B, p.seed + 6)) {
    Sequence s;
    s.b = b;
    s.fwd = p.forward(b);
    s.fwd.H = static_cast<int>(heads_.size());
    const int L = p.keys(b);
    if (L > 0) {
      // Sequence b unpaged, in [1, H, L, d], each query head beside its KV head (enable_gqa's repeat).
      Inputs fi;
      fi.q.resize(s.fwd.q_elems()), fi.k.resize(static_cast<size_t>(s.fwd.H) * L * p.d), fi.v.resize(fi.k.size());
      for (size_t h = 0; h < heads_.size(); ++h) {
        const int hq = heads_[h], hk = hq / p.group();
        for (int t = 0; t < p.Lq; ++t)
          std::copy_n(in.q.begin() + static_cast<long>(((static_cast<size_t>(b) * p.Lq + t) * p.Hq + hq) * p.d), p.d,
                      fi.q.begin() + static_cast<long>((h * p.Lq + t) * p.d));
        for (int j = 0; j < L; ++j) {
          const size_t src = row_of(p, in.block_table, b, j) * hd + static_cast<size_t>(hk) * p.d;
          std::copy_n(k_after_.begin() + static_cast<long>(src), p.d, fi.k.begin() + static_cast<long>((h * L + j) * p.d));
          std::copy_n(v_after_.begin() + static_cast<long>(src), p.d, fi.v.begin() + static_cast<long>((h * L + j) * p.d));
        }
      }
      s.sel = Selection::all(s.fwd);
      s.ref = reference(s.fwd, fi, s.sel);
      if (p.dtype != DType::fp32) s.naive = naive_same_dtype(s.fwd, fi, s.sel);
    }
    seqs_.push_back(std::move(s));
  }
}

namespace {
bool same_bits(DType t, float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return round_to(t, a) == round_to(t, b) && std::signbit(a) == std::signbit(b);
}
}  // namespace

Verdict DecodeChecker::check(const std::vector<float>& out, const std::vector<float>& k,
                             const std::vector<float>& v) const {
  Verdict all;
  all.pass = true;
  for (float x : out) all.nonfinite += std::isfinite(x) ? 0 : 1;
  auto fail = [&](const std::string& why) {
    if (all.pass) all.why = why;
    all.pass = false;
  };
  if (all.nonfinite > 0) fail(std::to_string(all.nonfinite) + " NaN or Inf in the output");
  for (const Sequence& s : seqs_) {
    const int H = s.fwd.H;
    std::vector<float> ob(static_cast<size_t>(H) * p_.Lq * p_.d);
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < p_.Lq; ++t)
        std::copy_n(out.begin() + static_cast<long>(((static_cast<size_t>(s.b) * p_.Lq + t) * p_.Hq + heads_[h]) * p_.d),
                    p_.d, ob.begin() + static_cast<long>((static_cast<size_t>(h) * p_.Lq + t) * p_.d));
    if (s.fwd.Lk == 0) {  // no key at all: O = 0, FlashAttention's convention
      all.checked += ob.size();
      for (float x : ob)
        if (x != 0.f) {
          fail("sequence " + std::to_string(s.b) + " has no key, and its output is not 0");
          break;
        }
      continue;
    }
    const Verdict vd = compare(s.fwd, s.sel, ob, s.ref, s.naive.empty() ? nullptr : &s.naive, nullptr);
    all.checked += vd.checked;
    all.max_abs = std::max(all.max_abs, vd.max_abs);
    all.ref_max = std::max(all.ref_max, vd.ref_max);
    all.max_rel = all.ref_max > 0 ? all.max_abs / all.ref_max : all.max_abs;
    if (vd.bound >= 0) all.bound = all.bound < 0 ? vd.bound : std::min(all.bound, vd.bound);
    if (vd.naive_err >= 0) all.naive_err = std::max(all.naive_err, vd.naive_err);
    if (!vd.pass) fail("sequence " + std::to_string(s.b) + ": " + vd.why);
  }
  if (k.size() != k_after_.size() || v.size() != v_after_.size()) {
    fail("the cache came back with the wrong size");
    return all;
  }
  for (size_t i = 0; i < k.size(); ++i)
    if (!same_bits(p_.dtype, k[i], k_after_[i]) || !same_bits(p_.dtype, v[i], v_after_[i])) {
      const size_t hd = static_cast<size_t>(p_.Hkv) * p_.d;
      fail("the cache differs from the inputs' with the new tokens appended, first at pool row " + std::to_string(i / hd) +
           " (KV head " + std::to_string(i % hd / static_cast<size_t>(p_.d)) + ")");
      break;
    }
  return all;
}

namespace {
size_t bytes_of(const DecodeProblem& p, size_t elems) { return elems * dtype_size(p.dtype); }
}  // namespace

DecodeDevice::DecodeDevice(const DecodeProblem& p, const DecodeInputs& in)
    : q(bytes_of(p, in.q.size())),
      k_new(bytes_of(p, in.k_new.size())),
      v_new(bytes_of(p, in.v_new.size())),
      k_pool(bytes_of(p, in.k_pool.size())),
      v_pool(bytes_of(p, in.v_pool.size())),
      table(in.block_table.size() * sizeof(int)),
      lens(in.cache_seqlens.size() * sizeof(int)) {
  upload_as(p.dtype, q, in.q);
  if (p.append) upload_as(p.dtype, k_new, in.k_new), upload_as(p.dtype, v_new, in.v_new);
  table.upload(in.block_table.data(), table.bytes());
  lens.upload(in.cache_seqlens.data(), lens.bytes());
  reset_pool(p, in);
}

void DecodeDevice::reset_pool(const DecodeProblem& p, const DecodeInputs& in) {
  upload_as(p.dtype, k_pool, in.k_pool);
  upload_as(p.dtype, v_pool, in.v_pool);
}

DecodeParams decode_params(const DecodeVariant& v, const DecodeProblem& p, const DecodeDevice& dev,
                           const std::vector<int>& host_lens) {
  DecodeParams a = decode_params(v, p, nullptr, host_lens);
  a.q = dev.q.get();
  a.k_cache = dev.k_pool.get(), a.v_cache = dev.v_pool.get();
  a.k_new = p.append ? dev.k_new.get() : nullptr;
  a.v_new = p.append ? dev.v_new.get() : nullptr;
  a.block_table = v.paged ? static_cast<const int*>(dev.table.get()) : nullptr;
  a.cache_seqlens = static_cast<const int*>(dev.lens.get());
  return a;
}

DecodeParams decode_params(const DecodeVariant& v, const DecodeProblem& p, void* at, const std::vector<int>& host_lens) {
  DecodeParams a{};
  a.q = at, a.o = a.workspace = at;
  a.k_cache = a.v_cache = at;
  a.k_new = p.append ? at : nullptr;
  a.v_new = p.append ? at : nullptr;
  a.block_table = v.paged ? static_cast<const int*>(at) : nullptr;
  a.cache_seqlens = host_lens.data();
  a.host_seqlens = host_lens.data();
  a.dtype = p.dtype;
  a.B = p.B, a.Hq = p.Hq, a.Hkv = p.Hkv, a.Lq = p.Lq, a.d = p.d;
  a.page_size = p.page(), a.max_pages = p.max_pages();
  a.scale = p.scale();
  a.causal = p.causal;
  a.splits = 1;
  return a;
}

namespace {

bool one_length(const DecodeProblem& p) {
  for (int b = 1; b < p.B; ++b)
    if (p.cache_len(b) != p.cache_len(0)) return false;
  return true;
}

// For the table and the CSV: B and Lk as the longest sequence.
Problem table_problem(const DecodeProblem& p) {
  Problem f = p.forward(0);
  f.B = p.B, f.Lk = p.max_keys();
  return f;
}

}  // namespace

void check_decode_runnable(const DecodeVariant& v, const DecodeProblem& p, const RunOptions& o) {
  p.validate();
  if (const std::string why = v.unsupported(p); !why.empty()) throw UsageError(why);
  const int splits = v.splits_for(p);
  const double t = static_cast<double>(dtype_size(p.dtype));
  const double pool = t * 2.0 * p.pool_pages() * p.page() * p.Hkv * p.d;  // K and V's pages, used or not
  const double inputs = pool + t * (2.0 * p.B * p.Lq * p.Hq * p.d + (p.append ? 2.0 * p.B * p.Lq * p.Hkv * p.d : 0));
  const double need = inputs + static_cast<double>(v.workspace_bytes(p, splits));
  // The host holds the inputs as float (Q, the new K and V, the pool) and, on the CPU backend, the
  // kernels' buffers too; a run takes at most 90 % of what is available, as the forward's
  // (runner.cpp, check_runnable).
  const double host_need = 4.0 / t * inputs + (device().emulated ? need : 0);
  HostMemory host = available_host_memory(emulator_address_space());
  if (host_need > 0.9 * host.bytes)
    throw UsageError("variant " + v.info.name + " needs about " + human_bytes(host_need) + " of host memory for " +
                     p.describe() + " (the inputs as float" + (device().emulated ? ", and the kernels' buffers" : "") +
                     "; a pool of " + human_bytes(pool) + " on the device); 90% of the " + host.limit + ": " +
                     human_bytes(0.9 * host.bytes));
  const double free_b = static_cast<double>(free_device_bytes());
  if (need > free_b)
    throw UsageError("variant " + v.info.name + " needs " + human_bytes(need) + " of device memory for " + p.describe() +
                     "; " + device().name + " has " + human_bytes(free_b) + " free");
  if (device().emulated && o.cpu_budget_s > 0) {
    const int runs = o.reps > 0 ? o.warmup + o.reps : 1;
    // The emulator's time grows with the cache it reads as much as with the products; and the pool,
    // every page of it, is filled and copied once by one thread, not by the emulated SMs (pages far
    // larger than the sequences make it far larger than the cache).
    const double work = std::max(p.flops(), p.cache_bytes() * p.group());
    const double seconds =
        work / (v.info.cpu_flops_per_second * std::max(1, device().sms)) * runs + pool / v.info.cpu_flops_per_second;
    if (seconds > o.cpu_budget_s) {
      std::ostringstream s;
      s << "the CPU emulation of variant " << v.info.name << " would take about " << fmt_seconds(seconds) << " for "
        << p.describe() << " (" << runs << (runs == 1 ? " run" : " runs") << "), more than its budget of "
        << fmt_seconds(o.cpu_budget_s) << ": try a shorter --cache-len or fewer sequences (or raise --cpu-budget; 0 lifts it)";
      throw UsageError(s.str());
    }
  }
}

Result run_decode(const DecodeVariant& v, const DecodeProblem& p, DecodeDevice& dev, const DecodeInputs& in,
                  const DecodeChecker& checker, const RunOptions& o, std::vector<float>* output) {
  const int splits = v.splits_for(p);
  Result row;
  row.variant = &v.info;
  row.problem = table_problem(p);
  row.workspace = v.workspace_bytes(p, splits);
  row.flops = p.flops();
  row.hbm_bytes = v.hbm_bytes ? v.hbm_bytes(p, splits) : p.min_bytes();
  if (v.plan) row.plan = v.plan(p, splits);

  dev.reset_pool(p, in);
  const size_t out_elems = in.q.size();
  DeviceBuffer out(bytes_of(p, out_elems)), work(row.workspace);
  DecodeParams a = decode_params(v, p, dev, in.cache_seqlens);
  a.o = out.get();
  a.splits = splits;
  a.workspace = row.workspace ? work.get() : nullptr;
  // Every execution starts from a poisoned output and workspace (0xFF bytes: NaN): an output left
  // unwritten, or a partial result never stored, fails the check. The append writes the same rows
  // each time, so repetitions leave the cache as one run does.
  auto poison = [&] {
    check(cudaMemset(out.get(), 0xFF, out.bytes()), "poisoning the output");
    if (row.workspace) check(cudaMemset(work.get(), 0xFF, row.workspace), "poisoning the workspace");
  };
  auto launch = [&](Stages& st) { v.run(a, st); };
  row.timing = time_variant(poison, launch, o.reps > 0 ? o.warmup : 0, std::max(o.reps, 1));
  if (o.reps == 0) row.timing = Timing{};

  std::vector<float> o_host = download_as(p.dtype, out, out_elems);
  row.verdict = checker.check(o_host, download_as(p.dtype, dev.k_pool, in.k_pool.size()),
                              download_as(p.dtype, dev.v_pool, in.v_pool.size()));
  if (output) *output = std::move(o_host);
  return row;
}

namespace {

// The launches of v on p, recorded without running a block (simt's dry run): the whole problem's
// grids, where a sampled profile ran a part of it. Its kernels' addresses point at nothing they
// would read; the lengths are real (step a's launcher reads them back to size its grids).
std::vector<std::vector<simt::LaunchCounters>> dry_decode(const DecodeVariant& v, const DecodeProblem& p, int splits) {
  static char nothing[64] = {};
  std::vector<int> lens(static_cast<size_t>(p.B));
  for (int b = 0; b < p.B; ++b) lens[static_cast<size_t>(b)] = p.cache_len(b);
  DecodeParams a = decode_params(v, p, nothing, lens);
  a.splits = splits;
  return dry_run([&](Stages& st) { v.run(a, st); });
}

}  // namespace

// Sequences of other lengths are emulated whole: their blocks' work differs from one sequence to
// the next, and a KV head's blocks lie between a sequence's (x = (b, hk, chunk)).
bool decode_sampled(const DecodeProblem& p) { return one_length(p) && (p.B > 1 || p.Hkv > 1); }

bool decode_profile_sampled(const DecodeProblem& p) { return decode_sampled(p) && p.cache_bytes() > 16e6; }

DecodeProblem decode_emulated(const DecodeProblem& p, bool sample) {
  DecodeProblem e = p;
  if (!sample || !decode_sampled(p)) return e;
  e.B = 1, e.cache_lens = {p.cache_len(0)};
  e.Hq = p.group(), e.Hkv = 1;
  return e;
}

const Profile& profile_decode(Profiler& profiler, const DecodeVariant& v, const DecodeProblem& p, bool sample,
                              const RunOptions& o, bool details) {
  const bool sampled = sample && decode_sampled(p);
  const int splits = v.splits_for(p);
  DecodeProblem e = decode_emulated(p, sampled);
  if (v.splits) e.splits = splits;
  const DecodeInputs in = DecodeInputs::generate(e);
  const DecodeChecker checker(e, in, o);
  DecodeDevice dev(e, in);
  const auto whole = sampled ? dry_decode(v, p, splits) : std::vector<std::vector<simt::LaunchCounters>>{};
  return profiler.run(
      [&] {
        RunOptions once = o;
        once.reps = 1, once.warmup = 0;
        Result r = run_decode(v, e, dev, in, checker, once);
        if (!sampled) return r;
        const double heads = p.Hkv / e.Hkv, sequences = p.B / e.B;
        // What every KV head of a sequence reads alike (its row of the block table, its length):
        // its sectors cross from DRAM once per sequence, each read by the sequence's KV heads' blocks.
        const std::vector<const void*> shared = {dev.table.get(), dev.lens.get()};
        if (whole.size() != r.timing.stages.size())
          throw std::runtime_error("variant " + v.info.name + ": a sampled profile ran other stages than the whole problem's");
        for (size_t s = 0; s < whole.size(); ++s) {
          Stages::Time& st = r.timing.stages[s];
          // A stage launched once per sequence: sequence 0's launches stand for each one's.
          const bool per_sequence = st.stage == v.per_sequence_stage;
          const std::vector<simt::LaunchCounters> part = std::move(st.counters);
          if (part.empty() || whole[s].size() != part.size() * (per_sequence ? static_cast<size_t>(sequences) : 1))
            throw std::runtime_error("variant " + v.info.name + ": a sampled profile launched other kernels than the "
                                     "whole problem's in stage " + st.stage);
          st.counters.clear();
          for (size_t i = 0; i < whole[s].size(); ++i)
            st.counters.push_back(as_whole(part[i % part.size()], whole[s][i].counters,
                                           HeadSample{1, std::llround(heads * (per_sequence ? 1 : sequences))}, shared, heads));
        }
        r.problem = table_problem(p);
        r.flops = p.flops();
        r.hbm_bytes = v.hbm_bytes ? v.hbm_bytes(p, splits) : p.min_bytes();
        if (v.plan) r.plan = v.plan(p, splits);
        return r;
      },
      details);
}

}  // namespace attn
