// pipelined.cu: step d. Step c with the memory pipeline of a fast kernel.
//
// Step c loaded each K and V tile with plain loads while the tensor cores waited, and read each
// 8 x 8 operand with its own ldmatrix. Three changes, none of which touches the math:
//  - cp.async, two stages: the next K/V tile is copied from global to shared memory by the copy
//    engine while this one is computed on; cp_async_wait<1> waits for this tile only. Rows past
//    the end of the sequence are zero-filled by the copy itself (cp_async_cg_16_zfill).
//  - A swizzled shared-memory layout instead of padding: the 16-byte chunk c of row r is stored
//    at chunk c ^ (r % 8). The 8 rows an ldmatrix reads at one logical chunk then sit in 8
//    different chunks, i.e. 8 different groups of 4 banks: no bank conflict, and no wasted pad.
//    (Head dims that are not a multiple of 64 keep the padded rows of step c.)
//  - ldmatrix.x4: one instruction loads the B fragments of two 8-column tiles (K for S, V for O).
// The tile sizes depend on the head dim (pipelined_tiles): the registers of S grow with Bc and
// those of O with d, so a larger d gets a smaller Bc.
// Cost: twice the shared memory for K and V; a barrier per tile still separates copy and use.
#include "flash_v2.h"
#include "kernels/mma.cuh"
#include "kernels/numeric.cuh"
#include "simt/ptx.cuh"
#include "simt/simt.h"

namespace ch05 {
namespace {

constexpr int kWarps = 4, Br = 16 * kWarps, kStages = 2;
constexpr float kLn2 = 0.6931471805599453f;

template <int D>
__host__ __device__ constexpr int block_cols() {
  return D <= 64 ? 128 : D <= 128 ? 64 : 32;
}

// Where element (row, col) of a tile with D columns lives in shared memory, in elements.
template <int D>
__device__ __forceinline__ int at(int row, int col) {
  if constexpr (D % 64 == 0) {
    return row * D + (((col / 8) ^ (row % 8)) * 8) + col % 8;  // swizzled 16-byte chunks
  } else {
    return row * (D + 8) + col;  // padded rows
  }
}
template <int D>
__host__ __device__ constexpr int tile_elems(int rows) {
  return rows * (D % 64 == 0 ? D : D + 8);
}

// rows x D elements from global memory (row r at src + r * D) into a tile, by 16-byte cp.async;
// rows at or past `valid` are zero-filled.
template <class T, int D>
__device__ __forceinline__ void copy_tile(T* tile, const T* src, int rows, int valid) {
  for (int c = static_cast<int>(threadIdx.x); c < rows * D / 8; c += 32 * kWarps) {
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool in = r < valid;
    simt::cp_async_cg_16_zfill(tile + at<D>(r, col), src + static_cast<size_t>(in ? r : 0) * D + col, in ? 16 : 0);
  }
}

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) pipelined_kernel(const attn::AttentionParams p) {
  constexpr int Bc = block_cols<D>();
  T* Qs = simt::dynamic_smem<T>();               // [Br] rows
  T* Ks = Qs + tile_elems<D>(Br);                // [kStages][Bc] rows
  T* Vs = Ks + kStages * tile_elems<D>(Bc);      // [kStages][Bc] rows
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, q0 = static_cast<int>(blockIdx.x) * Br;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const int tiles = (p.Lk + Bc - 1) / Bc;
  auto copy_kv = [&](int j) {  // K/V tile j into stage j % kStages, as one cp.async group
    const int k0 = j * Bc;
    copy_tile<T, D>(Ks + (j % kStages) * tile_elems<D>(Bc), K + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    copy_tile<T, D>(Vs + (j % kStages) * tile_elems<D>(Bc), V + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    simt::cp_async_commit();
  };

  copy_tile<T, D>(Qs, Q + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
  simt::cp_async_commit();
  copy_kv(0);
  simt::cp_async_wait<1>();  // Q has landed (tile 0 may still fly)
  __syncthreads();
  uint32_t qa[D / 16][4];
  for (int kk = 0; kk < D / 16; ++kk) simt::ldmatrix_x4(qa[kk], &Qs[at<D>(warp * 16 + lane % 16, kk * 16 + (lane / 16) * 8)]);

  const int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float o[D / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      copy_kv(j + 1);            // the next tile flies while this one is used
      simt::cp_async_wait<1>();  // this tile has landed
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();  // ... for every thread's part of it
    const T* Kt = Ks + (j % kStages) * tile_elems<D>(Bc);
    const T* Vt = Vs + (j % kStages) * tile_elems<D>(Bc);
    const int k0 = j * Bc;

    float s[Bc / 8][4];
    for (int nt = 0; nt < Bc / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
    for (int kk = 0; kk < D / 16; ++kk)
      for (int nt = 0; nt < Bc / 8; nt += 2) {
        uint32_t kb[4];  // B fragments of column tiles nt and nt + 1 (matrix lane / 8)
        const int mtx = lane / 8;
        simt::ldmatrix_x4(kb, &Kt[at<D>((nt + mtx / 2) * 8 + lane % 8, kk * 16 + (mtx % 2) * 8)]);
        const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
        simt::mma_m16n8k16<T>(s[nt], qa[kk], b0, s[nt]);
        simt::mma_m16n8k16<T>(s[nt + 1], qa[kk], b1, s[nt + 1]);
      }
    float m_new[2] = {m[0], m[1]};
    for (int nt = 0; nt < Bc / 8; ++nt)
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, key = k0 + nt * 8 + 2 * t + (e & 1);
        s[nt][e] = key < p.Lk && row[r] < p.Lq
                       ? attn::mask_score(p, b, h, row[r], key, s[nt][e] * scale_log2, attn::kLog2e)
                       : -INFINITY;
        m_new[r] = fmaxf(m_new[r], s[nt][e]);
      }
    float alpha[2], m_use[2], sum[2] = {0.f, 0.f};
    for (int r = 0; r < 2; ++r) {
      m_new[r] = attn::quad_max(m_new[r]);
      m_use[r] = m_new[r] == -INFINITY ? 0.f : m_new[r];
      alpha[r] = exp2f(m[r] - m_use[r]);
      m[r] = m_new[r];
    }
    for (int nt = 0; nt < Bc / 8; ++nt)
      for (int e = 0; e < 4; ++e) sum[e / 2] += s[nt][e] = exp2f(s[nt][e] - m_use[e / 2]);
    for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + sum[r];
    for (int nt = 0; nt < D / 8; ++nt) o[nt][0] *= alpha[0], o[nt][1] *= alpha[0], o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];

    for (int kk = 0; kk < Bc / 16; ++kk) {
      uint32_t pa[4];
      attn::p_fragment<T>(pa, s[2 * kk], s[2 * kk + 1]);
      for (int nt = 0; nt < D / 8; nt += 2) {
        uint32_t vb[4];  // B fragments of output column tiles nt and nt + 1, transposed
        const int mtx = lane / 8;
        simt::ldmatrix_x4_trans(vb, &Vt[at<D>(kk * 16 + (mtx % 2) * 8 + lane % 8, (nt + mtx / 2) * 8)]);
        const uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
        simt::mma_m16n8k16<T>(o[nt], pa, b0, o[nt]);
        simt::mma_m16n8k16<T>(o[nt + 1], pa, b1, o[nt + 1]);
      }
    }
    __syncthreads();  // this stage is refilled by the copy issued next iteration
  }

  for (int r = 0; r < 2; ++r) {
    const float lr = attn::quad_sum(l[r]);
    const float inv_l = lr > 0.f ? 1.f / lr : 0.f;
    if (row[r] >= p.Lq) continue;
    T* out = static_cast<T*>(p.o) + (static_cast<size_t>(bh) * p.Lq + row[r]) * D;
    for (int nt = 0; nt < D / 8; ++nt) {
      attn::store(out + nt * 8 + 2 * t, o[nt][2 * r] * inv_l);
      attn::store(out + nt * 8 + 2 * t + 1, o[nt][2 * r + 1] * inv_l);
    }
    if (t == 0 && p.lse) p.lse[static_cast<size_t>(bh) * p.Lq + row[r]] = lr > 0.f ? (m[r] + log2f(lr)) * kLn2 : -INFINITY;
  }
}

}  // namespace

Tiles pipelined_tiles(int d) {
  return {Br, d <= 64 ? block_cols<64>() : d <= 128 ? block_cols<128>() : block_cols<256>(), kStages};
}

cudaError_t pipelined(const attn::AttentionParams& p) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, float>) {
      return cudaErrorInvalidValue;
    } else {
      return attn::dispatch_head_dim<32, 64, 96, 128, 256>(p.d, [&](auto d) {
        constexpr int D = decltype(d)::value;
        const size_t smem = (tile_elems<D>(Br) + 2 * kStages * tile_elems<D>(block_cols<D>())) * sizeof(T);
        return simt::launch(pipelined_kernel<T, D>, dim3((p.Lq + Br - 1) / Br, p.B * p.H), dim3(32 * kWarps), smem, p);
      });
    }
  });
}

}  // namespace ch05
