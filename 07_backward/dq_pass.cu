// dq_pass.cu: step d's deterministic dQ. The loops the forward's way round, for dQ alone.
//
// dQ_i = scale sum_j dS_ij K_j is a sum over keys, and a block that owns a K/V tile (causal.cu)
// holds one term of it for every Q tile: adding those terms with atomics makes their order, and
// so the last bits of dQ, change from run to run. Here a block owns a Q tile of Br = 64 rows (16
// per warp) and walks the K/V tiles, exactly as chapter 05's forward does: it recomputes
//   S = Q_w K_j^T,  P = exp2(scale log2(e) S + mask - L),  dP = dO_w V_j^T,  dS = P o (dP - D)
// with the queries as rows, so that dS's accumulators are already the A fragments of
//   dQ_w += dS K_j            (B: K by ldmatrix.trans)
// and dQ stays in registers until it is written once, in the inputs' type. Under is_causal the walk
// stops at the last K/V tile the Q tile sees (chapter 06's tiles_to_visit), and only the tiles
// that need it are masked.
// Cost: the products S and dP a second time (the K/V pass has them too): 3 products per visited
// pair here, against the 1 of the atomic version, so 7 instead of 5 in all; K and V read once per
// Q tile. No atomics, no fp32 accumulator, no conversion.
#include "06_causal/causal.h"
#include "mma_tile.cuh"

namespace ch07 {
namespace {
using namespace mma;

constexpr int Br = kMmaBr, Bc = kMmaBc;

template <class T, int D, Mode kMode>
__global__ void __launch_bounds__(32 * kWarps) dq_pass_kernel(const attn::BackwardParams p, const float* Dsum) {
  T* Qs = simt::dynamic_smem<T>();  // [Br][kLd]
  T* dOs = Qs + Br * kLd<D>;        // [Br][kLd]
  T* Ks = dOs + Br * kLd<D>;        // [Bc][kLd]
  T* Vs = Ks + Bc * kLd<D>;         // [Bc][kLd]
  float* Ls = reinterpret_cast<float*>(Vs + Bc * kLd<D>);  // [Br]
  float* Ds = Ls + Br;                                      // [Br]
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, q0 = static_cast<int>(blockIdx.x) * Br;
  const size_t q_head = static_cast<size_t>(bh) * p.Lq, k_head = static_cast<size_t>(bh) * p.Lk;
  const T* K = static_cast<const T*>(p.k) + k_head * D;
  const T* V = static_cast<const T*>(p.v) + k_head * D;
  const float scale_log2 = p.scale * attn::kLog2e;

  load_tile<T, D>(Qs, static_cast<const T*>(p.q) + (q_head + q0) * D, Br, p.Lq - q0);
  load_tile<T, D>(dOs, static_cast<const T*>(p.dout) + (q_head + q0) * D, Br, p.Lq - q0);
  load_row_stats(Ls, Ds, p, Dsum, q_head, q0, Br);
  float dq[D / 8][4] = {};  // this warp's 16 rows

  const int tiles = ch06::tiles_to_visit(p, q0, Br, Bc);
  for (int j = 0; j < tiles; ++j) {
    const int k0 = j * Bc;
    __syncthreads();  // every warp is done with the previous K/V tile
    load_tile<T, D>(Ks, K + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    load_tile<T, D>(Vs, V + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    __syncthreads();
    float s[Bc / 8][4], dp[Bc / 8][4];
    rows_times_rows_t<T, D, Bc>(s, Qs + warp * 16 * kLd<D>, Ks);    // S
    rows_times_rows_t<T, D, Bc>(dp, dOs + warp * 16 * kLd<D>, Vs);  // dP
    if (needs_mask<kMode, Bc>(p, q0, k0))
      probabilities<Bc, true, false>(s, dp, p, b, h, q0, k0, warp * 16, Ls, Ds, scale_log2);
    else
      probabilities<Bc, false, false>(s, dp, p, b, h, q0, k0, warp * 16, Ls, Ds, scale_log2);
    regs_times_rows<T, Bc, D>(dq, dp, Ks);  // dQ += dS K
  }
  store_rows<T, D>(static_cast<T*>(p.dq) + q_head * D, dq, q0 + warp * 16, p.Lq, p.scale);
}

}  // namespace

cudaError_t dq_pass(const attn::BackwardParams& p, const float* D) {
  return mma::dispatch(p, [&](auto t, auto d) {
    return dispatch_mode(p, [&](auto mode) {
      using T = decltype(t);
      constexpr int Dh = decltype(d)::value;
      const size_t smem = dq_pass_smem_bytes(Dh, sizeof(T));
      return simt::launch(dq_pass_kernel<T, Dh, decltype(mode)::value>, dim3((p.Lq + Br - 1) / Br, p.B * p.H),
                          dim3(32 * kWarps), smem, p, D);
    });
  });
}

}  // namespace ch07
