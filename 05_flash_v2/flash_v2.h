// flash_v2.h: chapter 05, FlashAttention-2. The loops of chapter 04 turned around: a block owns a
// tile of Q for its whole life and walks every K/V tile, so O, m and l stay on chip and are
// written once; the grid covers (Q tile, head, batch). Eight steps, one idea and one file each.
#pragma once
#include <cuda_runtime.h>

#include "kernels/head_dims.h"
#include "kernels/params.h"

namespace ch05 {

// The head dims each family is compiled for: dispatch and registry both read these.
using CudaCoreDims = attn::HeadDimList<32, 64, 80, 96, 128>;   // steps a, b: registers sized by d
using TensorCoreDims = attn::HeadDimList<32, 64, 96, 128, 256>;  // steps c to h: d / 16 mma k-steps

cudaError_t split_k(const attn::AttentionParams& p);       // a: FA2's loop order; warps split each K/V tile
cudaError_t split_q(const attn::AttentionParams& p);       // b: warps split Q: no reduction across warps
cudaError_t tensor_cores(const attn::AttentionParams& p);  // c: mma.sync, ldmatrix, P in registers
cudaError_t cp_async(const attn::AttentionParams& p);      // d: K/V tiles copied by cp.async, two stages
cudaError_t swizzle(const attn::AttentionParams& p);       // e: swizzled shared memory instead of padding
cudaError_t ldmatrix_x4(const attn::AttentionParams& p);   // f: one ldmatrix.x4 per two 8-column tiles
cudaError_t rows_32(const attn::AttentionParams& p);       // g: 32 rows per warp, tiles per head dim
cudaError_t lean_loop(const attn::AttentionParams& p);     // h: the inner loop cut to what the math needs

// The tile of steps c to f: 4 warps of 16 rows, 64 keys per K/V tile, whatever the head dim.
inline constexpr int kWarps = 4, kBr = 64, kBc = 64;

// The tiles of steps g and h per head dim, FlashAttention-2's kernel traits in miniature. Per warp
// and 16 rows a lane holds d/2 floats of O and Bc/2 of S; 4 warps of 128 threads may use 255
// registers each (65536 per SM: 2 blocks per SM at 128 to 255 registers, 3 at <= 168).
//   d <= 128: two 16-row m-tiles per warp (Br = 128) share every K and V fragment: each
//             ldmatrix.x4 feeds 4 mma instead of 2. O takes d floats per lane and S Bc: Bc = 128
//             at d <= 64 (S 128 + O 64), Bc = 64 at d = 96, 128 (S 64 + O 128 at d = 128). Q is
//             re-read from shared memory for each product: kept in registers it would take d/2
//             more (64 at d = 128: past 255).
//   d = 256:  O alone would take 256 registers with 32 rows per warp: one m-tile (Br = 64), and
//             Bc = 32 to keep Q + 2 stages of K, V at 96 KiB, 2 blocks per SM.
// Two cp.async stages everywhere: a third at d = 128 (Q 32 KiB + 3 x 32 KiB) would leave room for
// one block per SM instead of two, and two blocks already hide one tile's copy behind the other's math.
struct Tiles {
  int m_tiles, Br, Bc, stages;
};
ATTN_HOST_DEVICE constexpr Tiles fa2_tiles(int d) {
  if (d <= 64) return {2, 2 * 16 * kWarps, 128, 2};
  if (d <= 128) return {2, 2 * 16 * kWarps, 64, 2};
  return {1, 16 * kWarps, 32, 2};
}

}  // namespace ch05
