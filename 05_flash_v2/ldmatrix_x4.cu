// ldmatrix_x4.cu: step f. One ldmatrix.x4 loads the B fragments of two 8-column tiles.
//
// Steps c to e read K and V with ldmatrix.x2: one instruction per mma. ldmatrix.x4 loads four
// 8 x 8 matrices at once, lanes 8j .. 8j + 7 giving the rows of matrix j: for S = Q K^T the four
// are keys nt*8 .. +7 and nt*8 + 8 .. +15 at the two 8-column halves of a 16-column k-step, the B
// fragments of two mma (scores_x4 in products.cuh); for O += P V, two 8-column tiles of V,
// transposed. Half the load instructions for the same bytes.
// This is the kernel the chapter called `pipelined` before it was cut into steps d to f.
// Cost: none; four registers per load instead of two.
#include "flash_v2.h"
#include "pipeline.cuh"
#include "products.cuh"

namespace ch05 {
namespace {

constexpr int kStages = 2;

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) ldmatrix_x4_kernel(const attn::AttentionParams p) {
  using L = Swizzled<D>;
  T* Qs = simt::dynamic_smem<T>();       // [kBr] rows
  T* Ks = Qs + L::elems(kBr);            // [kStages][kBc] rows
  T* Vs = Ks + kStages * L::elems(kBc);  // [kStages][kBc] rows
  const int warp = static_cast<int>(threadIdx.x / 32), g = static_cast<int>(threadIdx.x % 32 / 4);
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H, q0 = static_cast<int>(blockIdx.x) * kBr;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const int tiles = (p.Lk + kBc - 1) / kBc;
  auto copy_kv = [&](int j) {  // K/V tile j into stage j % kStages, as one cp.async group
    const int k0 = j * kBc;
    copy_tile<T, D, L, 32 * kWarps>(Ks + j % kStages * L::elems(kBc), K + static_cast<size_t>(k0) * D, kBc, p.Lk - k0);
    copy_tile<T, D, L, 32 * kWarps>(Vs + j % kStages * L::elems(kBc), V + static_cast<size_t>(k0) * D, kBc, p.Lk - k0);
    simt::cp_async_commit();
  };

  copy_tile<T, D, L, 32 * kWarps>(Qs, Q + static_cast<size_t>(q0) * D, kBr, p.Lq - q0);
  simt::cp_async_commit();
  copy_kv(0);
  simt::cp_async_wait<1>();  // Q has landed (tile 0 may still fly) ...
  __syncthreads();           // ... for every thread
  uint32_t qa[D / 16][4];
  load_q<T, D, L>(qa, Qs, warp * 16);
  RowState<D> st;
  const int row = q0 + warp * 16 + g;  // this lane's rows: row and row + 8
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      copy_kv(j + 1);            // the next tile flies while this one is used
      simt::cp_async_wait<1>();  // this thread's copies of tile j have landed
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();  // ... and every other thread's
    float s[kBc / 8][4];
    scores_x4<T, D, kBc, L>(s, qa, Ks + j % kStages * L::elems(kBc));
    scale_and_mask<kBc>(s, row, p, b, h, j * kBc, scale_log2);
    online_softmax<kBc>(s, st);
    accumulate_pv_x4<T, D, kBc, L>(st.o, s, Vs + j % kStages * L::elems(kBc));
    __syncthreads();  // this stage is refilled by the copy issued next iteration
  }
  store_rows<T>(st, row, p, bh);
}

}  // namespace

cudaError_t ldmatrix_x4(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    const size_t smem = smem_bytes(Step::ldmatrix_x4, D, sizeof(T));
    return simt::launch(ldmatrix_x4_kernel<T, D>, dim3((p.Lq + kBr - 1) / kBr, p.B * p.H), dim3(32 * kWarps), smem, p);
  });
}

}  // namespace ch05
