// softmax_block.cu: step b. One block per row, the row kept in shared memory.
//
// A warp per row leaves a long row (Lk in the thousands) to 32 threads. Here a block of 256
// threads shares the row; the warps' partial maxima and sums meet through shared memory
// (attn::block_max / block_sum). The row itself is staged in shared memory on the first pass, so
// S is read from global memory once and P written once: 8 bytes per score, the least a separate
// softmax kernel can move. A row too long for shared memory (about 56k floats) is re-read in
// each pass instead.
// Cost: one block per row, so B*H*Lq blocks; a short row leaves most threads idle.
#include <algorithm>

#include "fused_softmax.h"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"

namespace ch02 {
namespace {

constexpr int kThreads = 256;

// One row, by the whole block.
template <bool OnChip>
__device__ __forceinline__ void softmax_row(const attn::AttentionParams& p, const float* S, float* P, long long row,
                                            float* scratch) {
  float* cached = simt::dynamic_smem<float>();  // the row's scores, then its exponentials
  const int bh = static_cast<int>(row / p.Lq), i = static_cast<int>(row % p.Lq), b = bh / p.H, h = bh % p.H;
  const float* s = S + row * p.Lk;
  float* out = P + row * p.Lk;
  const int tid = static_cast<int>(threadIdx.x);
  // Each thread reads and writes only its own elements j = tid, tid + 256, ...: the passes need
  // no barrier between them beyond those inside the reductions.
  auto score = [&](int j) { return OnChip ? cached[j] : attn::mask_score(p, b, h, i, j, p.scale * s[j]); };

  float m = -INFINITY;
  for (int j = tid; j < p.Lk; j += kThreads) {
    const float x = attn::mask_score(p, b, h, i, j, p.scale * s[j]);
    if (OnChip) cached[j] = x;
    m = fmaxf(m, x);
  }
  m = attn::block_max(m, scratch);
  if (m == -INFINITY) {
    for (int j = tid; j < p.Lk; j += kThreads) out[j] = 0.f;
    return;
  }
  float l = 0.f;
  for (int j = tid; j < p.Lk; j += kThreads) {
    const float e = __expf(score(j) - m);
    if (OnChip) cached[j] = e;
    l += e;
  }
  const float inv_l = 1.f / attn::block_sum(l, scratch);
  for (int j = tid; j < p.Lk; j += kThreads) out[j] = (OnChip ? cached[j] : __expf(score(j) - m)) * inv_l;
}

// A block per row; rows beyond the grid's 2^31 - 1 blocks are taken in turns. No barrier between
// two rows: a thread's elements of the cached row are its own in every row, and the reductions
// leave the scratch free.
template <bool OnChip>
__global__ void softmax_block_kernel(const attn::AttentionParams p, const float* S, float* P) {
  __shared__ float scratch[kScratch];
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) softmax_row<OnChip>(p, S, P, row, scratch);
}

}  // namespace

bool row_fits_on_chip(int Lk) {
  int device = 0, optin = 0;  // asked each time: the emulator may stand for another GPU meanwhile
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  return 4LL * Lk <= optin - 1024;  // 1 KB for the static scratch and the alignment pad, with room to spare
}

size_t row_smem_bytes(int Lk, int pad) {
  return sizeof(float) * ((row_fits_on_chip(Lk) ? static_cast<size_t>(Lk + pad) : 0) + kScratch);
}

cudaError_t softmax_block(const attn::AttentionParams& p, const float* S, float* P) {
  const dim3 grid(row_blocks(p)), block(kThreads);
  if (row_fits_on_chip(p.Lk))
    return simt::launch(softmax_block_kernel<true>, grid, block, p.Lk * sizeof(float), p, S, P);
  return simt::launch(softmax_block_kernel<false>, grid, block, 0, p, S, P);
}

}  // namespace ch02
