// capi.cpp: the registry and the runner's launch path behind capi.h's C functions.
#include "capi.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "decode/decode.h"
#include "errors.h"
#include "report.h"
#include "device.h"
#include "runner.h"

namespace {
using namespace attn;

std::string g_error;
std::string g_why;  // the string fs_unsupported returns

const Variant* named(const char* variant) { return variant ? find_variant(variant) : nullptr; }
const Variant* at(int i) {
  return i >= 0 && i < static_cast<int>(registry().size()) ? &registry()[static_cast<size_t>(i)] : nullptr;
}

// The problem the C caller describes, checked (UsageError): its mods read, a packed batch's sums its
// Lq and Lk (the caller's tensors are sized by them).
Problem problem_of(const fs_problem* given) {
  if (!given) throw UsageError("the problem must not be NULL");
  const fs_problem& f = *given;
  if (f.dtype < 0 || f.dtype > 2) throw UsageError("dtype: 0 (fp32), 1 (fp16) or 2 (bf16)");
  if (f.causal < 0 || f.causal > 2) throw UsageError("causal: 0 (none), 1 (top-left) or 2 (bottom-right)");
  Problem p;
  p.B = f.B, p.H = f.H, p.Lq = f.Lq, p.Lk = f.Lk, p.d = f.d;
  p.dtype = static_cast<DType>(f.dtype);
  p.causal = static_cast<Causal>(f.causal);
  p.scale_override = f.scale;
  if (f.mods) p.apply_mods(f.mods);
  if (p.Lq != f.Lq || p.Lk != f.Lk)
    throw UsageError("the packed batch's lengths add up to Lq = " + std::to_string(p.Lq) + " and Lk = " + std::to_string(p.Lk) +
                     ", not the " + std::to_string(f.Lq) + " and " + std::to_string(f.Lk) + " given");
  p.validate();
  return p;
}

// The problem the C caller describes, checked (UsageError): lengths given, a layout of whole pages.
DecodeProblem decode_problem_of(const fs_decode_problem* given) {
  if (!given) throw UsageError("the decoding problem must not be NULL");
  const fs_decode_problem& f = *given;
  if (f.B < 1 || f.seqlens_host == nullptr) throw UsageError("B >= 1 and seqlens_host (B lengths on the host) are needed");
  if (f.page_size < 1 || f.max_pages < 1) throw UsageError("page_size and max_pages must be at least 1");
  if (f.dtype != 1 && f.dtype != 2) throw UsageError("dtype: 1 (fp16) or 2 (bf16)");
  DecodeProblem p;
  p.B = f.B, p.Hq = f.Hq, p.Hkv = f.Hkv, p.Lq = f.Lq, p.d = f.d;
  p.dtype = static_cast<DType>(f.dtype);
  p.paged = f.paged != 0;
  p.page_size = f.page_size;
  p.capacity = f.page_size * f.max_pages;
  p.causal = f.causal != 0, p.splits = f.splits, p.append = f.append != 0;
  p.scale_override = f.scale;
  p.cache_lens.assign(f.seqlens_host, f.seqlens_host + f.B);
  p.validate();
  return p;
}
const DecodeVariant* decode_named(const char* variant) { return variant ? find_decode(variant) : nullptr; }
const DecodeVariant* decode_at(int i) {
  return i >= 0 && i < static_cast<int>(decode_registry().size()) ? &decode_registry()[static_cast<size_t>(i)] : nullptr;
}

// Runs `body`, turning the harness's exceptions into the C convention: 0, or 1 and a message.
template <class F>
int guarded(F&& body) {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return 1;
  }
}
}  // namespace

extern "C" {

int fs_variant_count(void) { return static_cast<int>(registry().size()); }
const char* fs_variant_name(int i) { return at(i) ? at(i)->name.c_str() : nullptr; }
const char* fs_variant_chapter(int i) { return at(i) ? at(i)->chapter.c_str() : nullptr; }
int fs_variant_best(int i) { return at(i) && at(i)->best ? 1 : 0; }

const char* fs_unsupported(const char* variant, const fs_problem* p) {
  const Variant* v = named(variant);
  if (!v) return nullptr;
  try {
    g_why = v->unsupported(problem_of(p));
  } catch (const std::exception& e) {
    g_why = e.what();
  }
  return g_why.c_str();
}
double fs_workspace_bytes(const char* variant, const fs_problem* p) {
  const Variant* v = named(variant);
  if (!v) g_error = std::string("unknown variant ") + (variant ? variant : "(NULL)");
  double bytes = -1;
  if (v && guarded([&] { bytes = static_cast<double>(v->workspace_bytes(problem_of(p))); }) != 0) return -1;
  return bytes;
}
double fs_hbm_bytes(const char* variant, const fs_problem* p) {
  const Variant* v = named(variant);
  if (!v) g_error = std::string("unknown variant ") + (variant ? variant : "(NULL)");
  double bytes = -1;
  if (v && guarded([&] { bytes = v->bytes_moved(problem_of(p)); }) != 0) return -1;
  return bytes;
}

int fs_mod_table(const fs_problem* p, int* table, int capacity) {
  int n = -1;
  if (guarded([&] {
        const std::vector<int> t = problem_of(p).kernel_table();
        if (table) std::copy_n(t.begin(), std::min(t.size(), static_cast<size_t>(std::max(capacity, 0))), table);
        n = static_cast<int>(t.size());
      }) != 0)
    return -1;
  return n;
}

int fs_visible(const fs_problem* p, unsigned char* visible) {
  return guarded([&] {
    const Problem pr = problem_of(p);
    if (!visible) throw UsageError("visible must not be NULL (Lq * Lk bytes)");
    const std::vector<int> table = pr.mod_table();
    std::vector<std::pair<int, int>> runs;
    for (int i = 0; i < pr.Lq; ++i) {
      unsigned char* row = visible + static_cast<size_t>(i) * pr.Lk;
      std::fill(row, row + pr.Lk, 0);
      pr.visible_runs(i, table, runs);
      for (const auto& [lo, hi] : runs) std::fill(row + lo, row + hi, 1);
    }
  });
}

int fs_run(const char* variant, const fs_problem* p, const void* q, const void* k, const void* v, void* o,
           void* workspace, float* lse, const int* table) {
  return guarded([&] {
    const Variant* var = named(variant);
    if (!var) throw UsageError(std::string("unknown variant ") + (variant ? variant : "(NULL)"));
    const Problem pr = problem_of(p);
    if (const std::string why = var->unsupported(pr); !why.empty()) throw UsageError(why);
    if (!q || !k || !v || !o) throw UsageError("q, k, v and o must not be NULL");
    if (pr.kernel_table_size() > 0 && !table)
      throw UsageError("this problem's kernels read a table (a mask_mod's, ALiBi's given slopes): pass fs_mod_table's ints on the device");
    if (var->workspace_bytes(pr) > 0 && !workspace)
      throw UsageError("variant " + var->name + " needs a workspace of fs_workspace_bytes bytes");
    AttentionParams a = attention_params(pr, q, k, v, nullptr, table);
    a.o = o;
    a.workspace = workspace;
    a.lse = var->writes_lse ? lse : nullptr;
    device();  // no usable GPU: its sentence (read_device), not the first CUDA call's error name
    static Stages stages;  // its events mark the stages, as in the harness's own timing
    stages.begin();
    var->run(a, stages);  // checks every launch
  });
}

int fs_synchronize(void) {
  return guarded([] {
    device();  // no usable GPU: its sentence (read_device), not the first CUDA call's error name
    check(cudaDeviceSynchronize(), "the kernels");
    check(cudaGetLastError(), "the kernels");
  });
}

const char* fs_last_error(void) { return g_error.c_str(); }

int fs_decode_variant_count(void) { return static_cast<int>(decode_registry().size()); }
const char* fs_decode_variant_name(int i) { return decode_at(i) ? decode_at(i)->info.name.c_str() : nullptr; }
int fs_decode_variant_best(int i) { return decode_at(i) && decode_at(i)->info.best ? 1 : 0; }
const char* fs_decode_unsupported(const char* variant, const fs_decode_problem* p) {
  const DecodeVariant* v = decode_named(variant);
  if (!v) return nullptr;
  try {
    g_why = v->unsupported(decode_problem_of(p));
  } catch (const std::exception& e) {
    g_why = e.what();
  }
  return g_why.c_str();
}
double fs_decode_workspace_bytes(const char* variant, const fs_decode_problem* p) {
  const DecodeVariant* v = decode_named(variant);
  if (!v) g_error = std::string("unknown decoding variant ") + (variant ? variant : "(NULL)");
  double bytes = -1;
  if (v && guarded([&] {
        const DecodeProblem d = decode_problem_of(p);
        bytes = static_cast<double>(v->workspace_bytes(d, v->splits_for(d)));
      }) != 0)
    return -1;
  return bytes;
}
int fs_decode_splits(const char* variant, const fs_decode_problem* p) {
  const DecodeVariant* v = decode_named(variant);
  if (!v) g_error = std::string("unknown decoding variant ") + (variant ? variant : "(NULL)");
  int splits = -1;
  if (v && guarded([&] { splits = v->splits_for(decode_problem_of(p)); }) != 0) return -1;
  return splits;
}
int fs_decode_run(const char* variant, const fs_decode_problem* p, const void* q, void* k_cache, void* v_cache,
                  const void* k_new, const void* v_new, void* o, const int* block_table, const int* cache_seqlens,
                  void* workspace) {
  return guarded([&] {
    const DecodeVariant* var = decode_named(variant);
    if (!var) throw UsageError(std::string("unknown decoding variant ") + (variant ? variant : "(NULL)"));
    const DecodeProblem d = decode_problem_of(p);
    if (const std::string why = var->unsupported(d); !why.empty()) throw UsageError(why);
    const int splits = var->splits_for(d);
    if (!q || !k_cache || !v_cache || !o || !cache_seqlens)
      throw UsageError("q, the caches, o and cache_seqlens must not be NULL");
    if (d.paged && !block_table) throw UsageError("paged is set: block_table must not be NULL");
    if (d.append && (!k_new || !v_new)) throw UsageError("append is set: k_new and v_new must not be NULL");
    if (var->workspace_bytes(d, splits) > 0 && !workspace)
      throw UsageError("variant " + var->info.name + " needs a workspace of fs_decode_workspace_bytes bytes");
    DecodeParams a{};
    a.q = q, a.k_cache = k_cache, a.v_cache = v_cache;
    a.k_new = d.append ? k_new : nullptr, a.v_new = d.append ? v_new : nullptr;
    a.o = o, a.block_table = d.paged || var->paged ? block_table : nullptr, a.cache_seqlens = cache_seqlens, a.host_seqlens = p->seqlens_host;
    a.dtype = d.dtype;
    a.B = d.B, a.Hq = d.Hq, a.Hkv = d.Hkv, a.Lq = d.Lq, a.d = d.d;
    a.page_size = d.page(), a.max_pages = d.max_pages();
    a.scale = d.scale();
    a.causal = d.causal;
    a.splits = splits;
    a.workspace = workspace;
    device();  // no usable GPU: its sentence (read_device), not the first CUDA call's error name
    static Stages stages;
    stages.begin();
    var->run(a, stages);
  });
}

const char* fs_commit(void) {
  static const std::string c = commit_id();
  return c.c_str();
}

}  // extern "C"
