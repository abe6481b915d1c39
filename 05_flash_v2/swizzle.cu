// swizzle.cu: step e. The tiles swizzled in shared memory instead of padded.
//
// Steps c and d padded every row of a tile by 8 elements (16 bytes), so that the 8 rows an
// ldmatrix reads start on 8 different groups of 4 banks. Shared memory has 32 banks of 4 bytes;
// a 16-byte chunk spans 4 of them. With d a multiple of 64, a row is a multiple of 128 bytes and
// unpadded rows would put a given chunk of all 8 rows on the same 4 banks: an 8-way conflict.
// The swizzle stores chunk c of row r at chunk c ^ (r % 8) instead (Swizzled in pipeline.cuh):
// for any logical chunk the 8 rows land on 8 different chunks, with no padding. The cp.async
// writes stay conflict-free: 8 neighbouring threads write the 8 chunks of one row. d = 32 and 96
// keep the padding (their rows are no multiple of 128 bytes).
// Cost: an XOR in every shared-memory address; the padding's 1/9 of the tiles (d = 64) or 1/17
// (d = 128) is saved.
#include "flash_v2.h"
#include "pipeline.cuh"
#include "products.cuh"

namespace ch05 {
namespace {

constexpr int kStages = 2;

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) swizzle_kernel(const attn::AttentionParams p) {
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
    scores_x2<T, D, kBc, L>(s, qa, Ks + j % kStages * L::elems(kBc));
    scale_and_mask<kBc>(s, row, p, b, h, j * kBc, scale_log2);
    online_softmax<kBc>(s, st);
    accumulate_pv_x2<T, D, kBc, L>(st.o, s, Vs + j % kStages * L::elems(kBc));
    __syncthreads();  // this stage is refilled by the copy issued next iteration
  }
  store_rows<T>(st, row, p, bh);
}

}  // namespace

cudaError_t swizzle(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    const size_t smem = smem_bytes(Step::swizzle, D, sizeof(T));
    return simt::launch(swizzle_kernel<T, D>, dim3((p.Lq + kBr - 1) / kBr, p.B * p.H), dim3(32 * kWarps), smem, p);
  });
}

}  // namespace ch05
