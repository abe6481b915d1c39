// skip_tiles.cuh: chapter 06's Policy of chapter 05's kernel (skip_tiles.cu says why), and its
// launch for any Policy that runs its blocks so: the grid from the Policy's tiles, heaviest first
// where the Policy says so (kHeaviest).
#pragma once
#include "05_flash_v2/lean_loop.cuh"
#include "causal.h"

namespace ch06 {

enum class Mode { none, causal, mask };

template <Mode kMode, bool kHeaviestFirst>
struct SkipTiles {
  static constexpr bool kAttnMask = kMode == Mode::mask;
  static constexpr bool kHeaviest = kHeaviestFirst;
  using Block = ch05::EveryTile::Block;
  // Heaviest first: grid (heads, Q tiles over y and z), the Q tile counting down from the last
  // (causal.h: heaviest_first_grid).
  __device__ static Block block(const attn::AttentionParams&, int /*q_tiles*/) {
    if (!kHeaviestFirst) return {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
    return {static_cast<int>(blockIdx.x), heaviest_first_tile(blockIdx.y, blockIdx.z, gridDim.y, gridDim.z)};
  }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int Br, int Bc) {
    return kMode == Mode::causal ? tiles_to_visit(p, q0, Br, Bc) : (p.Lk + Bc - 1) / Bc;
  }
  __device__ static int kv_tile(const attn::AttentionParams&, int /*q0*/, int j) { return j; }
  // Only a tile crossing the diagonal (its last key past the first row's limit), the end of the
  // keys, or any tile under an attn_mask needs masking.
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int /*j*/, int k0, int Bc) {
    return kMode == Mode::mask || tile_needs_mask(p, q0, k0, Bc, kMode == Mode::causal);
  }
};

template <class T, int D, class Policy>
cudaError_t launch_tiles(const attn::AttentionParams& p) {
  constexpr ch05::Tiles kT = ch05::policy_tiles<Policy, D>();
  const unsigned q_tiles = static_cast<unsigned>((p.Lq + kT.Br - 1) / kT.Br), heads = static_cast<unsigned>(p.B * p.H);
  const dim3 grid = Policy::kHeaviest ? heaviest_first_grid(heads, q_tiles) : dim3(q_tiles, heads);
  return ch05::launch_policy<T, D, Policy>(p, grid);
}

}  // namespace ch06
