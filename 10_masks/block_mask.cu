// block_mask.cu: step c, the block mask. Step b evaluates the rule on every score of every tile; most
// tiles are either wholly visible or wholly hidden. FlexAttention's BlockMask says which, once, at
// the kernel's tile sizes: for each Q tile, its partial K/V tiles (kv_indices) and its wholly
// visible ones (full_kv_indices). The kernel visits the listed tiles only, the full ones first
// without the rule (chapter 05's unmasked path), then the partial ones with it.
// The lists are written by kernels of their own, as create_block_mask builds them: one classifies
// every (Q tile, K/V tile) pair, evaluating the rule on each of its (query, key) pairs (step b's
// evaluations, once for every (batch, head) instead of per head, and reusable by every layer that
// shares the pattern), the next turns each Q tile's classes into its two lists.
// Cost: the lists' writing; per visited tile, a load of its index and of the full tiles' count (L1
// hits); the rule on partial tiles only.
#include "listed_tiles.cuh"

namespace ch10 {
namespace {

// One block of 128 threads per (K/V tile, Q tile): the threads evaluate the pairs inside
// [0, Lq) x [0, Lk) and vote, any visible and any hidden.
__global__ void classify_tiles_kernel(const attn::AttentionParams p, int Br, int Bc, int* base) {
  const BlockMaskLists<int> lists(base, p.Lq, p.Lk, Br, Bc);
  const attn::BookMod rule = attn::BookMod::of(p);
  const int c = static_cast<int>(blockIdx.x), r = static_cast<int>(blockIdx.y);
  const int rows = min(Br, p.Lq - r * Br), keys = min(Bc, p.Lk - c * Bc);
  bool seen = false, hidden = false;
  for (int at = static_cast<int>(threadIdx.x); at < rows * keys; at += static_cast<int>(blockDim.x)) {
    const bool v = rule(0, 0, r * Br + at / keys, c * Bc + at % keys);
    seen |= v, hidden |= !v;
  }
  const int any_seen = __syncthreads_or(seen), any_hidden = __syncthreads_or(hidden);
  using L = BlockMaskLists<int>;
  if (threadIdx.x == 0)
    lists.classes()[static_cast<size_t>(r) * lists.kv_tiles + c] = !any_seen ? L::empty : any_hidden ? L::partial : L::full;
}

// One thread per Q tile: its classes, in key order, into its row: the full tiles, then the partial.
__global__ void list_tiles_kernel(const attn::AttentionParams p, int Br, int Bc, int* base) {
  using L = BlockMaskLists<int>;
  const L lists(base, p.Lq, p.Lk, Br, Bc);
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= lists.q_tiles) return;
  const uint8_t* cls = lists.classes() + static_cast<size_t>(r) * lists.kv_tiles;
  int* row = lists.row(r);
  int n = 0;
  for (int c = 0; c < lists.kv_tiles; ++c)
    if (cls[c] == L::full) row[n++] = c;
  lists.full_kv_num_blocks[r] = n;
  for (int c = 0; c < lists.kv_tiles; ++c)
    if (cls[c] == L::partial) row[n++] = c;
  lists.kv_num_blocks[r] = n - lists.full_kv_num_blocks[r];
}

}  // namespace

cudaError_t write_block_mask(const attn::AttentionParams& p, void* lists) {
  if (!has_rule(p)) return cudaErrorInvalidValue;
  return ch05::dispatch_tensor_core(p, [&](auto, auto d) {
    constexpr ch05::Tiles kT = ch05::fa2_tiles(decltype(d)::value);
    int* base = static_cast<int*>(lists);
    const BlockMaskLists<int> l(base, p.Lq, p.Lk, kT.Br, kT.Bc);
    const cudaError_t e = simt::launch(classify_tiles_kernel, dim3(l.kv_tiles, l.q_tiles), dim3(128), 0, p, kT.Br, kT.Bc, base);
    if (e != cudaSuccess) return e;
    return simt::launch(list_tiles_kernel, dim3((l.q_tiles + 127) / 128), dim3(128), 0, p, kT.Br, kT.Bc, base);
  });
}

cudaError_t block_mask(const attn::AttentionParams& p, const void* lists) { return launch_listed<ListedTiles>(p, lists); }

}  // namespace ch10
