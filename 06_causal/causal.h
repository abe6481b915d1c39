// causal.h: chapter 06, causal attention that does only the work the mask leaves.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace ch06 {

// Chapter 05's fast kernel (lean_loop), with the K/V tiles above the causal diagonal skipped and the
// mask applied only to the tiles that need it. heaviest_first: the Q tiles with the most keys to
// visit are launched first, so that the last wave of blocks is made of light ones.
cudaError_t skip_tiles(const attn::AttentionParams& p, bool heaviest_first);

// The K/V tiles a Q tile [q0, q0 + rows) visits under is_causal (all of them without): up to the
// one holding the last key its last row may see; 0 when no row sees any key.
__host__ __device__ inline int tiles_to_visit(const attn::AttentionParams& p, int q0, int rows, int Bc) {
  const int all = (p.Lk + Bc - 1) / Bc;
  if (p.causal == attn::Causal::none) return all;
  const int q_last = (q0 + rows < p.Lq ? q0 + rows : p.Lq) - 1;
  const int keys = q_last + p.causal_offset() + 1;  // keys 0 .. keys - 1 are visible to some row
  if (keys <= 0) return 0;
  return keys >= p.Lk ? all : (keys + Bc - 1) / Bc;
}

// The (Q tile, K/V tile) pairs of one head that a pass with tiles Br x Bc visits: with skipping,
// tiles_to_visit's per Q tile; without, every pair. The cost models' count (host code).
inline long long visited_pairs(const attn::AttentionParams& p, int Br, int Bc, bool skip) {
  long long n = 0;
  for (int q0 = 0; q0 < p.Lq; q0 += Br) n += skip ? tiles_to_visit(p, q0, Br, Bc) : (p.Lk + Bc - 1) / Bc;
  return n;
}

// Whether a K/V tile from key k0, Bc keys, holds a key that is_causal hides from a row of a Q tile
// whose first row is q0 (its last key past that row's limit): only such a tile needs the mask.
__host__ __device__ inline bool crosses_diagonal(const attn::AttentionParams& p, int q0, int k0, int Bc) {
  return k0 + Bc - 1 > q0 + p.causal_offset();
}

}  // namespace ch06
