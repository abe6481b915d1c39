// skip_tiles.cu: causal attention that skips what the mask removes.
//
// Chapter 05 applied is_causal key by key: every K/V tile of every Q tile was loaded, multiplied
// and masked, and about half of that work was thrown away. A Q tile of rows [q0, q0 + Br) sees
// keys up to q_last + offset only (offset 0 for top-left, Lk - Lq for bottom-right): the K/V
// tiles past that are skipped (the loop simply ends earlier), and of the tiles it visits, only
// those that cross the diagonal, or the end of the sequence, need the mask. The others are
// scaled and nothing else. An attn_mask, when given, goes through the same kernel but is applied
// on every tile; the mode is a template parameter, so the kernels of the other modes carry no
// attn_mask code at all (and the kernel without is_causal tests only the end of the keys).
// With the work per Q tile now proportional to its position, the order of the blocks matters:
// blocks are launched in the order of their index, and the heavy tiles of the last head would
// otherwise run alone at the end. heaviest_first launches the heaviest Q tile of every head
// first, then the next heaviest of every head, and so on, so the last wave is made of short blocks.
// Cost: none over chapter 05 on the tiles that run; a block whose rows see no key (bottom-right
// alignment with Lq > Lk) writes zeros without loading anything.
#include "05_flash_v2/pipeline.cuh"
#include "causal.h"

namespace ch06 {
namespace {
using namespace ch05::pipe;

enum class Mode { none, causal, mask };

template <class T, int D, Mode kMode, bool kHeaviestFirst>
__global__ void __launch_bounds__(32 * kWarps) skip_tiles_kernel(const attn::AttentionParams p) {
  constexpr int Bc = block_cols<D>();
  T* Qs = simt::dynamic_smem<T>();
  T* Ks = Qs + tile_elems<D>(Br);
  T* Vs = Ks + kStages * tile_elems<D>(Bc);
  const int warp = static_cast<int>(threadIdx.x / 32), g = static_cast<int>(threadIdx.x % 32 / 4);
  // Heaviest first: grid (heads, Q tiles), the y index counting down from the last Q tile.
  const int q_tiles = (p.Lq + Br - 1) / Br;
  const int bh = static_cast<int>(kHeaviestFirst ? blockIdx.x : blockIdx.y), b = bh / p.H, h = bh % p.H;
  const int q_tile = static_cast<int>(kHeaviestFirst ? q_tiles - 1 - static_cast<int>(blockIdx.y) : blockIdx.x);
  const int q0 = q_tile * Br;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * D;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const int tiles = kMode == Mode::causal ? tiles_to_visit(p, q0, Br, Bc) : (p.Lk + Bc - 1) / Bc;
  auto copy_kv = [&](int j) {
    const int k0 = j * Bc;
    copy_tile<T, D>(Ks + (j % kStages) * tile_elems<D>(Bc), K + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    copy_tile<T, D>(Vs + (j % kStages) * tile_elems<D>(Bc), V + static_cast<size_t>(k0) * D, Bc, p.Lk - k0);
    simt::cp_async_commit();
  };

  ch05::RowState<D> st;
  st.row[0] = q0 + warp * 16 + g, st.row[1] = st.row[0] + 8;
  if (tiles == 0) {  // no row of this tile sees any key: O = 0, lse = -inf
    ch05::store_rows<T>(st, p, bh);
    return;
  }
  copy_tile<T, D>(Qs, Q + static_cast<size_t>(q0) * D, Br, p.Lq - q0);
  simt::cp_async_commit();
  copy_kv(0);
  simt::cp_async_wait<1>();
  __syncthreads();
  uint32_t qa[D / 16][4];
  load_q<T, D>(qa, Qs);
  const float scale_log2 = p.scale * attn::kLog2e;

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      copy_kv(j + 1);
      simt::cp_async_wait<1>();
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();
    const int k0 = j * Bc;
    float s[Bc / 8][4];
    scores<T, D, Bc>(s, qa, Ks + (j % kStages) * tile_elems<D>(Bc));
    // Only a tile crossing the diagonal (its last key past the first row's limit), the end of the
    // keys, or any tile under an attn_mask needs masking.
    const bool masked = kMode == Mode::mask || k0 + Bc > p.Lk || (kMode == Mode::causal && k0 + Bc - 1 > q0 + p.causal_offset());
    if (masked)
      ch05::scale_and_mask<Bc, D, kMode == Mode::mask>(s, st, p, b, h, k0, scale_log2);
    else
      ch05::scale_only<Bc>(s, scale_log2);
    ch05::online_softmax<Bc>(s, st);
    accumulate_pv<T, D, Bc>(st.o, s, Vs + (j % kStages) * tile_elems<D>(Bc));
    __syncthreads();
  }
  ch05::store_rows<T>(st, p, bh);
}

template <class T, int D, Mode kMode>
cudaError_t launch(const attn::AttentionParams& p, bool heaviest_first) {
  const unsigned q_tiles = static_cast<unsigned>((p.Lq + Br - 1) / Br), heads = static_cast<unsigned>(p.B * p.H);
  if (heaviest_first)
    return simt::launch(skip_tiles_kernel<T, D, kMode, true>, dim3(heads, q_tiles), dim3(32 * kWarps), smem_bytes<T, D>(), p);
  return simt::launch(skip_tiles_kernel<T, D, kMode, false>, dim3(q_tiles, heads), dim3(32 * kWarps), smem_bytes<T, D>(), p);
}

}  // namespace

cudaError_t skip_tiles(const attn::AttentionParams& p, bool heaviest_first) {
  return ch05::dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    if (p.mask_kind != attn::MaskKind::none) return launch<T, D, Mode::mask>(p, heaviest_first);
    if (p.causal != attn::Causal::none) return launch<T, D, Mode::causal>(p, heaviest_first);
    return launch<T, D, Mode::none>(p, heaviest_first);
  });
}

}  // namespace ch06
