// register_tiles.cu: step c. Step b's structure, with chapter 01's register-blocked tiles.
//
// Step b gave each thread one row of the Q tile: every FMA read Q_i with a 32-way bank conflict
// and K_j from shared memory, and 64 threads ran per block. This kernel keeps FlashAttention-1's
// structure (a block per (batch, head), K/V tiles in the outer loop, O, l and m in global memory
// between them) but computes both products as chapter 01's step c GEMM does (kernels/gemm.cuh):
// 128 or 256 threads, each owning an 8 x 8 block of S_ij and of O_i. K_j and V_j stay in shared
// memory for the whole inner loop, and every Q_i passes by them. A row's Bc scores are spread over
// the TX lanes that share the row, so its maximum and sum are TX-lane shuffles (register_tiles.cuh,
// shared with step d). The thread's block of O_i, with its rows' m and l, is read from global memory into
// registers, merged with P_ij V_j, and written back normalized, as Algorithm 1's line 12 does,
// in the order the threads hold it (each warp access one contiguous 512-byte run).
// Tiles: Br = 128 query rows; Bc = 64 keys at d <= 64, 128 up to d = 128 (the largest d whose
// K_j, V_j and P_ij fit in an SM's shared memory).
// Cost: O_i, l and m still cross to global memory for every (K/V tile, Q tile) pair, Q is read
// Tc times, and the grid is still B*H blocks: chapter 05 turns the loops around.
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

// Shared memory, in floats, for Bc = BN: K_j in Bc/32 slices [Bc][kRow], V_j in Bc/32 slices
// [BK][BN], and one buffer that holds Q_i (Bc/32 slices [Br][kRow]) while S_ij is computed and then
// P_ij (the two take the same room: Bc/32 x 36 = Bc + TX floats per row).
template <int BN, int kSlices>
constexpr size_t kSmemFloats = static_cast<size_t>(kSlices) * BN * kRow + static_cast<size_t>(BN) * BN + static_cast<size_t>(BM) * kRowP<BN>;
static_assert(4 * kRow <= kRowP<128> && 2 * kRow <= kRowP<64>, "Q_i fits where P_ij goes");

// What a thread carries from one K/V tile to the next for one Q tile: its 8 x 8 block of O_i and
// its 8 rows' m and l, 20 float4. Only this kernel reads them back, so they are stored in the
// order the threads hold them, float4 f of thread t at f * threads + t: every access of a warp
// is 512 contiguous bytes.
constexpr int kState = (TM * TN + 2 * TM) / 4;
template <int BN>
__host__ __device__ constexpr size_t state_float4s(int Lq) {
  return static_cast<size_t>((Lq + BM - 1) / BM) * kState * Shape<BN>::threads;  // per head
}

// kSlices = Bc / 32: the slices of 32 columns of Q_i and K_j (zeros past d), unrolled.
template <class T, int BN, int kSlices>
__global__ void __launch_bounds__(Shape<BN>::threads) register_tiles_kernel(const attn::AttentionParams p, float4* state) {
  constexpr int TX = Shape<BN>::TX, threads = Shape<BN>::threads;
  const int d = p.d, bh = static_cast<int>(blockIdx.x), b = bh / p.H, h = bh % p.H;
  const int tx = static_cast<int>(threadIdx.x) % TX, ty = static_cast<int>(threadIdx.x) / TX;
  float* smem = simt::dynamic_smem<float>();
  auto Kj = reinterpret_cast<float(*)[BN][kRow]>(smem);                            // [kSlices][Bc][kRow]
  auto Vj = reinterpret_cast<float(*)[BK][BN]>(smem + kSlices * BN * kRow);        // [Bc / 32][BK][BN]
  float* buffer = smem + kSlices * BN * kRow + BN * BN;
  auto Qi = reinterpret_cast<float(*)[BM][kRow]>(buffer);                          // [kSlices][Br][kRow]
  auto Pij = reinterpret_cast<float(*)[kRowP<BN>]>(buffer);                        // [Br][kRowP]: P~_ij
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * d;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * d;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * d;
  const int tid = static_cast<int>(threadIdx.x);
  float4* st = state + static_cast<size_t>(bh) * state_float4s<BN>(p.Lq);
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int k0 = 0; k0 < p.Lk; k0 += BN) {  // K/V tiles: the outer loop
    const bool first = k0 == 0, last = k0 + BN >= p.Lk;
    __syncthreads();  // the previous K_j, V_j are consumed
    #pragma unroll
    for (int s = 0; s < kSlices; ++s) attn::gemm::load_rows<BN, threads>(Kj[s], K, p.Lk, d, k0, BK * s);
    #pragma unroll
    for (int s = 0; s < BN / BK; ++s) attn::gemm::load_kn<BN>(Vj[s], V, p.Lk, d, k0 + BK * s, 0);
    for (int q0 = 0; q0 < p.Lq; q0 += BM) {  // Q tiles: the inner loop
      __syncthreads();  // K_j, V_j are in; the previous P_ij is consumed
      #pragma unroll
      for (int s = 0; s < kSlices; ++s) attn::gemm::load_rows<BM, threads>(Qi[s], Q, p.Lq, d, q0, BK * s);
      __syncthreads();
      // The two products' loops stay loops (unroll 1): one copy of a slice's 2,000-odd
      // instructions each, not d/32 and Bc/32 copies, so that the loop fits the instruction cache.
      float S[TM][TN] = {};
      #pragma unroll 1
      for (int s = 0; s < kSlices; ++s) attn::gemm::multiply_bt<BN>(S, Qi[s], Kj[s], tx, ty, p.Lq - q0, p.Lk - k0);
      __syncthreads();  // every thread is done with Q_i: the buffer takes P_ij
      // This thread's part of O_i (normalized), m (in base 2) and l, as the previous K/V tiles left them.
      float o[TM][TN], m[TM], l[TM];
      float4* mine = st + static_cast<size_t>(q0 / BM) * kState * threads + tid;
      #pragma unroll
      for (int f = 0; f < kState; ++f) {
        const float4 v = first ? make_float4(0.f, 0.f, 0.f, 0.f) : mine[f * threads];
        float* to = f < TM * TN / 4 ? &o[f / (TN / 4)][4 * (f % (TN / 4))] : f < kState - TM / 4 ? &m[4 * (f - TM * TN / 4)] : &l[4 * (f - kState + TM / 4)];
        to[0] = v.x, to[1] = v.y, to[2] = v.z, to[3] = v.w;
      }
      // Line 12 of Algorithm 1 in two halves: un-normalize the old O_i here (softmax_tile rescales
      // it by alpha), divide by the new l once P_ij V_j is added.
      #pragma unroll
      for (int i = 0; i < TM; ++i) {
        if (first) m[i] = -INFINITY;
        #pragma unroll
        for (int j = 0; j < TN; ++j) o[i][j] *= l[i];
      }
      softmax_tile<BN>(p, scale_log2, b, h, q0, k0, S, m, l, o, Pij, tx, ty);
      __syncthreads();  // P_ij is complete
      #pragma unroll 1
      for (int s = 0; s < BN / BK; ++s)
        attn::gemm::multiply_kn<BN>(o, reinterpret_cast<const float(*)[kRowP<BN>]>(&Pij[0][BK * s]), Vj[s], tx, ty, p.Lq - q0, d);
      #pragma unroll
      for (int i = 0; i < TM; ++i) {
        const float inv_l = l[i] > 0.f ? 1.f / l[i] : 0.f;  // no visible key: O = 0
        #pragma unroll
        for (int j = 0; j < TN; ++j) o[i][j] *= inv_l;
      }
      if (!last) {
        #pragma unroll
        for (int f = 0; f < kState; ++f) {
          const float* from = f < TM * TN / 4 ? &o[f / (TN / 4)][4 * (f % (TN / 4))] : f < kState - TM / 4 ? &m[4 * (f - TM * TN / 4)] : &l[4 * (f - kState + TM / 4)];
          mine[f * threads] = make_float4(from[0], from[1], from[2], from[3]);
        }
        continue;
      }
      T* out = static_cast<T*>(p.o) + static_cast<size_t>(bh) * p.Lq * d;
      #pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int qi = q0 + attn::gemm::row_of<BN>(ty, i);
        if (qi >= p.Lq) continue;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int c = attn::gemm::col_of<BN, false>(tx, j);
          if (c < d) attn::store(out + static_cast<size_t>(qi) * d + c, o[i][j]);
        }
        if (tx == 0 && p.lse)
          p.lse[static_cast<size_t>(bh) * p.Lq + qi] = l[i] > 0.f ? (m[i] + log2f(l[i])) * attn::kLn2 : -INFINITY;
      }
    }
  }
}

template <class T, int BN, int kSlices>
cudaError_t launch(const attn::AttentionParams& p, float4* state) {
  return simt::launch(register_tiles_kernel<T, BN, kSlices>, dim3(p.B * p.H), dim3(Shape<BN>::threads),
                      kSmemFloats<BN, kSlices> * sizeof(float), p, state);
}

}  // namespace

size_t register_tiles_state_bytes(size_t heads, int Lq, int d) {
  return heads * (d <= 64 ? state_float4s<64>(Lq) : state_float4s<128>(Lq)) * sizeof(float4);
}

size_t register_tiles_smem_bytes(int d) {
  return (d <= 64 ? kSmemFloats<64, 2> : kSmemFloats<128, 4>) * sizeof(float);  // the tiles launch() picks
}

cudaError_t register_tiles(const attn::AttentionParams& p, void* state) {
  if (p.d > kRegisterTilesMaxD || reinterpret_cast<uintptr_t>(state) % 16 != 0) return cudaErrorInvalidValue;
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    float4* s = static_cast<float4*>(state);
    // Bc = 64 keys and 2 slices of 32 columns up to d = 64, else 128 and 4 (as step d).
    return p.d <= 64 ? launch<T, 64, 2>(p, s) : launch<T, 128, 4>(p, s);
  });
}

}  // namespace ch04
