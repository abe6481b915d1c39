// o_in_registers.cu: step d. Step c with its two loops swapped: O_i never leaves the registers.
//
// Step c followed Algorithm 1: K/V tiles outside, Q tiles inside, so every (K/V tile, Q tile) pair
// read Q_i again and moved O_i, l and m to global memory and back, Tc times per query row. Here a
// block still owns one (batch, head), but takes its Q tiles one after another and, for each, runs
// through every K/V tile: Q_i is loaded once and stays in shared memory, the thread's 8 x 8 block
// of O_i and its rows' m and l stay in registers, and O_i is divided by l and written once, at
// the end. This is the loop order FlashAttention-2 makes official; the products and the softmax
// are step c's (register_tiles.cuh). K_j and V_j now take turns in one buffer, so that Q_i, the
// K/V buffer and P_ij fit in shared memory at d = 128.
// Cost: still B*H blocks, one per (batch, head): a problem with few heads leaves SMs idle, which
// chapter 05 fixes with a block per Q tile; and K_j, V_j are read once per Q tile.
#include "flash_v1.h"
#include "register_tiles.cuh"
#include "simt/simt.h"

namespace ch04 {
namespace {

using attn::gemm::BK;
using attn::gemm::BM;
using attn::gemm::kRow;
using attn::gemm::Shape;
using attn::gemm::TM;
using attn::gemm::TN;

// Shared memory, in floats: Q_i in Bc/32 slices [Br][kRow]; one buffer for K_j (Bc/32 slices
// [Bc][kRow]) and then V_j (Bc/32 slices [BK][BN]); P_ij [Br][kRowP].
template <int BN, int kSlices>
constexpr size_t kQFloats = static_cast<size_t>(kSlices) * BM * kRow;
template <int BN, int kSlices>
constexpr size_t kKVFloats = kSlices * BN * kRow > BN * BN ? static_cast<size_t>(kSlices) * BN * kRow : static_cast<size_t>(BN) * BN;
template <int BN, int kSlices>
constexpr size_t kSmemFloats = kQFloats<BN, kSlices> + kKVFloats<BN, kSlices> + static_cast<size_t>(BM) * kRowP<BN>;

// kSlices = Bc / 32: the slices of 32 columns of Q_i and K_j (zeros past d).
template <class T, int BN, int kSlices>
__global__ void __launch_bounds__(Shape<BN>::threads) o_in_registers_kernel(const attn::AttentionParams p) {
  constexpr int threads = Shape<BN>::threads;
  const int d = p.d, bh = static_cast<int>(blockIdx.x), b = bh / p.H, h = bh % p.H;
  const int tx = static_cast<int>(threadIdx.x) % Shape<BN>::TX, ty = static_cast<int>(threadIdx.x) / Shape<BN>::TX;
  float* smem = simt::dynamic_smem<float>();
  auto Qi = reinterpret_cast<float(*)[BM][kRow]>(smem);                                   // [kSlices][Br][kRow]
  float* kv = smem + kQFloats<BN, kSlices>;
  auto Kj = reinterpret_cast<float(*)[BN][kRow]>(kv);                                     // [kSlices][Bc][kRow]
  auto Vj = reinterpret_cast<float(*)[BK][BN]>(kv);                                       // [Bc / 32][BK][BN]
  auto Pij = reinterpret_cast<float(*)[kRowP<BN>]>(kv + kKVFloats<BN, kSlices>);          // [Br][kRowP]
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * d;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * d;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * d;
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int q0 = 0; q0 < p.Lq; q0 += BM) {  // Q tiles: now the outer loop
    // No barrier needed before Q_i is overwritten: the last S_ij that read it is two barriers back.
    #pragma unroll
    for (int s = 0; s < kSlices; ++s) attn::gemm::load_rows<BM, threads>(Qi[s], Q, p.Lq, d, q0, BK * s);
    float o[TM][TN] = {}, m[TM], l[TM] = {};
    #pragma unroll
    for (int i = 0; i < TM; ++i) m[i] = -INFINITY;
    for (int k0 = 0; k0 < p.Lk; k0 += BN) {  // K/V tiles: the inner loop
      __syncthreads();  // Q_i is in; V_j and P_ij of the previous tile are consumed
      #pragma unroll
      for (int s = 0; s < kSlices; ++s) attn::gemm::load_rows<BN, threads>(Kj[s], K, p.Lk, d, k0, BK * s);
      __syncthreads();
      float S[TM][TN] = {};
      #pragma unroll 1  // one copy of a slice's product, as in step c
      for (int s = 0; s < kSlices; ++s) attn::gemm::multiply_bt<BN>(S, Qi[s], Kj[s], tx, ty, p.Lq - q0, p.Lk - k0);
      softmax_tile<BN>(p, scale_log2, b, h, q0, k0, S, m, l, o, Pij, tx, ty);
      __syncthreads();  // P_ij is complete; every thread is done with K_j: the buffer takes V_j
      #pragma unroll
      for (int s = 0; s < BN / BK; ++s) attn::gemm::load_kn<BN>(Vj[s], V, p.Lk, d, k0 + BK * s, 0);
      __syncthreads();
      #pragma unroll 1
      for (int s = 0; s < BN / BK; ++s)
        attn::gemm::multiply_kn<BN>(o, reinterpret_cast<const float(*)[kRowP<BN>]>(&Pij[0][BK * s]), Vj[s], tx, ty, p.Lq - q0, d);
    }
    T* out = static_cast<T*>(p.o) + static_cast<size_t>(bh) * p.Lq * d;
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int qi = q0 + attn::gemm::row_of<BN>(ty, i);
      if (qi >= p.Lq) continue;
      const float inv_l = l[i] > 0.f ? 1.f / l[i] : 0.f;  // no visible key: O = 0
      #pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int c = attn::gemm::col_of<BN, false>(tx, j);
        if (c < d) attn::store(out + static_cast<size_t>(qi) * d + c, o[i][j] * inv_l);
      }
      if (tx == 0 && p.lse)
        p.lse[static_cast<size_t>(bh) * p.Lq + qi] = l[i] > 0.f ? (m[i] + log2f(l[i])) * attn::kLn2 : -INFINITY;
    }
  }
}

template <class T, int BN, int kSlices>
cudaError_t launch(const attn::AttentionParams& p) {
  return simt::launch(o_in_registers_kernel<T, BN, kSlices>, dim3(p.B * p.H), dim3(Shape<BN>::threads),
                      kSmemFloats<BN, kSlices> * sizeof(float), p);
}

}  // namespace

size_t o_in_registers_smem_bytes(int d) {
  return (d <= 64 ? kSmemFloats<64, 2> : kSmemFloats<128, 4>) * sizeof(float);  // the tiles launch() picks
}

cudaError_t o_in_registers(const attn::AttentionParams& p) {
  if (p.d > kRegisterTilesMaxD) return cudaErrorInvalidValue;
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    // Bc = 64 keys and 2 slices of 32 columns up to d = 64, else 128 and 4: the slices past d are
    // zeros, which costs a small d some work and spares the build half the instantiations.
    return p.d <= 64 ? launch<T, 64, 2>(p) : launch<T, 128, 4>(p);
  });
}

}  // namespace ch04
