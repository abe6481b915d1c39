// tensor_cores.cu: step c. Step b's loop, with the five products on tensor cores.
//
// Step b computed every product with scalar fp32 FMAs. Here each is an mma.sync m16n8k16 on
// fp16/bf16 operands with fp32 accumulators (the shapes are in mma_tile.cuh). A block owns
// Bc = 64 keys, 16 per warp, and walks Q tiles of Br = 64 rows. The trick is the orientation: a
// warp computes the transposed scores S^T = K_w Q_i^T, keys as rows, so that its accumulators of
// P^T and dS^T are already A fragments (16 keys x 16 queries) of the two products that sum over
// queries:
//   S^T  = K_w Q_i^T          A: K by ldmatrix        B: Q by ldmatrix
//   dP^T = V_w dO_i^T         A: V by ldmatrix        B: dO by ldmatrix
//   P^T, dS^T on the accumulators (mma_tile.cuh's probabilities): D and L by column
//   dV_w += P^T dO_i          A: P^T from registers   B: dO by ldmatrix.trans
//   dK_w += dS^T Q_i          A: dS^T from registers  B: Q by ldmatrix.trans
//   dQ_i += dS K_j            the product that sums over keys needs dS the other way round, and
//                             every warp's keys: dS^T goes through shared memory as dS [query][key]
//                             (one barrier), then warp w takes query rows 16w..16w+15:
//                             A: dS by ldmatrix, B: K by ldmatrix.trans; atomics as in step b.
// dK and dV (16 x d per warp) stay in registers for the block's whole life.
// Cost: P^T and dS^T are rounded to fp16/bf16 before their products, as FlashAttention-2 does
// (the check allows it: compare_grads); dS makes one round trip through shared memory per Q tile.
// Tiles are plain loads into padded rows while the tensor cores wait, as chapter 05 step c.
#include "mma_tile.cuh"

namespace ch07 {
namespace {
using namespace mma;

constexpr int Br = kMmaBr, Bc = kMmaBc;
static_assert(Bc == 16 * kWarps, "a warp per 16 keys");

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) tensor_cores_kernel(const attn::BackwardParams p, const float* Dsum,
                                                                   float* dq_accum) {
  T* Ks = simt::dynamic_smem<T>();  // [Bc][kLd]
  T* Vs = Ks + Bc * kLd<D>;         // [Bc][kLd]
  T* Qs = Vs + Bc * kLd<D>;         // [Br][kLd]
  T* dOs = Qs + Br * kLd<D>;        // [Br][kLd]
  T* dSs = dOs + Br * kLd<D>;       // [Br][kLdS]
  float* Ls = reinterpret_cast<float*>(dSs + Br * kLdS);  // [Br]
  float* Ds = Ls + Br;                                     // [Br]
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, k0 = static_cast<int>(blockIdx.x) * Bc;
  const size_t q_head = static_cast<size_t>(bh) * p.Lq, k_head = static_cast<size_t>(bh) * p.Lk;
  const T* Q = static_cast<const T*>(p.q) + q_head * D;
  const T* dO = static_cast<const T*>(p.dout) + q_head * D;
  const float scale_log2 = p.scale * attn::kLog2e;

  load_tile<T, D>(Ks, static_cast<const T*>(p.k) + (k_head + k0) * D, Bc, p.Lk - k0);
  load_tile<T, D>(Vs, static_cast<const T*>(p.v) + (k_head + k0) * D, Bc, p.Lk - k0);
  float dk[D / 8][4] = {}, dv[D / 8][4] = {};  // this warp's 16 keys

  for (int q0 = 0; q0 < p.Lq; q0 += Br) {
    __syncthreads();  // every warp is done with the previous Q tile and dS
    load_tile<T, D>(Qs, Q + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
    load_tile<T, D>(dOs, dO + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
    load_row_stats(Ls, Ds, p, Dsum, q_head, q0, Br);
    __syncthreads();
    float s[Br / 8][4], dp[Br / 8][4];
    rows_times_rows_t<T, D, Br>(s, Ks + warp * 16 * kLd<D>, Qs);    // S^T
    rows_times_rows_t<T, D, Br>(dp, Vs + warp * 16 * kLd<D>, dOs);  // dP^T
    probabilities<Br, true, true>(s, dp, p, b, h, q0, k0, warp * 16, Ls, Ds, scale_log2);
    regs_times_rows<T, Br, D>(dv, s, dOs);  // dV += P^T dO
    regs_times_rows<T, Br, D>(dk, dp, Qs);  // dK += dS^T Q
    store_transposed<T, Br>(dSs, kLdS, dp, warp * 16);
    __syncthreads();  // dS has every warp's keys
    float dq[D / 8][4] = {};
    rows_times_rows<T, Bc, D>(dq, dSs + warp * 16 * kLdS, kLdS, Ks);  // dQ rows 16w.. += dS K
    atomic_add_rows<D>(dq_accum + q_head * D, dq, q0 + warp * 16, p.Lq);
  }
  store_rows<T, D>(static_cast<T*>(p.dk) + k_head * D, dk, k0 + warp * 16, p.Lk, p.scale);
  store_rows<T, D>(static_cast<T*>(p.dv) + k_head * D, dv, k0 + warp * 16, p.Lk, 1.f);
}

}  // namespace

cudaError_t tensor_cores(const attn::BackwardParams& p, const float* D, float* dq_accum) {
  return mma::dispatch(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int Dh = decltype(d)::value;
    const size_t smem = mma_smem_bytes(Dh, sizeof(T));
    return simt::launch(tensor_cores_kernel<T, Dh>, dim3((p.Lk + Bc - 1) / Bc, p.B * p.H), dim3(32 * kWarps), smem, p, D,
                        dq_accum);
  });
}

}  // namespace ch07
