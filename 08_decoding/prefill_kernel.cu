// prefill_kernel.cu: step a, the baseline. Chapter 05's best kernel, as it is, on decoding: a
// sequence at a time, its query rows, its keys and its values copied into the [H, L, d] layout that
// kernel reads, each KV head repeated for its g query heads (enable_gqa's way), then O copied back.
// What it shows (the counters): one query row fills a tile of 64 or 128 rows, the rest computed for
// nothing; the grid is Hq blocks per sequence; the copy reads and writes the cache g times over.
#include <algorithm>
#include <vector>

#include "05_flash_v2/flash_v2.h"
#include "decoding.h"
#include "kernels/numeric.cuh"
#include "simt/simt.h"

namespace ch08 {
namespace {

constexpr int kThreads = 128;

// A block per row of the copy: rows [0, Hq Lq) are Q's, then Hq L of K and as many of V.
template <class T>
__global__ void gather_kernel(const attn::DecodeParams p, int b, int L, T* Qb, T* Kb, T* Vb) {
  const int row = static_cast<int>(blockIdx.x), q_rows = p.Hq * p.Lq;
  const T* src;
  T* dst;
  if (row < q_rows) {
    const int h = row / p.Lq, t = row % p.Lq;
    src = static_cast<const T*>(p.q) + ((static_cast<long long>(b) * p.Lq + t) * p.Hq + h) * p.d;
    dst = Qb + static_cast<long long>(row) * p.d;
  } else {
    const int r = (row - q_rows) % (p.Hq * L), h = r / L, j = r % L;
    const long long at = p.cache_row(b, j);
    const bool is_k = row - q_rows < p.Hq * L;
    src = static_cast<const T*>(is_k ? p.k_cache : p.v_cache) + (at * p.Hkv + h / p.group()) * p.d;
    dst = (is_k ? Kb : Vb) + static_cast<long long>(r) * p.d;
  }
  for (int e = static_cast<int>(threadIdx.x); e < p.d; e += kThreads) dst[e] = src[e];
}

// O [Hq, Lq, d] of sequence b back to [B, Lq, Hq, d]; zeros when the sequence has no key.
template <class T>
__global__ void scatter_kernel(const attn::DecodeParams p, int b, const T* Ob, bool zero) {
  const int h = static_cast<int>(blockIdx.x) / p.Lq, t = static_cast<int>(blockIdx.x) % p.Lq;
  T* dst = static_cast<T*>(p.o) + ((static_cast<long long>(b) * p.Lq + t) * p.Hq + h) * p.d;
  for (int e = static_cast<int>(threadIdx.x); e < p.d; e += kThreads)
    attn::store(dst + e, zero ? 0.f : attn::load(Ob + static_cast<long long>(blockIdx.x) * p.d + e));
}

}  // namespace

size_t prefill_workspace(int Hq, int Lq, int max_keys, int d, int elem_bytes) {
  return (2 * static_cast<size_t>(Hq) * Lq + 2 * static_cast<size_t>(Hq) * max_keys) * d * elem_bytes;
}

cudaError_t prefill_kernel(const attn::DecodeParams& p) {
  // The grids are sized by host_seqlens: lengths other than the device's would copy keys past a
  // sequence's end, or leave some out. One small copy back per call checks them.
  std::vector<int> lens(static_cast<size_t>(p.B));
  if (const cudaError_t e = cudaMemcpy(lens.data(), p.cache_seqlens, lens.size() * sizeof(int), cudaMemcpyDeviceToHost);
      e != cudaSuccess)
    return e;
  if (!std::equal(lens.begin(), lens.end(), p.host_seqlens)) return cudaErrorInvalidValue;
  return attn::dispatch_dtype(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    int max_keys = 0;
    for (int b = 0; b < p.B; ++b) max_keys = std::max(max_keys, p.keys(p.host_seqlens[b]));
    T* Qb = static_cast<T*>(p.workspace);
    T* Ob = Qb + static_cast<size_t>(p.Hq) * p.Lq * p.d;
    T* Kb = Ob + static_cast<size_t>(p.Hq) * p.Lq * p.d;
    T* Vb = Kb + static_cast<size_t>(p.Hq) * max_keys * p.d;
    for (int b = 0; b < p.B; ++b) {
      const int L = p.keys(p.host_seqlens[b]);
      cudaError_t e = cudaSuccess;
      if (L > 0) {
        e = simt::launch(gather_kernel<T>, dim3(static_cast<unsigned>(p.Hq * (p.Lq + 2 * L))), dim3(kThreads), 0, p, b, L,
                         Qb, Kb, Vb);
        attn::AttentionParams a{};
        a.q = Qb, a.k = Kb, a.v = Vb, a.o = Ob, a.dtype = p.dtype;
        a.B = 1, a.H = p.Hq, a.Lq = p.Lq, a.Lk = L, a.d = p.d, a.scale = p.scale;
        a.causal = p.causal ? attn::Causal::bottom_right : attn::Causal::none;
        a.mask_kind = attn::MaskKind::none;
        if (e == cudaSuccess) e = ch05::lean_loop(a);
      }
      if (e == cudaSuccess)
        e = simt::launch(scatter_kernel<T>, dim3(static_cast<unsigned>(p.Hq * p.Lq)), dim3(kThreads), 0, p, b,
                         static_cast<const T*>(Ob), L == 0);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  });
}

}  // namespace ch08
