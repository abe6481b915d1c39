// append.cu: the new tokens' K and V written into the cache, in place, before attention reads it:
// row t of sequence b goes to position cache_seqlens[b] + t, through the block table (an unpaged
// cache has one page per sequence, page b). flash_attn_with_kvcache does the same inside its
// kernel when given k and v; here it is a stage of its own, so that the profile shows what it costs
// (B x Lq x Hkv x d elements read and written twice: nothing beside the cache).
#include "decoding.h"
#include "kernels/numeric.cuh"
#include "simt/simt.h"

namespace ch08 {
namespace {

constexpr int kThreads = 128;

// A block per (sequence, new token); its threads copy the token's Hkv x d values of K and of V.
template <class T>
__global__ void append_kernel(const attn::DecodeParams p) {
  const int b = static_cast<int>(blockIdx.x) / p.Lq, t = static_cast<int>(blockIdx.x) % p.Lq;
  const int j = p.cache_seqlens[b] + t;
  const long long row = p.cache_row(b, j);
  const int n = p.Hkv * p.d;
  const T* k = static_cast<const T*>(p.k_new) + static_cast<long long>(blockIdx.x) * n;
  const T* v = static_cast<const T*>(p.v_new) + static_cast<long long>(blockIdx.x) * n;
  T* kc = static_cast<T*>(p.k_cache) + row * n;
  T* vc = static_cast<T*>(p.v_cache) + row * n;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += kThreads) kc[i] = k[i], vc[i] = v[i];
}

}  // namespace

cudaError_t append_kv(const attn::DecodeParams& p) {
  if (p.k_new == nullptr) return cudaSuccess;
  return attn::dispatch_dtype(p.dtype, [&](auto tag) {
    return simt::launch(append_kernel<decltype(tag)>, dim3(static_cast<unsigned>(p.B * p.Lq)), dim3(kThreads), 0, p);
  });
}

}  // namespace ch08
