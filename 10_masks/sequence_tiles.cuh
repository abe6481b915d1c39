// sequence_tiles.cuh: step e's Policies, for a packed batch (params.h: varlen): each block one Q
// tile of one sequence, found in the tile map (write_tile_map), the sequence a problem of its own
// (the part); and the launch of chapter 05's lean_loop over the map with them. Step f runs a window
// in each sequence on the same part (window.cu: packed_window).
#pragma once
#include "05_flash_v2/lean_loop.cuh"
#include "06_causal/causal.h"
#include "kernels/score_mod.h"
#include "masks.h"

namespace ch10 {

template <class T, int Br, int Bc>
struct SequenceTiles : ch05::EveryTile {
  static constexpr bool kAttnMask = false;  // a packed batch has no attn_mask: its sequences are its mask
  // Grid (heads, slots over y and z: tile_map_grid), in launch order: slot t of every head, then
  // slot t + 1 of every head. The map (the workspace, which the part keeps) has an entry for each.
  __device__ static SeqTile entry(const attn::AttentionParams& p) {
    return static_cast<const SeqTile*>(p.workspace)[blockIdx.y + gridDim.y * blockIdx.z];
  }
  // Sequence s of head blockIdx.x as a problem of one head: B = H = 1, its first query and key at
  // the tensors' starts (the keys of K/V head blockIdx.x / heads_per_kv: grouped-query attention),
  // its lengths Lq and Lk. A slot past the last tile: no rows, no keys.
  __device__ static attn::AttentionParams part(const attn::AttentionParams& p) {
    const SeqTile e = entry(p);
    attn::AttentionParams one = p;
    one.B = one.H = 1;
    one.mod = {};
    one.Lq = one.Lk = 0;
    if (e.seq < 0) return one;
    const int *cu_q = p.mod.doc, *cu_k = cu_q + p.mod.arg + 1;
    const int kv_head = static_cast<int>(blockIdx.x) / (p.mod.heads_per_kv > 1 ? p.mod.heads_per_kv : 1);
    const size_t q = static_cast<size_t>(blockIdx.x) * p.Lq + cu_q[e.seq], k = static_cast<size_t>(kv_head) * p.Lk + cu_k[e.seq];
    one.q = static_cast<const T*>(p.q) + q * p.d;
    one.o = static_cast<T*>(p.o) + q * p.d;
    one.k = static_cast<const T*>(p.k) + k * p.d;
    one.v = static_cast<const T*>(p.v) + k * p.d;
    if (p.lse) one.lse = p.lse + q;
    one.Lq = cu_q[e.seq + 1] - cu_q[e.seq], one.Lk = cu_k[e.seq + 1] - cu_k[e.seq];
    return one;
  }
  __device__ static Block block(const attn::AttentionParams& p, int /*q_tiles*/) { return {0, entry(p).tile}; }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int /*Br*/, int /*Bc*/) {
    return ch06::tiles_to_visit(p, q0, Br, Bc);
  }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int /*j*/, int k0, int /*Bc*/) {
    return ch06::tile_needs_mask(p, q0, k0, Bc, p.causal != attn::Causal::none);
  }
};

// With step d's score mods, in each sequence: softcap as everywhere; ALiBi's distance from the
// sequence's own bottom-right diagonal (the part's Lk - Lq, FlashAttention-2's varlen alibi_slopes),
// its slope the block's query head's among the launch's heads (the grid's x: the part has one head),
// or the user's for the block's (sequence, head) (the part keeps the launch's given_slopes).
template <class T, int Br, int Bc>
struct ScoredSequenceTiles : SequenceTiles<T, Br, Bc> {
  __device__ static attn::AttentionParams part(const attn::AttentionParams& p) {
    attn::AttentionParams one = SequenceTiles<T, Br, Bc>::part(p);
    one.mod.alibi = p.mod.alibi;
    return one;
  }
  __device__ static attn::BookScore score_mod(const attn::AttentionParams& p, int /*b*/, int /*h*/) {
    const int h = static_cast<int>(blockIdx.x), H = static_cast<int>(gridDim.x);
    const float* given = attn::given_slopes(p);  // given: one per (sequence, head), the sequence the batch
    return {p.softcap, p.mod.alibi, given, given ? SequenceTiles<T, Br, Bc>::entry(p).seq * H + h : h, h, H, p.Lk - p.Lq};
  }
};

// lean_loop over a packed batch's tile map (`map`): Policy<T, Br, Bc> at chapter 05's tiles, or
// Scored<T, Br, Bc> for a problem with a score_mod (a problem without one runs the kernel without
// one: chosen at launch, as step d chooses).
template <template <class, int, int> class Policy, template <class, int, int> class Scored>
cudaError_t launch_sequences(const attn::AttentionParams& p, const void* map) {
  attn::AttentionParams a = p;
  a.workspace = const_cast<void*>(map);  // the Policy finds the map there
  const bool scored = has_score_mod(p);
  return ch05::dispatch_tensor_core(a, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr ch05::Tiles kT = ch05::fa2_tiles(D);
    const dim3 grid = tile_map_grid(a.H, a.Lq, a.mod.arg, kT.Br);
    if (scored) return ch05::launch_policy<T, D, Scored<T, kT.Br, kT.Bc>>(a, grid);
    return ch05::launch_policy<T, D, Policy<T, kT.Br, kT.Bc>>(a, grid);
  });
}

}  // namespace ch10
