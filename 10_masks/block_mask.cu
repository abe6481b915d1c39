// block_mask.cu: step c, the block mask. Step b evaluates the rule on every score of every tile; most
// tiles are either wholly visible or wholly hidden. FlexAttention's BlockMask says which, once, at
// the kernel's tile sizes: for each Q tile, its partial K/V tiles (kv_indices) and its wholly
// visible ones (full_kv_indices). The kernel visits the listed tiles only, the full ones first
// without the rule (chapter 05's unmasked path), then the partial ones with it.
// The lists are written by a kernel of their own (as create_block_mask builds them), which
// evaluates the rule on every (query, key) pair once: step b's evaluations, done once for every
// (batch, head) instead of per head, and reusable by every layer that shares the pattern.
// Cost: the lists' writing; two lookups per visited tile; a tile's rule only where it is partial.
#include "05_flash_v2/lean_loop.cuh"
#include "kernels/mask_mod.h"
#include "masks.h"

namespace ch10 {
namespace {

// One block per Q tile, 128 threads; for each K/V tile the threads evaluate its pairs (those
// inside [0, Lq) x [0, Lk)) and vote: any visible, any hidden. Thread 0 appends the tile to a list.
__global__ void write_block_mask_kernel(const attn::AttentionParams p, int Br, int Bc, int* base) {
  const int q_tiles = (p.Lq + Br - 1) / Br, kv_tiles = (p.Lk + Bc - 1) / Bc, r = static_cast<int>(blockIdx.x);
  const BlockMaskLists<int> lists(base, q_tiles, kv_tiles);
  const attn::BookMod rule = attn::BookMod::of(p);
  const int rows = min(Br, p.Lq - r * Br);
  int partial = 0, full = 0;
  for (int c = 0; c < kv_tiles; ++c) {
    const int keys = min(Bc, p.Lk - c * Bc);
    bool seen = false, hidden = false;
    for (int at = static_cast<int>(threadIdx.x); at < rows * keys; at += static_cast<int>(blockDim.x)) {
      const bool v = rule(0, 0, r * Br + at / keys, c * Bc + at % keys);
      seen |= v, hidden |= !v;
    }
    const int any_seen = __syncthreads_or(seen), any_hidden = __syncthreads_or(hidden);
    if (threadIdx.x == 0 && any_seen) {
      if (any_hidden) lists.kv_indices[r * kv_tiles + partial++] = c;
      else lists.full_kv_indices[r * kv_tiles + full++] = c;
    }
  }
  if (threadIdx.x == 0) lists.kv_num_blocks[r] = partial, lists.full_kv_num_blocks[r] = full;
}

// lean_loop's Policy: Q tile r visits its full tiles, then its partial ones (the order does not
// matter to the online softmax); only the partial ones, and a last tile past Lk, are masked.
template <int Br, int Bc>
struct ListedTiles : ch05::EveryTile {
  __device__ static BlockMaskLists<const int> lists(const attn::AttentionParams& p) {
    return {static_cast<const int*>(p.workspace), (p.Lq + Br - 1) / Br, (p.Lk + Bc - 1) / Bc};
  }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int /*Br*/, int /*Bc*/) {
    const BlockMaskLists<const int> l = lists(p);
    return l.full_kv_num_blocks[q0 / Br] + l.kv_num_blocks[q0 / Br];
  }
  __device__ static int kv_tile(const attn::AttentionParams& p, int q0, int j) {
    const BlockMaskLists<const int> l = lists(p);
    const int r = q0 / Br, full = l.full_kv_num_blocks[r];
    return j < full ? l.full_kv_indices[r * l.kv_tiles + j] : l.kv_indices[r * l.kv_tiles + j - full];
  }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int j, int k0, int /*Bc*/) {
    return j >= lists(p).full_kv_num_blocks[q0 / Br] || k0 + Bc > p.Lk;
  }
  __device__ static attn::BookMod mask_mod(const attn::AttentionParams& p) { return attn::BookMod::of(p); }
};

}  // namespace

cudaError_t write_block_mask(const attn::AttentionParams& p, void* lists) {
  return ch05::dispatch_tensor_core(p, [&](auto, auto d) {
    constexpr ch05::Tiles kT = ch05::fa2_tiles(decltype(d)::value);
    return simt::launch(write_block_mask_kernel, dim3((p.Lq + kT.Br - 1) / kT.Br), dim3(128), 0, p, kT.Br, kT.Bc,
                        static_cast<int*>(lists));
  });
}

cudaError_t block_mask(const attn::AttentionParams& p, const void* lists) {
  attn::AttentionParams a = p;
  a.workspace = const_cast<void*>(lists);  // the Policy finds the lists there
  return ch05::dispatch_tensor_core(a, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr ch05::Tiles kT = ch05::fa2_tiles(D);
    return simt::launch(ch05::lean_loop_kernel<T, D, ListedTiles<kT.Br, kT.Bc>>,
                        dim3((a.Lq + kT.Br - 1) / kT.Br, a.B * a.H), dim3(ch05::block_threads(ch05::Step::lean_loop, D)),
                        ch05::smem_bytes(ch05::Step::lean_loop, D, sizeof(T)), a);
  });
}

}  // namespace ch10
