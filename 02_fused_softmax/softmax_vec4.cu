// softmax_vec4.cu: step c. Step b with 128-bit loads and stores.
//
// A float4 access moves 16 bytes per thread in one instruction, so a warp's load is 512 bytes,
// four times fewer instructions for the same bytes: what a memory-bound kernel needs to get near
// the memory's bandwidth. A float4 must be 16-byte aligned, and rows start every Lk floats, so a
// row is cut in three: up to three floats one by one until the address is aligned, the aligned
// middle four at a time, and the remainder one by one.
// Cost: the edges; and it only pays when the kernel is bound by instructions, not by bytes.
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
  float* smem = simt::dynamic_smem<float>();
  const int bh = static_cast<int>(row / p.Lq), i = static_cast<int>(row % p.Lq), b = bh / p.H, h = bh % p.H;
  const float* s = S + row * p.Lk;
  float* out = P + row * p.Lk;
  const int tid = static_cast<int>(threadIdx.x);
  // [0, head) and [head + 4 * quads, Lk) one by one; [head, head + 4 * quads) as float4. S and P
  // are allocated alike (the launcher checks), so one head serves both.
  const int misaligned = static_cast<int>(reinterpret_cast<uintptr_t>(s) % 16 / 4);
  const int head = min((4 - misaligned) % 4, p.Lk);
  const int quads = (p.Lk - head) / 4, tail = head + 4 * quads;
  float* cached = smem + 4 - head;  // so that cached + head is 16-byte aligned too
  // The at most 3 + 3 edge elements, one per thread: thread tid takes edge element `edge`.
  const int edge = tid < head ? tid : tid - head < p.Lk - tail ? tail + tid - head : -1;
  auto masked = [&](int j, float x) { return attn::mask_score(p, b, h, i, j, p.scale * x); };

  float m = -INFINITY;
  for (int q = tid; q < quads; q += kThreads) {
    const int j = head + 4 * q;
    const float4 x = *reinterpret_cast<const float4*>(s + j);
    const float4 y = make_float4(masked(j, x.x), masked(j + 1, x.y), masked(j + 2, x.z), masked(j + 3, x.w));
    if (OnChip) *reinterpret_cast<float4*>(cached + j) = y;
    m = fmaxf(m, fmaxf(fmaxf(y.x, y.y), fmaxf(y.z, y.w)));
  }
  if (edge >= 0) {
    const float y = masked(edge, s[edge]);
    if (OnChip) cached[edge] = y;
    m = fmaxf(m, y);
  }
  m = attn::block_max(m, scratch);
  if (m == -INFINITY) {
    for (int j = tid; j < p.Lk; j += kThreads) out[j] = 0.f;
    return;
  }
  auto score = [&](int j) { return OnChip ? cached[j] : masked(j, s[j]); };
  float l = 0.f;
  for (int j = tid; j < p.Lk; j += kThreads) l += __expf(score(j) - m);
  const float inv_l = 1.f / attn::block_sum(l, scratch);
  for (int q = tid; q < quads; q += kThreads) {
    const int j = head + 4 * q;
    *reinterpret_cast<float4*>(out + j) =
        make_float4(__expf(score(j) - m) * inv_l, __expf(score(j + 1) - m) * inv_l, __expf(score(j + 2) - m) * inv_l,
                    __expf(score(j + 3) - m) * inv_l);
  }
  if (edge >= 0) out[edge] = __expf(score(edge) - m) * inv_l;
}

// A block per row; rows beyond the grid's 2^31 - 1 blocks are taken in turns, a barrier between
// two: the next row's first pass writes the cached row by its own alignment (head), so a thread may
// overwrite an element another still reads in this row's last pass.
// With the row on chip, at most 32 registers a thread, so that 8 blocks of 256 threads fill the
// SM's 2048 threads (the second number, a minimum of blocks per SM; ptxas fits it in 32 without
// spilling). Left to itself ptxas takes 40 since attn_mask's loads went through the read-only path
// (32 before), and the SM holds 6 blocks: a quarter fewer rows in flight for a kernel that waits on
// its loads. The row from global memory keeps 6 blocks: in 32 registers it would spill, and with
// no minimum ptxas takes 56 (4 blocks); with 6 it takes 39.
template <bool OnChip>
__global__ void __launch_bounds__(kThreads, OnChip ? 8 : 6)
    softmax_vec4_kernel(const attn::AttentionParams p, const float* S, float* P) {
  __shared__ float scratch[kScratch];
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    if (row != blockIdx.x) __syncthreads();
    softmax_row<OnChip>(p, S, P, row, scratch);
  }
}

}  // namespace

cudaError_t softmax_vec4(const attn::AttentionParams& p, const float* S, float* P) {
  if ((reinterpret_cast<uintptr_t>(S) - reinterpret_cast<uintptr_t>(P)) % 16 != 0) return cudaErrorMisalignedAddress;
  const dim3 grid(row_blocks(p)), block(kThreads);
  if (row_fits_on_chip(p.Lk))
    return simt::launch(softmax_vec4_kernel<true>, grid, block, (p.Lk + 4) * sizeof(float), p, S, P);
  return simt::launch(softmax_vec4_kernel<false>, grid, block, 0, p, S, P);
}

}  // namespace ch02
