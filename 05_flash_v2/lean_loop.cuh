// lean_loop.cuh: step h. Step g's kernel with its inner loop cut to what the math needs.
//
// The compiler's report of step g (results/static-sm90) shows most of its instructions are not
// mma: they compute addresses, test bounds and scale. Five changes, none in the math:
//  - copies with a trip count known to the compiler (copy_rows in pipeline.cuh): every thread
//    copies the same chunks of every tile, fully unrolled, at one base address plus constants
//    that the compiler keeps out of the loop; step g's copy loop recomputed row, column and
//    swizzle for each 16 bytes;
//  - zero-fill only on the last tile: the other K/V tiles are whole, so their copies carry no
//    bound test and no source size;
//  - the mask only where it can remove a key (Policy::needs_mask): without is_causal or
//    attn_mask only the last, ragged tile goes through the mask (mask_tile: scale_and_mask);
//  - the scale folded into the exponent: on the other tiles P = exp2(scale * log2(e) * s - m) is
//    one FFMA and one exp2 per score, and the row maximum is taken on the raw scores;
//  - exp2 as ex2.approx.ftz.f32 (simt::ex2_approx_ftz): one MUFU.EX2, no subnormal handling.
// The kernel takes a Policy: which Q tile a block runs, which K/V tiles it visits (how many, and the
// j-th's index), which need the mask and, if it names them, its tiles (kTiles; else fa2_tiles).
// This chapter's (EveryTile) visits every tile in order; chapter 06 plugs in its own, and
// chapter 10 one whose tiles come from a list, masked by a rule (a Policy with mask_mod(p):
// mask_tile in fa2_tile.cuh), and whose scores a score_mod changes (a Policy with
// score_mod(p, b, h): score_tile, on every tile), and one whose blocks each solve one part of the
// problem as a problem of its own (a Policy with part(p): one sequence of a packed batch).
// Cost: a second copy routine for the last tile; P's exponentials lose subnormal results (below
// 2^-126 of the row's largest term, nothing a sum of at least 1 can see).
#pragma once
#include "flash_v2.h"
#include "pipeline.cuh"
#include "products.cuh"

namespace ch05 {

struct EveryTile {
  static constexpr bool kAttnMask = true;  // scale_and_mask handles attn_mask too
  struct Block {
    int bh, q_tile;
  };
  __device__ static Block block(const attn::AttentionParams&, int /*q_tiles*/) {
    return {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
  }
  __device__ static int tiles(const attn::AttentionParams& p, int /*q0*/, int /*Br*/, int Bc) {
    return (p.Lk + Bc - 1) / Bc;
  }
  __device__ static int kv_tile(const attn::AttentionParams&, int /*q0*/, int j) { return j; }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int /*q0*/, int /*j*/, int k0, int Bc) {
    return p.causal != attn::Causal::none || p.mask_kind != attn::MaskKind::none || k0 + Bc > p.Lk;
  }
};

// The tiles a Policy's blocks run: chapter 05's for the head dim (fa2_tiles), unless the Policy
// names its own (kTiles), as FlashAttention-2's kernel traits give one kernel other tiles.
template <class Policy, int D>
ATTN_HOST_DEVICE constexpr Tiles policy_tiles() {
  if constexpr (requires { Policy::kTiles; }) return Policy::kTiles;
  else return fa2_tiles(D);
}

// The problem a block works in: the launch's, or the part a Policy gives it (its tensors and sizes).
template <class Policy>
__device__ __forceinline__ attn::AttentionParams part_of(const attn::AttentionParams& p) {
  if constexpr (requires { Policy::part(p); }) return Policy::part(p);
  else return p;
}

template <class T, int D, class Policy>
__global__ void __launch_bounds__(32 * policy_tiles<Policy, D>().warps) lean_loop_kernel(const attn::AttentionParams launched) {
  const attn::AttentionParams p = part_of<Policy>(launched);
  using L = Swizzled<D>;
  constexpr Tiles kT = policy_tiles<Policy, D>();
  constexpr int kM = kT.m_tiles, Br = kT.Br, Bc = kT.Bc, kStages = kT.stages, kThreads = 32 * kT.warps;
  static_assert(Br == kT.warps * kM * 16, "each warp owns kM m-tiles of the Q tile");
  T* Qs = simt::dynamic_smem<T>();
  T* Ks = Qs + L::elems(Br);
  T* Vs = Ks + kStages * L::elems(Bc);
  const int warp = static_cast<int>(threadIdx.x / 32), g = static_cast<int>(threadIdx.x % 32 / 4);
  const typename Policy::Block blk = Policy::block(p, (p.Lq + Br - 1) / Br);
  const int bh = blk.bh, q0 = blk.q_tile * Br;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const int tiles = Policy::tiles(p, q0, Br, Bc);
  auto copy_kv = [&](int j) {
    const int k0 = Policy::kv_tile(p, q0, j) * Bc;
    T *ks = Ks + j % kStages * L::elems(Bc), *vs = Vs + j % kStages * L::elems(Bc);
    if (k0 + Bc <= p.Lk) {  // a whole tile: no bound to test
      copy_rows<T, D, L, Bc, kThreads, false>(ks, K + static_cast<size_t>(k0) * D, Bc);
      copy_rows<T, D, L, Bc, kThreads, false>(vs, V + static_cast<size_t>(k0) * D, Bc);
    } else {  // the last tile: rows past Lk zero-filled
      copy_rows<T, D, L, Bc, kThreads, true>(ks, K + static_cast<size_t>(k0) * D, p.Lk - k0);
      copy_rows<T, D, L, Bc, kThreads, true>(vs, V + static_cast<size_t>(k0) * D, p.Lk - k0);
    }
    simt::cp_async_commit();
  };

  auto row = [&](int m) { return q0 + (warp * kM + m) * 16 + g; };  // m-tile m: rows row(m), row(m) + 8
  RowState<D> st[kM];
  if (tiles == 0) {  // no row of this tile sees a key (chapter 06): O = 0, lse = -inf
#pragma unroll
    for (int m = 0; m < kM; ++m) store_rows<T>(st[m], row(m), p, bh);
    return;
  }
  copy_rows<T, D, L, Br, kThreads, true>(Qs, Q + static_cast<size_t>(q0) * D, p.Lq - q0);
  simt::cp_async_commit();
  copy_kv(0);
  const float scale_log2 = p.scale * attn::kLog2e;
  constexpr bool kScoreMod = requires { Policy::score_mod(p, 0, 0); };  // scores scaled and changed on every tile
  static_assert(kScoreMod || !requires { Policy::score_mod(p, 0); }, "a Policy's score_mod takes (p, b, h)");
  const Fragments<L> frag;                      // this lane's ldmatrix offsets, computed once
  const T* Qw = Qs + warp * kM * 16 * L::kRow;  // the warp's rows of Q

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      copy_kv(j + 1);
      simt::cp_async_wait<1>();
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();
    const int k0 = Policy::kv_tile(p, q0, j) * Bc;
    float s[kM][Bc / 8][4];
    uint32_t pa[kM][Bc / 16][4];  // P, packed
    scores_rows<T, D, Bc, kM, L>(s, frag, Qw, Ks + j % kStages * L::elems(Bc));
    // Raw scores unless this tile needs the mask (or the scale is not positive: the maximum of
    // the raw scores is then not the maximum of the scaled ones).
    const bool masked = Policy::needs_mask(p, q0, j, k0, Bc) || !(scale_log2 > 0.f);
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      // (batch, head) computed here, where only a masked tile (or, with a score_mod, every tile)
      // pays for them: a division cannot be hoisted out of the branch, so they hold no register
      // across the loop.
      if constexpr (kScoreMod) score_tile<Bc, Policy>(s[m], row(m), p, bh / p.H, bh % p.H, k0);
      if (masked) mask_tile<Bc, Policy>(s[m], row(m), p, bh / p.H, bh % p.H, k0, kScoreMod ? 1.f : scale_log2);
      online_softmax<Bc, D, Exp2Ftz>(s[m], st[m], masked || kScoreMod ? 1.f : scale_log2);
      pack_p<T, Bc>(pa[m], s[m]);
    }
    accumulate_pv_rows<T, D, Bc, kM, L>(st, pa, frag, Vs + j % kStages * L::elems(Bc));
    __syncthreads();
  }
#pragma unroll
  for (int m = 0; m < kM; ++m) store_rows<T>(st[m], row(m), p, bh);
}

// Every launch of the kernel: its threads and shared memory from the Policy's tiles, so that a
// launch and the kernel it launches cannot disagree. The grid is the Policy's; by default a block
// per Q tile of Br rows and (batch, head), (Q tiles, heads).
template <class T, int D, class Policy>
cudaError_t launch_policy(const attn::AttentionParams& p, dim3 grid) {
  constexpr Tiles kT = policy_tiles<Policy, D>();
  return simt::launch(lean_loop_kernel<T, D, Policy>, grid, dim3(32 * kT.warps), tile_smem_bytes(kT, D, sizeof(T)), p);
}
template <class T, int D, class Policy>
cudaError_t launch_policy(const attn::AttentionParams& p) {
  constexpr int Br = policy_tiles<Policy, D>().Br;
  return launch_policy<T, D, Policy>(p, dim3((p.Lq + Br - 1) / Br, p.B * p.H));
}

}  // namespace ch05
