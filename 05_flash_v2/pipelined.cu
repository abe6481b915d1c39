// pipelined.cu: step d. Step c with the memory pipeline of a fast kernel.
//
// Step c loaded each K and V tile with plain loads while the tensor cores waited, and read each
// 8 x 8 operand with its own ldmatrix. Three changes, none of which touches the math
// (the pieces are in pipeline.cuh, shared with chapter 06):
//  - cp.async, two stages: the next K/V tile is copied from global to shared memory while this
//    one is computed on; cp_async_wait<1> waits for this tile only. Rows past the end of the
//    sequence are zero-filled by the copy itself (cp_async_cg_16_zfill).
//  - A swizzled shared-memory layout instead of padding: chunk c of row r is stored at chunk
//    c ^ (r % 8), so the 8 rows an ldmatrix reads sit on 8 different groups of banks, with no pad.
//  - ldmatrix.x4: one instruction loads the B fragments of two 8-column tiles (K for S, V for O).
// The tile sizes depend on the head dim (block_cols): Bc = 128 up to d = 64, 64 up to 128, then 32.
// Cost: twice the shared memory for K and V; a barrier per tile still separates copy and use.
#include "flash_v2.h"
#include "pipeline.cuh"

namespace ch05 {
namespace {
using namespace pipe;

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) pipelined_kernel(const attn::AttentionParams p) {
  constexpr int Bc = block_cols<D>();
  T* Qs = simt::dynamic_smem<T>();           // [Br] rows
  T* Ks = Qs + tile_elems<D>(Br);            // [kStages][Bc] rows
  T* Vs = Ks + kStages * tile_elems<D>(Bc);  // [kStages][Bc] rows
  const int warp = static_cast<int>(threadIdx.x / 32), g = static_cast<int>(threadIdx.x % 32 / 4);
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
  load_q<T, D>(qa, Qs);
  RowState<D> st;
  st.row[0] = q0 + warp * 16 + g, st.row[1] = st.row[0] + 8;
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      copy_kv(j + 1);            // the next tile flies while this one is used
      simt::cp_async_wait<1>();  // this tile has landed
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();  // ... for every thread's part of it
    float s[Bc / 8][4];
    scores<T, D, Bc>(s, qa, Ks + (j % kStages) * tile_elems<D>(Bc));
    scale_and_mask<Bc>(s, st, p, b, h, j * Bc, scale_log2);
    online_softmax<Bc>(s, st);
    accumulate_pv<T, D, Bc>(st.o, s, Vs + (j % kStages) * tile_elems<D>(Bc));
    __syncthreads();  // this stage is refilled by the copy issued next iteration
  }
  store_rows<T>(st, p, bh);
}

}  // namespace

Tiles pipelined_tiles(int d) {
  return {Br, d <= 64 ? block_cols<64>() : d <= 128 ? block_cols<128>() : block_cols<256>(), kStages};
}

cudaError_t pipelined(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    return simt::launch(pipelined_kernel<T, D>, dim3((p.Lq + Br - 1) / Br, p.B * p.H), dim3(32 * kWarps),
                        smem_bytes<T, D>(), p);
  });
}

}  // namespace ch05
