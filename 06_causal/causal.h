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
// one holding the last key its last row may see; 0 when no row sees any key, or when the tile has
// no row at all (q0 >= Lq: a block heaviest_first_grid's rounding adds).
__host__ __device__ inline int tiles_to_visit(const attn::AttentionParams& p, int q0, int rows, int Bc) {
  if (q0 >= p.Lq) return 0;
  const int all = (p.Lk + Bc - 1) / Bc;
  if (p.causal == attn::Causal::none) return all;
  const int q_last = (q0 + rows < p.Lq ? q0 + rows : p.Lq) - 1;
  const int keys = q_last + p.causal_offset() + 1;  // keys 0 .. keys - 1 are visible to some row
  if (keys <= 0) return 0;
  return keys >= p.Lk ? all : (keys + Bc - 1) / Bc;
}

// Heaviest first (chapter 06's balanced, chapter 09's step g): blocks start in index order, x
// fastest (in practice; CUDA promises no order), so a grid of (heads, Q tiles) whose y index counts
// the Q tiles down from the last starts every head's heaviest tile first, then every head's next.
// grid.y holds 65535 at most (with Q tiles of 128 rows, Lq up to 8 388 480), so the Q tiles go over
// y and z, still counted down in launch order: z is the fewest that fit (513 at most for tiles of 64
// rows and any int Lq), and y * z exceeds the tiles by fewer than z. x, the head, holds 2^31 - 1.
// Sections (chapter 09's step g, after FlashAttention-3's tile scheduler): every head's heaviest
// tile first means that between two Q tiles of one head, every head's K/V pass through L2, which
// loses them once they exceed it. With `section` heads at a time (x), all the Q tiles of a section
// run, heaviest first (y), before the next section (z) starts, so only a section's K/V need to stay
// in L2. The last section may be short: its blocks past the last head have no work. section = heads
// is the order above, and so is any section where the Q tiles need z (past 65535 of them).
inline dim3 heaviest_first_grid(unsigned heads, unsigned q_tiles, unsigned section) {
  const unsigned z = (q_tiles + 65534) / 65535, y = (q_tiles + z - 1) / z;
  if (z > 1 || section < 1 || section > heads) section = heads;
  return dim3(section, y, z * ((heads + section - 1) / section));
}
inline dim3 heaviest_first_grid(unsigned heads, unsigned q_tiles) { return heaviest_first_grid(heads, q_tiles, heads); }
// The Q tile of block (y, z) of that grid: y * z - 1 down to 0 in launch order. The ranks the
// rounding adds come first, with tiles past the last row, which visit nothing (tiles_to_visit).
// Without z (one z, y = the tiles) it is q_tiles - 1 - y.
__host__ __device__ inline int heaviest_first_tile(unsigned y, unsigned z, unsigned grid_y, unsigned grid_z) {
  return static_cast<int>(grid_y * (grid_z - z) - 1 - y);
}
// The head and the Q tile of block b of that grid. With sections (fewer heads on x than there are),
// z is the section and the Q tiles fit in y; without, z spreads the Q tiles. A head >= heads is
// past the last section's heads.
struct HeadTile {
  int head, tile;
};
__host__ __device__ inline HeadTile heaviest_first_block(uint3 b, dim3 grid, unsigned heads) {
  if (grid.x < heads) return {static_cast<int>(b.z * grid.x + b.x), static_cast<int>(grid.y - 1 - b.y)};
  return {static_cast<int>(b.x), heaviest_first_tile(b.y, b.z, grid.y, grid.z)};
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

// Whether a visited K/V tile holds a key that a row of the Q tile from q0 must not see: one past Lk,
// or with is_causal (`causal`) one past the diagonal. The skipping kernels mask only such tiles
// (chapter 06's step, chapter 10's packed sequences), and their hosts count them so.
__host__ __device__ inline bool tile_needs_mask(const attn::AttentionParams& p, int q0, int k0, int Bc, bool causal) {
  return k0 + Bc > p.Lk || (causal && crosses_diagonal(p, q0, k0, Bc));
}

}  // namespace ch06
