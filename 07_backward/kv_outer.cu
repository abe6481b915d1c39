// kv_outer.cu: step b. FlashAttention-2's backward (the FA2 paper's Algorithm 2), on CUDA cores.
//
// Step a wrote P and dS to global memory: 8 bytes per score. Here nothing N x N leaves the chip.
// The loops are those of FlashAttention-1's forward, K/V outside: a block owns one tile of Bc keys
// of one head, keeps its K_j and V_j in shared memory and its dK_j and dV_j in registers for its
// whole life, and walks every tile of Br queries:
//   S  = Q_i K_j^T,  P = exp(scale S + mask - L_i)     recomputed from the forward's L
//   dP = dO_i V_j^T, dS = P o (dP - D_i)               D from preprocess.cu
//   dV_j += P^T dO_i,  dK_j += dS^T Q_i                 on chip, written once at the end
//   dQ_i += dS K_j                                      every K/V tile adds to every Q row: atomics
// The outer loop is over K/V because dK_j and dV_j are sums over all queries and dQ_i a sum over
// all keys: one of the two must be accumulated across blocks. FlashAttention-2 keeps the two of
// them on chip (dK and dV: 2 Bc x d) and sends the smaller one, dQ, to an fp32 accumulator in
// global memory with atomicAdd (zeroed by preprocess.cu, converted by convert_dq).
// Inside the block: 4 warps; for each Q tile the 32 x 32 scores are shared out 8 per thread
// (P and dS go through shared memory, both orientations are needed); thread t owns key t % 32 and
// every 4th column of dK and dV; dQ_i's 32 x d sums are shared out column-wise so that the
// atomics of a warp hit consecutive addresses. Scores in base 2 with L in base 2, as the forward.
// Cost: Br x d fp32 atomics per (Q tile, K/V tile) pair, Tc of them for every element of dQ;
// Q, dO, L and D read Tc times, K and V once. Fully masked rows: L = -inf is turned into +inf
// (FlashAttention's convention) so that exp2(s - L) = 0 for every score of the row.
#include "backward.h"
#include "simt/simt.h"

namespace ch07 {
namespace {

constexpr int kWarps = 4, Br = kKvOuterBr, Bc = kKvOuterBc, kCols = 4;  // kCols threads share a key's columns
static_assert(Bc * kCols == 32 * kWarps && Br * Bc == 8 * 32 * kWarps, "the thread mappings below");

template <class T, int D>
__global__ void kv_outer_kernel(const attn::BackwardParams p, const float* Dsum, float* dq_accum) {
  constexpr int LD = D + 1;  // K and V rows padded: lanes reading 32 different rows hit 32 banks
  float* Ks = simt::dynamic_smem<float>();  // [Bc][LD]
  float* Vs = Ks + Bc * LD;                 // [Bc][LD]
  float* Qs = Vs + Bc * LD;                 // [Br][D]
  float* dOs = Qs + Br * D;                 // [Br][D]
  float* Ps = dOs + Br * D;                 // [Br][Bc + 1]
  float* dSs = Ps + Br * (Bc + 1);          // [Br][Bc + 1]
  float* Ls = dSs + Br * (Bc + 1);          // [Br]: L in base 2, +inf for a row that sees nothing
  float* Ds = Ls + Br;                      // [Br]
  const int tid = static_cast<int>(threadIdx.x);
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, k0 = static_cast<int>(blockIdx.x) * Bc;
  const size_t q_head = static_cast<size_t>(bh) * p.Lq, k_head = static_cast<size_t>(bh) * p.Lk;
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int e = tid; e < Bc * D; e += 32 * kWarps) {  // K_j, V_j: zeros past the last key
    const int r = e / D, c = e % D;
    const bool in = k0 + r < p.Lk;
    Ks[r * LD + c] = in ? attn::load(static_cast<const T*>(p.k) + (k_head + k0 + r) * D + c) : 0.f;
    Vs[r * LD + c] = in ? attn::load(static_cast<const T*>(p.v) + (k_head + k0 + r) * D + c) : 0.f;
  }
  const int my_key = tid % Bc, my_col = tid / Bc;  // dK, dV: key my_key, columns my_col + kCols k
  float dk[D / kCols] = {}, dv[D / kCols] = {};

  for (int q0 = 0; q0 < p.Lq; q0 += Br) {
    __syncthreads();  // the previous Q tile is consumed
    for (int e = tid; e < Br * D; e += 32 * kWarps) {
      const int r = e / D;
      const bool in = q0 + r < p.Lq;
      Qs[e] = in ? attn::load(static_cast<const T*>(p.q) + (q_head + q0) * D + e) : 0.f;
      dOs[e] = in ? attn::load(static_cast<const T*>(p.dout) + (q_head + q0) * D + e) : 0.f;
    }
    if (tid < Br) {
      const bool in = q0 + tid < p.Lq;
      const float L = in ? p.lse[q_head + q0 + tid] : -INFINITY;
      Ls[tid] = L == -INFINITY ? INFINITY : L * attn::kLog2e;
      Ds[tid] = in ? Dsum[q_head + q0 + tid] : 0.f;
    }
    __syncthreads();

    // P and dS of the 32 x 32 tile: thread t takes key t % 32 of rows t / 32, t / 32 + 4, ...
    for (int r = tid / Bc; r < Br; r += 32 * kWarps / Bc) {
      const int j = tid % Bc, i = q0 + r, key = k0 + j;
      float s = 0.f, dp = 0.f;
      for (int c = 0; c < D; ++c) s += Qs[r * D + c] * Ks[j * LD + c], dp += dOs[r * D + c] * Vs[j * LD + c];
      s = attn::tile_score(p, b, h, i, key, s * scale_log2);
      const float P = exp2f(s - Ls[r]);
      Ps[r * (Bc + 1) + j] = P;
      dSs[r * (Bc + 1) + j] = P * (dp - Ds[r]);
    }
    __syncthreads();

    #pragma unroll
    for (int k = 0; k < D / kCols; ++k) {  // dV_j += P^T dO_i, dK_j += dS^T Q_i
      const int c = my_col + kCols * k;
      for (int r = 0; r < Br; ++r) {
        dv[k] += Ps[r * (Bc + 1) + my_key] * dOs[r * D + c];
        dk[k] += dSs[r * (Bc + 1) + my_key] * Qs[r * D + c];
      }
    }
    for (int e = tid; e < Br * D; e += 32 * kWarps) {  // dQ_i += dS K_j, into the fp32 accumulator
      const int r = e / D, c = e % D;
      if (q0 + r >= p.Lq) continue;
      float acc = 0.f;
      for (int j = 0; j < Bc; ++j) acc += dSs[r * (Bc + 1) + j] * Ks[j * LD + c];
      atomicAdd(dq_accum + (q_head + q0 + r) * D + c, acc);
    }
  }

  if (k0 + my_key >= p.Lk) return;
  T* dK = static_cast<T*>(p.dk) + (k_head + k0 + my_key) * D;
  T* dV = static_cast<T*>(p.dv) + (k_head + k0 + my_key) * D;
  #pragma unroll
  for (int k = 0; k < D / kCols; ++k) {
    attn::store(dK + my_col + kCols * k, p.scale * dk[k]);
    attn::store(dV + my_col + kCols * k, dv[k]);
  }
}

}  // namespace

cudaError_t kv_outer(const attn::BackwardParams& p, const float* D, float* dq_accum) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return attn::dispatch_head_dim(CudaCoreDims{}, p.d, [&](auto d) {
      constexpr int Dh = decltype(d)::value;
      return simt::launch(kv_outer_kernel<decltype(t), Dh>, dim3((p.Lk + Bc - 1) / Bc, p.B * p.H), dim3(32 * kWarps),
                          kv_outer_smem_bytes(Dh),
                          p, D, dq_accum);
    });
  });
}

}  // namespace ch07
