// flash_v2.h: chapter 05, FlashAttention-2. The loops of chapter 04 turned around: a block owns a
// tile of Q for its whole life and walks every K/V tile, so O, m and l stay on chip and are
// written once; the grid covers (Q tile, head, batch). Eight steps, one idea and one file each.
#pragma once
#include <cuda_runtime.h>

#include "kernels/head_dims.h"
#include "kernels/params.h"

namespace ch05 {

// The head dims each family is compiled for: dispatch and registry both read these.
using CudaCoreDims = attn::HeadDimList<32, 64, 80, 96, 128>;     // steps a, b: registers sized by d
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

// The tiles of steps g and h per head dim, FlashAttention-2's kernel traits in miniature. A warp
// of 32 rows holds, per lane, d floats of O and Bc of S (2 m-tiles x 4 per 8 columns), plus the
// fragments in flight and its addresses: ptxas's report (results/static-sm90) shows how close to
// the 255 registers a thread may have each choice comes, and anything past them spills.
// What limits the shared-memory ceiling at d = 128, per warp of 32 rows and K/V tile: 4 Bc mma;
// Bc ldmatrix.x4 of K and V (4 mma each); 16 of Q, re-read at every tile whatever Bc; and Bc / warps
// 16-byte cp.async, since the block's warps share the tile's copies. With 4 wavefronts per
// ldmatrix.x4 or warp's cp.async: mma / wavefronts = 4 Bc / (4 Bc + 64 + 4 Bc / warps).
//   d <= 64:  Bc = 64, 4 warps: O 64 + S 64 registers. Bc = 128 (FlashAttention-2's choice at
//             d = 64) puts S at 128 and the scores in local memory.
//   d = 96, 128: Bc = 32: O 128 + S 32 at d = 128 already fill the 255 registers; at d = 128 Bc = 48
//             (63 % on paper with 4 warps) and Bc = 64 (67 %) spill. Bc = 32 with 4 warps is 57 %;
//             8 warps (Br = 256) would share each tile's copies among twice the warps, 61.5 %, but
//             8 warps of 255 registers take the whole register file: 1 block per SM, every warp of
//             it stopped at each __syncthreads. 2 blocks of 4 give the SM the same 8 warps, and each
//             block's waits are the other's turn at the pipes (FlashAttention-2 runs 4 warps here).
//   d = 256:  O alone would take 256 registers with 32 rows per warp: one m-tile (Br = 64), and
//             Bc = 32 to keep Q + 2 stages of K, V at 96 KiB, 2 blocks per SM.
// Q is re-read from shared memory at every k-step: kept in registers it would take d/2 more per
// lane. Two cp.async stages: blocks per SM are set by the registers, and 2 stages already fit them
// in 228 KiB (48 KiB x 2 blocks at d = 64, 64 KiB x 2 at 128, 96 KiB x 2 at 256); a third stage
// would cost shared memory and no occupancy, and one tile in flight while the warps of the SM work
// on the other is what hides the copy.
struct Tiles {
  int warps, m_tiles, Br, Bc, stages;  // Br = warps x m_tiles x 16
};
// The H200 ran blocks of 8 warps at d = 96, 128 (results/nvidia-h200: one block per SM, the
// tensor pipe 42 % active); a build with -DFLASHSTEPS_D128_WARPS=8 has them again, and
// tools/gpu_session.sh's `tune` step times both builds.
#ifndef FLASHSTEPS_D128_WARPS
#define FLASHSTEPS_D128_WARPS 4
#endif
static_assert(FLASHSTEPS_D128_WARPS == 4 || FLASHSTEPS_D128_WARPS == 8, "FLASHSTEPS_D128_WARPS: 4 or 8");
ATTN_HOST_DEVICE constexpr Tiles fa2_tiles(int d) {
  if (d <= 64) return {4, 2, 4 * 2 * 16, 64, 2};
  if (d <= 128) return {FLASHSTEPS_D128_WARPS, 2, FLASHSTEPS_D128_WARPS * 2 * 16, 32, 2};
  return {4, 1, 4 * 16, 32, 2};
}

// Elements per shared-memory row of a tile: padded by 8 (16 bytes), or, swizzled with d a
// multiple of 64, none (pipeline.cuh).
ATTN_HOST_DEVICE constexpr int row_elems(int d, bool swizzle) { return swizzle && d % 64 == 0 ? d : d + 8; }

// The dynamic shared memory of steps g and h with tiles t: Q and t.stages stages of K and V,
// swizzled (or padded) rows of `elem`-byte inputs.
ATTN_HOST_DEVICE constexpr long tile_smem_bytes(Tiles t, int d, int elem) {
  return 1L * elem * row_elems(d, true) * (t.Br + 2 * t.stages * t.Bc);
}

// The threads of a block and the dynamic shared memory each step's kernel asks for at head dim d,
// with `elem`-byte inputs: the launches of steps a to g use them, the registry and
// tools/kernel_resources.py too. Step h's launches take both from their Policy's tiles
// (lean_loop.cuh's launch_policy), which are these unless the Policy names its own.
enum class Step { split_k, split_q, tensor_cores, cp_async, swizzle, ldmatrix_x4, rows_32, lean_loop };
ATTN_HOST_DEVICE constexpr int block_threads(Step step, int d) {
  return 32 * (step == Step::rows_32 || step == Step::lean_loop ? fa2_tiles(d).warps : kWarps);
}
ATTN_HOST_DEVICE constexpr long smem_bytes(Step step, int d, int elem) {
  switch (step) {
    case Step::split_k:  // K, V tiles of 64 rows, Q [32][d + 4], scores [4 warps][32][16 + 1], fp32
      return 4L * (2 * 64 * d + 32 * (d + 4) + kWarps * 32 * (64 / kWarps + 1));
    case Step::split_q:  // K, V tiles of 64 rows, Q [128][d + 4], scores [128][64 + 1], fp32
      return 4L * (2 * 64 * d + 128 * (d + 4) + 128 * (64 + 1));
    case Step::tensor_cores:  // Q, K, V tiles, padded
      return 1L * elem * row_elems(d, false) * (kBr + 2 * kBc);
    case Step::cp_async:  // Q and two stages of K, V
      return 1L * elem * row_elems(d, false) * (kBr + 2 * 2 * kBc);
    case Step::swizzle:
    case Step::ldmatrix_x4:
      return 1L * elem * row_elems(d, true) * (kBr + 2 * 2 * kBc);
    case Step::rows_32:
    case Step::lean_loop:
      return tile_smem_bytes(fa2_tiles(d), d, elem);
  }
  return 0;
}

}  // namespace ch05
