// params.h: the one struct every attention kernel of the book receives. Plain data, no harness:
// a kernel file includes this, never the harness.
//
//   O = softmax(scale * Q K^T + mask) V        Q: [B, H, Lq, d]   K, V: [B, H, Lk, d]   O: [B, H, Lq, d]
//
// with torch.nn.functional.scaled_dot_product_attention's semantics (see notes/00_overview.md).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define ATTN_HOST_DEVICE __host__ __device__
#else
#define ATTN_HOST_DEVICE
#endif

namespace attn {

enum class DType : int { fp32, fp16, bf16 };

// is_causal: query i may attend to key j when j <= i + offset, where offset is 0 for top-left
// alignment (torch's is_causal) and Lk - Lq for bottom-right alignment (torch's
// causal_lower_right; FlashAttention >= 2.1).
enum class Causal : int { none, top_left, bottom_right };

// attn_mask: boolean (nonzero = may attend, as torch's bool mask) or additive (added to the scaled
// scores; -inf removes a key).
enum class MaskKind : int { none, boolean, additive };

struct AttentionParams {
  // Tensors in torch's [B, H, L, d] layout, contiguous, of type `dtype`.
  const void* q;
  const void* k;
  const void* v;
  void* o;
  DType dtype;
  int B, H, Lq, Lk, d;
  float scale;  // 1/sqrt(d) unless asked otherwise
  Causal causal;
  // The mask has Lq x Lk entries per (batch, head): uint8 for boolean masks, fp32 for additive
  // ones. mask_stride_b and mask_stride_h are in elements; 0 broadcasts over that dimension.
  MaskKind mask_kind;
  const void* mask;
  long long mask_stride_b, mask_stride_h;
  // Scratch memory of the size the variant asked for (its N x N buffers, its l and m...).
  void* workspace;
  // log(sum_j exp(s_ij)) of each query row, [B, H, Lq] fp32, for the variants that write it
  // (what a backward pass needs); -inf for a row with no key to attend to.
  float* lse;

  // Offset of the causal diagonal: key j is visible to query i when j <= i + causal_offset().
  ATTN_HOST_DEVICE int causal_offset() const { return causal == Causal::bottom_right ? Lk - Lq : 0; }
};

}  // namespace attn
