// materialized.cu: step a. The gradients as the formulas write them, with N x N buffers.
//
// The forward kept O and the log-sum-exp L of every row, not P. So the backward first recomputes
// P from Q, K and L, exactly: P_ij = exp(S_ij - L_i), because e^(s - m) / l = e^(s - (m + log l)).
// Then, one kernel per formula and one thread per output element, as chapter 01 did forward:
//   P  = exp(scale Q K^T + mask - L)     [Lq x Lk] written to global memory
//   D  = rowsum(dO o O)                  preprocess.cu
//   dV = P^T dO
//   dS = P o (dO V^T - D)                [Lq x Lk] written to global memory (dP = dO V^T is not
//                                        stored: each thread computes its dP_ij and uses it at once)
//   dQ = scale dS K,  dK = scale dS^T Q
// A row that sees no key has L = -inf, and exp(S - L) would be exp(-inf + inf) = NaN: its P is
// set to 0, which makes its dS 0, its dQ row 0, and leaves dK and dV alone (the derivative of the
// forward's O = 0 there). Every sum is in fp32, whatever the inputs' type.
// Cost: two Lq x Lk fp32 buffers per head (8 bytes per score: 2 GiB for one head at N = 16k),
// written once and read three times between them; the variant states this memory and the harness
// refuses a problem whose buffers do not fit. Neighbouring threads read rows of K, V, Q and dO d
// elements apart (uncoalesced), as in chapter 01.
#include <algorithm>

#include "backward.h"
#include "simt/simt.h"

namespace ch07 {
namespace {

constexpr int kTile = 16;  // a block computes a 16 x 16 tile of one [rows x cols] result per head

// Calls f(bh, row, col) for this thread's cell of a [rows x cols] result, in every head: a block
// computes a 16 x 16 tile; row tiles beyond the grid's 65535 y-blocks (a long Lq or Lk with few
// columns is a small result) and heads beyond its 65535 z-blocks are taken in turns.
template <class F>
__device__ __forceinline__ void for_each_cell(const attn::BackwardParams& p, int rows, int cols, F&& f) {
  const int col = static_cast<int>(blockIdx.x * kTile + threadIdx.x);
  if (col >= cols) return;
  for (int row = static_cast<int>(blockIdx.y * kTile + threadIdx.y); row < rows; row += static_cast<int>(gridDim.y) * kTile)
    for (int bh = static_cast<int>(blockIdx.z); bh < p.B * p.H; bh += static_cast<int>(gridDim.z)) f(bh, row, col);
}
template <class T>
__device__ __forceinline__ const T* row_of(const void* x, int bh, int L, int r, int d) {
  return static_cast<const T*>(x) + (static_cast<size_t>(bh) * L + r) * d;
}
__device__ __forceinline__ size_t nn(int bh, const attn::BackwardParams& p, int i, int j) {
  return (static_cast<size_t>(bh) * p.Lq + i) * p.Lk + j;
}

template <class T>
__global__ void p_from_lse_kernel(const attn::BackwardParams p, float* P) {
  for_each_cell(p, p.Lq, p.Lk, [&](int bh, int i, int j) {  // query, key
    const T *q = row_of<T>(p.q, bh, p.Lq, i, p.d), *k = row_of<T>(p.k, bh, p.Lk, j, p.d);
    float s = 0.f;
    for (int c = 0; c < p.d; ++c) s += attn::load(q + c) * attn::load(k + c);
    s = attn::mask_score(p, bh / p.H, bh % p.H, i, j, p.scale * s);
    const float L = p.lse[static_cast<size_t>(bh) * p.Lq + i];
    P[nn(bh, p, i, j)] = L == -INFINITY ? 0.f : expf(s - L);
  });
}

template <class T>
__global__ void dv_kernel(const attn::BackwardParams p, const float* P) {
  for_each_cell(p, p.Lk, p.d, [&](int bh, int j, int c) {  // key, column
    float acc = 0.f;
    for (int i = 0; i < p.Lq; ++i) acc += P[nn(bh, p, i, j)] * attn::load(row_of<T>(p.dout, bh, p.Lq, i, p.d) + c);
    attn::store(static_cast<T*>(p.dv) + (static_cast<size_t>(bh) * p.Lk + j) * p.d + c, acc);
  });
}

template <class T>
__global__ void ds_kernel(const attn::BackwardParams p, const float* P, const float* D, float* dS) {
  for_each_cell(p, p.Lq, p.Lk, [&](int bh, int i, int j) {  // query, key
    const T *dout = row_of<T>(p.dout, bh, p.Lq, i, p.d), *v = row_of<T>(p.v, bh, p.Lk, j, p.d);
    float dp = 0.f;
    for (int c = 0; c < p.d; ++c) dp += attn::load(dout + c) * attn::load(v + c);
    dS[nn(bh, p, i, j)] = P[nn(bh, p, i, j)] * (dp - D[static_cast<size_t>(bh) * p.Lq + i]);
  });
}

template <class T>
__global__ void dq_kernel(const attn::BackwardParams p, const float* dS) {
  for_each_cell(p, p.Lq, p.d, [&](int bh, int i, int c) {  // query, column
    float acc = 0.f;
    for (int j = 0; j < p.Lk; ++j) acc += dS[nn(bh, p, i, j)] * attn::load(row_of<T>(p.k, bh, p.Lk, j, p.d) + c);
    attn::store(static_cast<T*>(p.dq) + (static_cast<size_t>(bh) * p.Lq + i) * p.d + c, p.scale * acc);
  });
}

template <class T>
__global__ void dk_kernel(const attn::BackwardParams p, const float* dS) {
  for_each_cell(p, p.Lk, p.d, [&](int bh, int j, int c) {  // key, column
    float acc = 0.f;
    for (int i = 0; i < p.Lq; ++i) acc += dS[nn(bh, p, i, j)] * attn::load(row_of<T>(p.q, bh, p.Lq, i, p.d) + c);
    attn::store(static_cast<T*>(p.dk) + (static_cast<size_t>(bh) * p.Lk + j) * p.d + c, p.scale * acc);
  });
}

// A [rows x cols] result per head, 16 x 16 threads per block (for_each_cell).
template <class Kernel, class... Args>
cudaError_t launch_cells(Kernel kernel, int rows, int cols, const attn::BackwardParams& p, Args... args) {
  const dim3 grid((cols + kTile - 1) / kTile, std::min((rows + kTile - 1) / kTile, 65535), std::min(p.B * p.H, 65535));
  return simt::launch(kernel, grid, dim3(kTile, kTile), 0, p, args...);
}

}  // namespace

cudaError_t p_from_lse(const attn::BackwardParams& p, float* P) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) { return launch_cells(p_from_lse_kernel<decltype(t)>, p.Lq, p.Lk, p, P); });
}
cudaError_t dv_from_p(const attn::BackwardParams& p, const float* P) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) { return launch_cells(dv_kernel<decltype(t)>, p.Lk, p.d, p, P); });
}
cudaError_t ds_from_p(const attn::BackwardParams& p, const float* P, const float* D, float* dS) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) { return launch_cells(ds_kernel<decltype(t)>, p.Lq, p.Lk, p, P, D, dS); });
}
cudaError_t dq_from_ds(const attn::BackwardParams& p, const float* dS) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) { return launch_cells(dq_kernel<decltype(t)>, p.Lq, p.d, p, dS); });
}
cudaError_t dk_from_ds(const attn::BackwardParams& p, const float* dS) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) { return launch_cells(dk_kernel<decltype(t)>, p.Lk, p.d, p, dS); });
}

}  // namespace ch07
