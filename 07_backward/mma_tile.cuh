// mma_tile.cuh: the pieces of the tensor-core steps (c, d and the dQ pass): tiles in shared
// memory, the three shapes of product the backward needs on mma.sync m16n8k16, and what a warp
// does to its accumulators in between.
//
// Fragments as in kernels/mma.cuh: lane = 4g + t holds rows g and g + 8 of a 16-row accumulator,
// columns 2t and 2t + 1 of each 8-column tile; two neighbouring 8-column tiles of accumulators are
// an A fragment (attn::p_fragment). Tiles are [row][d] in shared memory, rows padded by 8 elements
// (16 bytes) so that the 8 rows an ldmatrix reads fall on different banks, as chapter 05 step c.
#pragma once
#include "05_flash_v2/pipeline.cuh"
#include "05_flash_v2/products.cuh"
#include "backward.h"
#include "kernels/mma.cuh"
#include "simt/ptx.cuh"
#include "simt/simt.h"

namespace ch07::mma {

constexpr int kWarps = 4;
template <int D>
constexpr int kLd = ch05::Padded<D>::kRow;  // elements per padded row, as chapter 05 pads
static_assert(kLd<64> == 64 + 8, "backward.h's shared-memory sizes pad rows to d + 8, as kLd does");

using ch05::lane_id;  // products.cuh

// `rows` rows of D elements (row r at src + r * D) into a padded tile; rows at or past `valid`
// are zeros. Every thread of the block takes part.
template <class T, int D>
__device__ __forceinline__ void load_tile(T* tile, const T* src, int rows, int valid) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * D; e += 32 * kWarps) {
    const int r = e / D, c = e % D;
    tile[r * kLd<D> + c] = r < valid ? src[e] : T{};
  }
}

// Step e: the same tile by 16-byte cp.async, chapter 05's copy (copy_rows): a thread's copies all
// in flight together, where load_tile's 2-byte loads come back four at a time before their
// stores. The caller commits and waits (simt::cp_async_commit, cp_async_wait).
template <class T, int D, int kRows>
__device__ __forceinline__ void copy_tile(T* tile, const T* src, int valid) {
  if (valid >= kRows)
    ch05::copy_rows<T, D, ch05::Padded<D>, kRows, 32 * kWarps, false>(tile, src, kRows);
  else  // the last tile: rows past `valid` zero-filled by the copies
    ch05::copy_rows<T, D, ch05::Padded<D>, kRows, 32 * kWarps, true>(tile, src, valid);
}

// acc (16 x N) = A B^T, with A the warp's 16 rows of one tile and B N rows of another, both
// [row][D]: S = Q K^T in the forward's shape. A's fragments by ldmatrix.x4; B stored row-major is
// the "column-major" operand mma wants, by ldmatrix.x2.
template <class T, int D, int N>
__device__ __forceinline__ void rows_times_rows_t(float (&acc)[N / 8][4], const T* A, const T* B) {
  const int lane = lane_id();
  #pragma unroll
  for (int nt = 0; nt < N / 8; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
  #pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a[4];
    simt::ldmatrix_x4(a, &A[(lane % 16) * kLd<D> + kk * 16 + (lane / 16) * 8]);
    #pragma unroll
    for (int nt = 0; nt < N / 8; ++nt) {
      uint32_t b[2];
      simt::ldmatrix_x2(b, &B[(nt * 8 + lane % 8) * kLd<D> + kk * 16 + (lane / 8) % 2 * 8]);
      simt::mma_m16n8k16<T>(acc[nt], a, b, acc[nt]);
    }
  }
}

// acc (16 x D) += X B, with X (16 x K) in accumulator registers (rounded to T on the way) and B
// K rows of a padded tile [row][D]: the forward's O += P V, chapter 05's product as it is.
template <class T, int K, int D>
__device__ __forceinline__ void regs_times_rows(float (&acc)[D / 8][4], const float (&x)[K / 8][4], const T* B) {
  ch05::accumulate_pv_x2<T, D, K, ch05::Padded<D>>(acc, x, B);
}

// acc (16 x D) += A B, with A the warp's 16 rows of a [row][K] tile of row stride lda, B K rows
// of a tile [row][D].
template <class T, int K, int D>
__device__ __forceinline__ void rows_times_rows(float (&acc)[D / 8][4], const T* A, int lda, const T* B) {
  const int lane = lane_id();
  #pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[4];
    simt::ldmatrix_x4(a, &A[(lane % 16) * lda + kk * 16 + (lane / 16) * 8]);
    #pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      uint32_t b[2];
      simt::ldmatrix_x2_trans(b, &B[(kk * 16 + lane % 16) * kLd<D> + nt * 8]);
      simt::mma_m16n8k16<T>(acc[nt], a, b, acc[nt]);
    }
  }
}

// The row (r = 0, 1: g or g + 8) and column (e = 0..3 of an accumulator tile nt) a lane holds.
__device__ __forceinline__ int acc_row(int e) { return lane_id() / 4 + (e / 2) * 8; }
__device__ __forceinline__ int acc_col(int nt, int e) { return nt * 8 + 2 * (lane_id() % 4) + (e & 1); }

// L of the tile's rows in base 2 (+inf for a row that sees no key, and for rows past the last
// query: exp2(s - L) is then 0 for every score) and D, into shared memory.
__device__ __forceinline__ void load_row_stats(float* Ls, float* Ds, const attn::BackwardParams& p, const float* Dsum,
                                               size_t q_head, int q0, int rows) {
  for (int r = static_cast<int>(threadIdx.x); r < rows; r += 32 * kWarps) {
    const bool in = q0 + r < p.Lq;
    const float L = in ? p.lse[q_head + q0 + r] : -INFINITY;
    Ls[r] = L == -INFINITY ? INFINITY : L * attn::kLog2e;
    Ds[r] = in ? Dsum[q_head + q0 + r] : 0.f;
  }
}

// In place, on a warp's 16 rows x N columns of scores (rows from row0 of their tile): s = S
// becomes P = exp2(scale log2(e) S + mask - L), and dp = dP becomes dS = P o (dP - D). Keys are
// the rows (kKeysAsRows: the transposed orientation of steps c and d) or the columns (the dQ
// pass); L and D are those of the query, from the Q tile starting at query q0; k0 is the K/V
// tile's first key. kMask: is_causal and attn_mask applied, and keys past the last one removed;
// without it the tile must lie wholly inside what every one of its queries sees. kAttnMask as
// attn::tile_score's: false for causal.cu's modes none and causal (with the mask's loads ptxas
// spilled that kernel at d = 128, results/static-archs at 669baa8); dq_pass.cu keeps them: without
// them its d = 96 causal kernel spilled at its 168 registers.
template <int N, bool kMask, bool kKeysAsRows, bool kAttnMask = true>
__device__ __forceinline__ void probabilities(float (&s)[N / 8][4], float (&dp)[N / 8][4], const attn::BackwardParams& p,
                                              int b, int h, int q0, int k0, int row0, const float* Ls, const float* Ds,
                                              float scale_log2) {
  #pragma unroll
  for (int nt = 0; nt < N / 8; ++nt)
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row0 + acc_row(e), c = acc_col(nt, e);
      const int qi = kKeysAsRows ? c : r, key = k0 + (kKeysAsRows ? r : c), i = q0 + qi;
      float x = s[nt][e] * scale_log2;
      if constexpr (kMask) x = attn::tile_score<kAttnMask>(p, b, h, i, key, x);
      const float P = exp2f(x - Ls[qi]);
      s[nt][e] = P;
      dp[nt][e] = P * (dp[nt][e] - Ds[qi]);
    }
}

// dS^T's accumulators, rounded to T, stored as dS [query][key] (row stride lds) from key column
// key0 on: dQ's product reads them as its A operand.
template <class T, int N>
__device__ __forceinline__ void store_transposed(T* dSs, int lds, const float (&ds)[N / 8][4], int key0) {
  #pragma unroll
  for (int nt = 0; nt < N / 8; ++nt)
    #pragma unroll
    for (int e = 0; e < 4; ++e) attn::store(&dSs[acc_col(nt, e) * lds + key0 + acc_row(e)], ds[nt][e]);
}

// A warp's 16 rows x D accumulators, from row `row0` of a head's [L][D] tensor: into T (times
// `scale`), or added to fp32 with atomics. Rows at or past L are left alone.
template <class T, int D>
__device__ __forceinline__ void store_rows(T* out, const float (&acc)[D / 8][4], int row0, int L, float scale) {
  #pragma unroll
  for (int nt = 0; nt < D / 8; ++nt)
    #pragma unroll
    for (int e = 0; e < 4; ++e)
      if (row0 + acc_row(e) < L) attn::store(out + static_cast<size_t>(row0 + acc_row(e)) * D + acc_col(nt, e), scale * acc[nt][e]);
}
template <int D>
__device__ __forceinline__ void atomic_add_rows(float* out, const float (&acc)[D / 8][4], int row0, int L) {
  #pragma unroll
  for (int nt = 0; nt < D / 8; ++nt)
    #pragma unroll
    for (int e = 0; e < 4; ++e)
      if (row0 + acc_row(e) < L) atomicAdd(out + static_cast<size_t>(row0 + acc_row(e)) * D + acc_col(nt, e), acc[nt][e]);
}

// Step d: the kernel is instantiated per mode, so that a problem without an attn_mask carries no
// mask code, and one without is_causal none of the diagonal's.
enum class Mode { none, causal, mask };
template <class F>
cudaError_t dispatch_mode(const attn::BackwardParams& p, F&& f) {
  if (p.mask_kind != attn::MaskKind::none) return f(std::integral_constant<Mode, Mode::mask>{});
  if (p.causal != attn::Causal::none) return f(std::integral_constant<Mode, Mode::causal>{});
  return f(std::integral_constant<Mode, Mode::none>{});
}
// Whether the (Q tile at q0, K/V tile at k0) pair needs the mask: an attn_mask, keys past the
// last one, or a tile whose last key is past the causal diagonal of its first query. Rows past
// the last query need nothing: their L is +inf (load_row_stats).
template <Mode kMode, int Bc>
__device__ __forceinline__ bool needs_mask(const attn::BackwardParams& p, int q0, int k0) {
  return kMode == Mode::mask || k0 + Bc > p.Lk || (kMode == Mode::causal && k0 + Bc - 1 > q0 + p.causal_offset());
}

// Calls f(T{}, std::integral_constant<int, D>{}) for the problem's 16-bit type and a head dim of
// TensorCoreDims; fp32 inputs or another head dim give cudaErrorInvalidValue.
template <class F>
cudaError_t dispatch(const attn::BackwardParams& p, F&& f) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    if constexpr (std::is_same_v<decltype(t), float>) {
      return cudaErrorInvalidValue;
    } else {
      return attn::dispatch_head_dim(TensorCoreDims{}, p.d, [&](auto d) { return f(t, d); });
    }
  });
}

}  // namespace ch07::mma
