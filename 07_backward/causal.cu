// causal.cu: step d. Skip what is_causal removes, and a deterministic dQ on request.
//
// Step c visited every (Q tile, K/V tile) pair and masked every score. Under is_causal, the keys
// of the K/V tile at k0 are seen only by queries i >= k0 - offset (offset 0 top-left, Lk - Lq
// bottom-right), so a block starts its walk at the first Q tile that holds such a query
// (first_q_tile): the tiles above the diagonal are skipped, the other way round from chapter 06,
// whose forward walks K/V tiles for a Q tile and stops at the diagonal. A K/V tile that no query
// sees (top-left with Lk > Lq) visits nothing and writes dK = dV = 0. Of the pairs visited, only
// those that cross the diagonal or the end of the keys, or carry an attn_mask, are masked
// (needs_mask); the kernel is instantiated per mode, as chapter 06's.
// dQ: with dq_accum, as step c (atomics; their order, and so dQ's last bits, vary from run to
// run). Without (dq_accum = nullptr), this kernel computes dK and dV only, and dq_pass.cu computes
// dQ with the loops the forward's way round: each element of dQ is then summed by one thread, in
// one order, and every gradient is bit-identical from run to run.
// Cost: none over step c on the pairs visited; about half the pairs are skipped at Lq = Lk. The
// deterministic option pays for its dQ pass with S and dP computed a second time (7 products
// instead of 5 on the visited pairs) and K, V read once per Q tile, and saves the atomics, the
// accumulator and its conversion.
//
// Step e (kCopies, ch07::cp_async): the tiles by 16-byte cp.async (mma_tile.cuh's copy_tile,
// chapter 05's copy), where load_tile moves 2 bytes a load and the compiler keeps four loads in
// flight before their stores: at d = 64 a thread's 32 loads of a Q tile wait 8 times for L2, its
// 4 copies once, with an eighth of the requests. Cost: no shared memory; registers, 174 (178 with
// is_causal) where step d takes 168 at d = 64 (3 blocks per SM become 2), and at d = 128 with an
// attn_mask more than the 255 there are, so that kernel keeps step d's loads. The copies need
// 16-byte-aligned rows, which a head dim that is a multiple of 8 gives (every one of
// TensorCoreDims). The deterministic option keeps step d's loads.
#include "mma_tile.cuh"

namespace ch07 {
namespace {
using namespace mma;

constexpr int Br = kMmaBr, Bc = kMmaBc;
static_assert(Bc == 16 * kWarps, "a warp per 16 keys");

template <class T, int D, Mode kMode, bool kCopies>
__global__ void __launch_bounds__(32 * kWarps) causal_kernel(const attn::BackwardParams p, const float* Dsum,
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
  // Step e's copies, but at d = 128 with an attn_mask: that kernel takes all 255 registers with
  // step d's loads, and the copies' addresses spilled it (ptxas, sm_90: 24 bytes).
  constexpr bool kCopy = kCopies && !(kMode == Mode::mask && D == 128);

  if constexpr (kCopy) {  // a group of their own, in flight with the first Q tile's, waited for with it
    copy_tile<T, D, Bc>(Ks, static_cast<const T*>(p.k) + (k_head + k0) * D, p.Lk - k0);
    copy_tile<T, D, Bc>(Vs, static_cast<const T*>(p.v) + (k_head + k0) * D, p.Lk - k0);
    simt::cp_async_commit();
  } else {
    load_tile<T, D>(Ks, static_cast<const T*>(p.k) + (k_head + k0) * D, Bc, p.Lk - k0);
    load_tile<T, D>(Vs, static_cast<const T*>(p.v) + (k_head + k0) * D, Bc, p.Lk - k0);
  }
  float dk[D / 8][4] = {}, dv[D / 8][4] = {};  // this warp's 16 keys

  for (int q0 = kMode == Mode::causal ? first_q_tile(p, k0, Br) * Br : 0; q0 < p.Lq; q0 += Br) {
    __syncthreads();  // every warp is done with the previous Q tile and dS
    if constexpr (kCopy) {
      copy_tile<T, D, Br>(Qs, Q + static_cast<size_t>(q0) * D, p.Lq - q0);
      copy_tile<T, D, Br>(dOs, dO + static_cast<size_t>(q0) * D, p.Lq - q0);
      simt::cp_async_commit();
    } else {
      load_tile<T, D>(Qs, Q + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
      load_tile<T, D>(dOs, dO + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
    }
    load_row_stats(Ls, Ds, p, Dsum, q_head, q0, Br);
    if constexpr (kCopy) simt::cp_async_wait<0>();  // this thread's copies have landed
    __syncthreads();
    float s[Br / 8][4], dp[Br / 8][4];
    rows_times_rows_t<T, D, Br>(s, Ks + warp * 16 * kLd<D>, Qs);    // S^T
    rows_times_rows_t<T, D, Br>(dp, Vs + warp * 16 * kLd<D>, dOs);  // dP^T
    if (needs_mask<kMode, Bc>(p, q0, k0))
      probabilities<Br, true, true, kMode == Mode::mask>(s, dp, p, b, h, q0, k0, warp * 16, Ls, Ds, scale_log2);
    else
      probabilities<Br, false, true>(s, dp, p, b, h, q0, k0, warp * 16, Ls, Ds, scale_log2);
    regs_times_rows<T, Br, D>(dv, s, dOs);  // dV += P^T dO
    regs_times_rows<T, Br, D>(dk, dp, Qs);  // dK += dS^T Q
    if (dq_accum) {  // the same for every thread: no divergence, and one kernel for both options
      store_transposed<T, Br>(dSs, kLdS, dp, warp * 16);
      __syncthreads();  // dS has every warp's keys
      float dq[D / 8][4] = {};
      rows_times_rows<T, Bc, D>(dq, dSs + warp * 16 * kLdS, kLdS, Ks);  // dQ rows 16w.. += dS K
      atomic_add_rows<D>(dq_accum + q_head * D, dq, q0 + warp * 16, p.Lq);
    }
  }
  // A K/V tile no query sees runs no Q tile: its K and V copies are waited for here, not left to
  // land in shared memory the block has given back.
  if constexpr (kCopy) simt::cp_async_wait<0>();
  store_rows<T, D>(static_cast<T*>(p.dk) + k_head * D, dk, k0 + warp * 16, p.Lk, p.scale);
  store_rows<T, D>(static_cast<T*>(p.dv) + k_head * D, dv, k0 + warp * 16, p.Lk, 1.f);
}

template <bool kCopies>
cudaError_t launch(const attn::BackwardParams& p, const float* D, float* dq_accum) {
  return mma::dispatch(p, [&](auto t, auto d) {
    return dispatch_mode(p, [&](auto mode) {
      using T = decltype(t);
      constexpr int Dh = decltype(d)::value;
      constexpr Mode kMode = decltype(mode)::value;
      const size_t smem = mma_smem_bytes(Dh, sizeof(T));
      return simt::launch(causal_kernel<T, Dh, kMode, kCopies>, dim3((p.Lk + Bc - 1) / Bc, p.B * p.H), dim3(32 * kWarps),
                          smem, p, D, dq_accum);
    });
  });
}

}  // namespace

cudaError_t causal(const attn::BackwardParams& p, const float* D, float* dq_accum) { return launch<false>(p, D, dq_accum); }
cudaError_t cp_async(const attn::BackwardParams& p, const float* D, float* dq_accum) { return launch<true>(p, D, dq_accum); }

}  // namespace ch07
