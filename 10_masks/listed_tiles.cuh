// listed_tiles.cuh: the Policy of steps c and d, which visits the K/V tiles a block mask lists
// (masks.h's BlockMaskLists, in the workspace), the full ones first, and masks the partial ones
// with the rule; and the launch of chapter 05's lean_loop with such a Policy.
#pragma once
#include "05_flash_v2/lean_loop.cuh"
#include "kernels/mask_mod.h"
#include "kernels/score_mod.h"
#include "masks.h"

namespace ch10 {

// Q tile r visits its full tiles, then its partial ones (the order does not matter to the online
// softmax); only the partial ones, and a last tile past Lk, are masked.
template <int Br, int Bc>
struct ListedTiles : ch05::EveryTile {
  __device__ static BlockMaskLists<const int> lists(const attn::AttentionParams& p) {
    return {static_cast<const int*>(p.workspace), p.Lq, p.Lk, Br, Bc};
  }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int /*Br*/, int /*Bc*/) {
    const BlockMaskLists<const int> l = lists(p);
    return l.full_kv_num_blocks[q0 / Br] + l.kv_num_blocks[q0 / Br];
  }
  __device__ static int kv_tile(const attn::AttentionParams& p, int q0, int j) { return lists(p).row(q0 / Br)[j]; }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int j, int k0, int /*Bc*/) {
    return j >= lists(p).full_kv_num_blocks[q0 / Br] || k0 + Bc > p.Lk;
  }
  __device__ static attn::BookMod mask_mod(const attn::AttentionParams& p) { return attn::BookMod::of(p); }
};

// lean_loop with Policy<Br, Bc> at chapter 05's tiles, the lists in `lists`.
template <template <int, int> class Policy>
cudaError_t launch_listed(const attn::AttentionParams& p, const void* lists) {
  if (!has_rule(p)) return cudaErrorInvalidValue;
  attn::AttentionParams a = p;
  a.workspace = const_cast<void*>(lists);  // the Policy finds the lists there
  return ch05::dispatch_tensor_core(a, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr ch05::Tiles kT = ch05::fa2_tiles(D);
    return ch05::launch_policy<T, D, Policy<kT.Br, kT.Bc>>(a);
  });
}

}  // namespace ch10
