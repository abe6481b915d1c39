// products.cuh: a warp's two matrix products on tensor cores, S = Q K^T and O += P V, in the forms
// the steps introduce one at a time. L is the shared-memory layout (pipeline.cuh); fragments as in
// mma.cuh. A lane's matrix for ldmatrix.x4 is mtx = lane / 8, its row in it lane % 8.
#pragma once
#include "fa2_tile.cuh"
#include "simt/ptx.cuh"

namespace ch05 {

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x % 32); }

// 16 rows of Q from row `row0` of the tile as A fragments, one per 16 columns (steps c to f).
template <class T, int D, class L>
__device__ __forceinline__ void load_q(uint32_t (&qa)[D / 16][4], const T* Qs, int row0) {
  const int lane = lane_id();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    simt::ldmatrix_x4(qa[kk], &Qs[L::at(row0 + lane % 16, kk * 16 + (lane / 16) * 8)]);
}

// Steps c to e. S (16 x Bc) = Q K^T, one ldmatrix.x2 per 8 keys x 16 columns of K: K stored
// row-major ([key][dim]) is the "column-major" B operand as it is.
template <class T, int D, int Bc, class L>
__device__ __forceinline__ void scores_x2(float (&s)[Bc / 8][4], const uint32_t (&qa)[D / 16][4], const T* Kt) {
  const int lane = lane_id();
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t kb[2];
      simt::ldmatrix_x2(kb, &Kt[L::at(nt * 8 + lane % 8, kk * 16 + (lane / 8) % 2 * 8)]);
      simt::mma_m16n8k16<T>(s[nt], qa[kk], kb, s[nt]);
    }
  }
}
// O (16 x D) += P V, P straight from the accumulators; V's B fragments by ldmatrix.x2.trans.
template <class T, int D, int Bc, class L>
__device__ __forceinline__ void accumulate_pv_x2(float (&o)[D / 8][4], const float (&s)[Bc / 8][4], const T* Vt) {
  const int lane = lane_id();
#pragma unroll
  for (int kk = 0; kk < Bc / 16; ++kk) {
    uint32_t pa[4];
    attn::p_fragment<T>(pa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      uint32_t vb[2];
      simt::ldmatrix_x2_trans(vb, &Vt[L::at(kk * 16 + lane % 16, nt * 8)]);
      simt::mma_m16n8k16<T>(o[nt], pa, vb, o[nt]);
    }
  }
}

// Step f. The same products, one ldmatrix.x4 giving the B fragments of two 8-column tiles.
template <class T, int D, int Bc, class L>
__device__ __forceinline__ void scores_x4(float (&s)[Bc / 8][4], const uint32_t (&qa)[D / 16][4], const T* Kt) {
  const int lane = lane_id(), mtx = lane / 8;
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int nt = 0; nt < Bc / 8; nt += 2) {
      uint32_t kb[4];
      simt::ldmatrix_x4(kb, &Kt[L::at((nt + mtx / 2) * 8 + lane % 8, kk * 16 + (mtx % 2) * 8)]);
      const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
      simt::mma_m16n8k16<T>(s[nt], qa[kk], b0, s[nt]);
      simt::mma_m16n8k16<T>(s[nt + 1], qa[kk], b1, s[nt + 1]);
    }
}
template <class T, int D, int Bc, class L>
__device__ __forceinline__ void accumulate_pv_x4(float (&o)[D / 8][4], const float (&s)[Bc / 8][4], const T* Vt) {
  const int lane = lane_id(), mtx = lane / 8;
#pragma unroll
  for (int kk = 0; kk < Bc / 16; ++kk) {
    uint32_t pa[4];
    attn::p_fragment<T>(pa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
    for (int nt = 0; nt < D / 8; nt += 2) {
      uint32_t vb[4];
      simt::ldmatrix_x4_trans(vb, &Vt[L::at(kk * 16 + (mtx % 2) * 8 + lane % 8, (nt + mtx / 2) * 8)]);
      const uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
      simt::mma_m16n8k16<T>(o[nt], pa, b0, o[nt]);
      simt::mma_m16n8k16<T>(o[nt + 1], pa, b1, o[nt + 1]);
    }
  }
}

// Where a lane's ldmatrix row starts at 16-column step u of a tile, for either layout, with the
// row a multiple of 8 plus `row` and the lane's 8-column half `half`: steps u and u + 4 differ by
// 64 elements, rows r and r + 8 by 8 rows, so four offsets computed once give every address of the
// loop as offset + constant. Left to itself the compiler keeps one register per address, and 32
// rows per warp leave no registers for that (steps g and h).
template <class L>
struct LaneCols {
  int off[4];
  __device__ LaneCols(int row, int half) {
#pragma unroll
    for (int u = 0; u < 4; ++u) off[u] = L::at(row, (2 * u + half) * 8);
  }
  __device__ int at(int rows8, int u) const { return off[u % 4] + u / 4 * 64 + rows8 * L::kRow; }
};

// The lanes' offsets into K and V for steps g and h. Q's A fragments take the rows and halves of
// V's: lane l reads row l % 16 of 16 (l / 8 % 2 picks the 8 rows), half l / 16. So Q's offsets are
// V's, from the warp's first row of Q.
template <class L>
struct Fragments {
  LaneCols<L> k, v;
  __device__ Fragments()
      : k(lane_id() / 16 * 8 + lane_id() % 8, lane_id() / 8 % 2),    // B of 2 n-tiles: keys by mtx / 2, k-half mtx % 2
        v(lane_id() / 8 % 2 * 8 + lane_id() % 8, lane_id() / 16) {}  // B^T: keys by mtx % 2, n-tile mtx / 2; A of Q
};

// Steps g and h. kM m-tiles of 16 rows per warp, from Qw (the warp's first row of the Q tile): each
// K or V fragment loaded once feeds 2 kM mma.
// Q's fragments for one k-step are re-read from shared memory (kM ldmatrix.x4) rather than kept
// for the whole loop (see Tiles in flash_v2.h).
template <class T, int D, int Bc, int kM, class L>
__device__ __forceinline__ void scores_rows(float (&s)[kM][Bc / 8][4], const Fragments<L>& f, const T* Qw,
                                            const T* Kt) {
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int nt = 0; nt < Bc / 8; ++nt) s[m][nt][0] = s[m][nt][1] = s[m][nt][2] = s[m][nt][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t qa[kM][4];
#pragma unroll
    for (int m = 0; m < kM; ++m) simt::ldmatrix_x4(qa[m], &Qw[f.v.at(m * 16, kk)]);
#pragma unroll
    for (int nt = 0; nt < Bc / 8; nt += 2) {
      uint32_t kb[4];
      simt::ldmatrix_x4(kb, &Kt[f.k.at(nt * 8, kk)]);
      const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        simt::mma_m16n8k16<T>(s[m][nt], qa[m], b0, s[m][nt]);
        simt::mma_m16n8k16<T>(s[m][nt + 1], qa[m], b1, s[m][nt + 1]);
      }
    }
  }
}
// P as A fragments, one per 16 keys, packed to 16 bits as soon as the softmax is done with the
// m-tile: half the registers of its fp32 accumulators.
template <class T, int Bc>
__device__ __forceinline__ void pack_p(uint32_t (&pa)[Bc / 16][4], const float (&s)[Bc / 8][4]) {
#pragma unroll
  for (int kk = 0; kk < Bc / 16; ++kk) attn::p_fragment<T>(pa[kk], s[2 * kk], s[2 * kk + 1]);
}
template <class T, int D, int Bc, int kM, class L>
__device__ __forceinline__ void accumulate_pv_rows(RowState<D> (&st)[kM], const uint32_t (&pa)[kM][Bc / 16][4],
                                                   const Fragments<L>& f, const T* Vt) {
#pragma unroll
  for (int kk = 0; kk < Bc / 16; ++kk)
#pragma unroll
    for (int nt = 0; nt < D / 8; nt += 2) {
      uint32_t vb[4];
      simt::ldmatrix_x4_trans(vb, &Vt[f.v.at(kk * 16, nt / 2)]);
      const uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        simt::mma_m16n8k16<T>(st[m].o[nt], pa[m][kk], b0, st[m].o[nt]);
        simt::mma_m16n8k16<T>(st[m].o[nt + 1], pa[m][kk], b1, st[m].o[nt + 1]);
      }
    }
}

}  // namespace ch05
