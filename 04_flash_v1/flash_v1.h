// flash_v1.h: chapter 04, FlashAttention (v1): Q, K and V go through shared memory tile by tile;
// nothing N x N is ever stored. Steps a to c keep, as FlashAttention's Algorithm 1 does, the
// output O and the row statistics l and m in global memory and update them after every K/V tile:
// O_acc (fp32, [B*H][Lq][d]), l and m (fp32, [B*H][Lq]) in the workspace. Each writes O in the
// inputs' type at the end, and lse = m + log(l).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/params.h"

namespace ch04 {

// Algorithm 1's block sizes for head dim d: Bc = ceil(M / 4d), Br = min(Bc, d), where M is the
// number of floats of shared memory a block may use. The algorithm also keeps S_ij (Br x Bc) and
// six row vectors on chip (l_i, m_i, m~_ij, l~_ij, m_i^new, l_i^new), which 4 * Bc * d does not
// count: while they do not fit, M is taken 4d smaller.
struct Blocks {
  int M_device;  // floats of shared memory one block may use on this device
  int M;         // the M the block sizes come from
  int Bc, Br;
  size_t smem_bytes;
};
Blocks algorithm1_blocks(int d);

// Algorithm 1 as the paper writes it: one block per (batch, head) runs the whole double loop.
cudaError_t algorithm1(const attn::AttentionParams& p, float* O_acc, float* l, float* m);

// The FA1 CUDA kernel's structure, one block per (batch, head), with one thread per row of a Q tile,
// tiles of kTile rows of Q and of K and V.
constexpr int kTile = 64;
cudaError_t row_per_thread(const attn::AttentionParams& p, float* O_acc, float* l, float* m);

// The same structure with chapter 01's register-blocked tiles: each thread an 8 x 8 block of S_ij
// and O_i; Br = 128, Bc = 64 (d <= 64) or 128. K_j, V_j and P_ij must fit in shared memory:
// d <= kRegisterTilesMaxD.
// The O_i, l and m it keeps between K/V tiles (16-byte aligned, `register_tiles_state_bytes`) are
// in the threads' order, not [B*H][Lq][d].
constexpr int kRegisterTilesMaxD = 128;
size_t register_tiles_state_bytes(size_t heads, int Lq, int d);  // heads = B * H
cudaError_t register_tiles(const attn::AttentionParams& p, void* state);

// Step d: the same tiles with the loops swapped inside the block, Q tiles outside: O_i, l and m stay
// in registers and nothing is kept in global memory between tiles (no workspace). d <= kRegisterTilesMaxD.
cudaError_t o_in_registers(const attn::AttentionParams& p);

// The dynamic shared memory one block of steps b to d asks for at head dim d (the registry's figure;
// step a's is algorithm1_blocks(d).smem_bytes, sized to fit the GPU at hand).
size_t row_per_thread_smem_bytes(int d);
size_t register_tiles_smem_bytes(int d);
size_t o_in_registers_smem_bytes(int d);

}  // namespace ch04
