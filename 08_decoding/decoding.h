// decoding.h: chapter 08, decoding. One to a few new query tokens per sequence against a long KV
// cache: the work is reading the cache, so each step is about bytes and parallelism, not FLOPs.
// Nine steps, one idea each, and the two kernels they share (the append, the combine).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/decode_params.h"
#include "kernels/head_dims.h"

namespace ch08 {

using DecodeDims = attn::HeadDimList<32, 64, 128, 256>;  // a key row is d / 8 lanes of 16 bytes
inline constexpr int kDecodeThreads = 128;                 // per block of steps b to i
// Steps h and i: the blocks an SM holds of their kernel with R rows a block, its __launch_bounds__
// minimum, and so the blocks each SM gets in a round of its split grid. ptxas meets it without a
// spill: at d = 128, fp16, split and paged, on sm_90, step h takes 126, 155, 168 and 255 registers
// a thread at R = 1, 2, 4 and 8 (step g 125, 154, 213 and 255), step i 120, 139 and 160 at R = 1, 2
// and 4 (at 8 it runs step h's kernel).
ATTN_HOST_DEVICE constexpr int occupancy_blocks(int R) { return R == 1 ? 4 : R <= 4 ? 3 : 2; }

// The new tokens' K and V written into the cache at positions cache_seqlens[b] + t: step a's first
// stage (a no-op without k_new). Steps b to i append inside their kernel.
cudaError_t append_kv(const attn::DecodeParams& p);

cudaError_t prefill_kernel(const attn::DecodeParams& p);  // a: chapter 05's best, a sequence at a time
cudaError_t decode_kernel(const attn::DecodeParams& p);   // b: a block per query row, the cache streamed
cudaError_t split_kv(const attn::DecodeParams& p);        // c: the keys split across blocks (then combine)
cudaError_t gqa_packed(const attn::DecodeParams& p);      // d: a KV head's query rows share each load
cudaError_t paged(const attn::DecodeParams& p);           // e: the cache in pages through a block table
cudaError_t kv_together(const attn::DecodeParams& p);     // f: a step's loads all asked for before any is used
cudaError_t rows_ahead(const attn::DecodeParams& p);      // g: the next step's loads asked for before this step's arithmetic
cudaError_t occupancy(const attn::DecodeParams& p);       // h: step g in the registers that let an SM hold more blocks
cudaError_t score_per_lane(const attn::DecodeParams& p);  // i: each score summed and exponentiated once, by one lane

// Step a's workspace: one sequence's Q, K, V (heads repeated) and O in chapter 05's [H, L, d] layout.
size_t prefill_workspace(int Hq, int Lq, int max_keys, int d, int elem_bytes);
// Steps c to i: each split's partial O [splits][B Lq Hq][d] and log-sum-exp [splits][B Lq Hq], fp32,
// in the workspace; with one split the kernel writes O itself and combine does nothing.
size_t split_workspace(int B, int Lq, int Hq, int d, int splits);
struct Partials {
  float* o;
  float* lse;
};
inline Partials partials(const attn::DecodeParams& p) {
  float* o = static_cast<float*>(p.workspace);
  return {o, o + static_cast<size_t>(p.splits) * p.B * p.Lq * p.Hq * p.d};
}
// The splits' partial results merged into O (split_kv.cu): a second launch, a stage of its own.
cudaError_t combine(const attn::DecodeParams& p);
// Query rows a block of steps d and e holds: the KV head's g x Lq rows, up to 8.
int rows_per_block(int group, int Lq);
// A key group's words in decode.cuh's merge_o: R rows of E + 1 floats per lane, then padding that
// makes the group's start `lanes` banks past the previous group's (mod 32) at any R. A warp's
// store then puts its groups' lanes, 9 words apart within a group, in 32 different banks: at R = 4
// without the padding the groups would start 576 words apart, the same bank, and conflict 2-way.
// At 32 lanes (d = 256), one group per warp, the padding comes out 0.
ATTN_HOST_DEVICE constexpr int merge_group_words(int lanes, int E, int R) {
  const int words = R * lanes * (E + 1);
  return words + (lanes - words % 32 + 32) % 32;
}
// The static shared memory of a block of steps b to i holding R query rows, with `elem`-byte inputs
// at head dim d: decode.cuh's merge arrays (m and l, and each key group's merge_o words), which it
// checks against this. The registry declares it.
ATTN_HOST_DEVICE constexpr size_t decode_smem_bytes(int elem, int d, int R) {
  const int E = 16 / elem, lanes = d / E, groups = kDecodeThreads / lanes;
  return sizeof(float) * groups * (2 * R + merge_group_words(lanes, E, R));
}

}  // namespace ch08
