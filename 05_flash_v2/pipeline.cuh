// pipeline.cuh: the memory side of step d, shared with chapter 06: shared-memory layout, cp.async
// tile copies, and the two products with ldmatrix.x4 operands.
#pragma once
#include "fa2_tile.cuh"
#include "simt/ptx.cuh"
#include "simt/simt.h"

namespace ch05::pipe {

constexpr int kWarps = 4, Br = 16 * kWarps, kStages = 2;

// Keys per K/V tile for head dim D: the accumulators of S grow with Bc and those of O with D, so
// a larger D gets a smaller Bc.
template <int D>
__host__ __device__ constexpr int block_cols() {
  return D <= 64 ? 128 : D <= 128 ? 64 : 32;
}

// Where element (row, col) of a tile with D columns lives in shared memory, in elements. With D a
// multiple of 64, the 16-byte chunk c of row r is stored at chunk c ^ (r % 8): the 8 rows an
// ldmatrix reads at one logical chunk fall in 8 different chunks, 8 different groups of 4 banks.
// Other head dims keep rows padded by 8 elements, which staggers them the same way.
template <int D>
__device__ __forceinline__ int at(int row, int col) {
  if constexpr (D % 64 == 0) {
    return row * D + (((col / 8) ^ (row % 8)) * 8) + col % 8;
  } else {
    return row * (D + 8) + col;
  }
}
template <int D>
__host__ __device__ constexpr int tile_elems(int rows) {
  return rows * (D % 64 == 0 ? D : D + 8);
}

// `rows` rows of D elements (row r at src + r * D) into a tile, by 16-byte cp.async from every
// thread of the block; rows at or past `valid` are zero-filled by the copy itself.
template <class T, int D>
__device__ __forceinline__ void copy_tile(T* tile, const T* src, int rows, int valid) {
  for (int c = static_cast<int>(threadIdx.x); c < rows * D / 8; c += 32 * kWarps) {
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool in = r < valid;
    simt::cp_async_cg_16_zfill(tile + at<D>(r, col), src + static_cast<size_t>(in ? r : 0) * D + col, in ? 16 : 0);
  }
}

// This warp's 16 rows of the Q tile as A fragments, one per 16 columns.
template <class T, int D>
__device__ __forceinline__ void load_q(uint32_t (&qa)[D / 16][4], const T* Qs) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  #pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) simt::ldmatrix_x4(qa[kk], &Qs[at<D>(warp * 16 + lane % 16, kk * 16 + (lane / 16) * 8)]);
}

// S (16 x Bc) = Q K^T; one ldmatrix.x4 gives the B fragments of two 8-column tiles.
template <class T, int D, int Bc>
__device__ __forceinline__ void scores(float (&s)[Bc / 8][4], const uint32_t (&qa)[D / 16][4], const T* Kt) {
  const int lane = static_cast<int>(threadIdx.x % 32), mtx = lane / 8;  // the 8x8 matrix this lane addresses
  #pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
  #pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    #pragma unroll
    for (int nt = 0; nt < Bc / 8; nt += 2) {
      uint32_t kb[4];
      simt::ldmatrix_x4(kb, &Kt[at<D>((nt + mtx / 2) * 8 + lane % 8, kk * 16 + (mtx % 2) * 8)]);
      const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
      simt::mma_m16n8k16<T>(s[nt], qa[kk], b0, s[nt]);
      simt::mma_m16n8k16<T>(s[nt + 1], qa[kk], b1, s[nt + 1]);
    }
}

// O += P V with P straight from the accumulators; one ldmatrix.x4.trans gives the B fragments of
// two 8-column tiles of V.
template <class T, int D, int Bc>
__device__ __forceinline__ void accumulate_pv(float (&o)[D / 8][4], const float (&s)[Bc / 8][4], const T* Vt) {
  const int lane = static_cast<int>(threadIdx.x % 32), mtx = lane / 8;
  #pragma unroll
  for (int kk = 0; kk < Bc / 16; ++kk) {
    uint32_t pa[4];
    attn::p_fragment<T>(pa, s[2 * kk], s[2 * kk + 1]);
    #pragma unroll
    for (int nt = 0; nt < D / 8; nt += 2) {
      uint32_t vb[4];
      simt::ldmatrix_x4_trans(vb, &Vt[at<D>(kk * 16 + (mtx % 2) * 8 + lane % 8, (nt + mtx / 2) * 8)]);
      const uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
      simt::mma_m16n8k16<T>(o[nt], pa, b0, o[nt]);
      simt::mma_m16n8k16<T>(o[nt + 1], pa, b1, o[nt + 1]);
    }
  }
}

template <class T, int D>
constexpr size_t smem_bytes() {
  return (tile_elems<D>(Br) + 2 * kStages * tile_elems<D>(block_cols<D>())) * sizeof(T);
}

}  // namespace ch05::pipe
