// params.h: the one struct every attention kernel of the book receives. Plain data, no harness:
// a kernel file includes this, never the harness.
//
//   O = softmax(scale * Q K^T + mask) V        Q: [B, H, Lq, d]   K, V: [B, H, Lk, d]   O: [B, H, Lq, d]
//
// with torch.nn.functional.scaled_dot_product_attention's semantics (see notes/00_overview.md).
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define ATTN_HOST_DEVICE __host__ __device__
#elif defined(FLASHSTEPS_COUNTED_TU)
// The counters build instruments the kernels' files and not the harness's (cmake/Counters.cmake). A
// helper both call would be one weak symbol, of which the linker keeps one copy for all files,
// perhaps the harness's, uncounted (it once hid chapter 10's classifier loads). The tag gives the
// kernels' copies names of their own; tools/check_counted_copies.py (CTest counted_copies) checks
// that no other function is left shared.
#define ATTN_HOST_DEVICE __attribute__((abi_tag("counted")))
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

// A mask_mod (chapter 10): which keys a query may see, given as a rule rather than a tensor, as
// FlexAttention's mask_mod(b, h, q_idx, kv_idx). Indices are a head's own, from 0 (no alignment:
// FlexAttention's). A row that sees no key gives O = 0 and lse = -inf, as everywhere in the book.
//   sliding_window: kv <= q and q - kv <= window (causal, the window's keys before the query)
//   prefix_lm:      kv < prefix or kv <= q (every query sees the prefix; the rest is causal)
//   document:       doc[q] == doc[kv] (a packed sequence of documents; doc: the document of each
//                   position, max(Lq, Lk) of them)
//   document_causal: doc[q] == doc[kv] and kv <= q (FlexAttention's document_causal_mask: packed
//                   documents, each causal within itself; doc as document's)
//   random_blocks:  visible in 64 x 64 blocks, about half of them, drawn from a seed (tests)
//   blocks:         a block mask given as data, FlexAttention's BlockMask.from_kv_blocks (its lists:
//                   Problem::blocks) with its noop_mask: the pairs of the listed blocks of block_q
//                   queries by block_kv keys. doc = block_q, block_kv, the K/V blocks per row (kb),
//                   then each block's class, Q block by Q block (0 unlisted, 1 partial, 2 full).
//   window:         FlashAttention-2's window_size = (left, right), aligned bottom-right as its
//                   causal diagonal: q + Lk - Lq - left <= kv <= q + Lk - Lq + right, a side of -1
//                   unbounded (its causal=True is (left, 0); (-1, -1) is every key)
//   varlen:         a packed batch of n sequences, FlashAttention's flash_attn_varlen_func: sequence s
//                   holds queries [cu_q[s], cu_q[s + 1]) and keys [cu_k[s], cu_k[s + 1]), and a query
//                   sees its own sequence's keys only; is_causal applies within each sequence, its
//                   diagonal aligned in the sequence (bottom-right: kv <= q + cu_k[s + 1] - cu_q[s + 1],
//                   FlashAttention's; top-left: kv <= q + cu_k[s] - cu_q[s]). arg = n, doc = cu_q's
//                   n + 1 offsets then cu_k's (cu_seqlens_q, cu_seqlens_k). Given as --seqlens, not a rule
//                   by name: chapter 10's step e (Problem::seqlens_q). Its K and V may have fewer heads
//                   than Q (grouped-query attention, flash_attn_varlen_func's): query head h reads K/V
//                   head h / heads_per_kv.
//   varlen_window:  a packed batch with FlashAttention-2's window_size in each sequence, as
//                   flash_attn_varlen_func takes both: varlen's rule, then window's within the
//                   sequence, on its own bottom-right diagonal (kv - q - (cu_k[s + 1] - cu_q[s + 1])
//                   in [-left, right]); no is_causal beside it (causal=True is the window (left, 0)).
//                   doc = varlen's offsets, then left and right (window_sides). Chapter 10's step f.
// 16 bytes: arg is the window, the prefix, the seed, the window's left side or the sequences
// (AttentionParams' size: see the end), and beside the kind, in the rest of its word, ALiBi's switch
// (a score mod, below) and a packed batch's query heads per K/V head (0 or 1: one each); a
// document's positions, the sequences' offsets or the window's right side last (no rule needs two:
// varlen_window's sides ride in its table, after the offsets).
enum class ModKind : uint8_t { none, sliding_window, prefix_lm, document, random_blocks, window, varlen, varlen_window,
                               document_causal, blocks };
// A rule that reads a document of each position (MaskMod::doc, Problem::documents).
ATTN_HOST_DEVICE constexpr bool reads_documents(ModKind k) { return k == ModKind::document || k == ModKind::document_causal; }
// A packed batch, its blocks each one sequence's: no rule per score serves it (chapter 10's steps e, f).
ATTN_HOST_DEVICE constexpr bool is_packed(ModKind k) { return k == ModKind::varlen || k == ModKind::varlen_window; }
struct MaskMod {
  ModKind kind;
  bool alibi;
  uint16_t heads_per_kv;
  int arg;
  union {
    const int* doc;
    int right;
  };
};
static_assert(sizeof(MaskMod) == 16, "MaskMod's fields fill two 8-byte words: AttentionParams' size");
// varlen_window's two sides (left, right), after the n + 1 offsets of each of cu_q and cu_k.
ATTN_HOST_DEVICE inline const int* window_sides(const MaskMod& m) { return m.doc + 2 * (m.arg + 1); }

// Score mods (chapter 10): the scaled score s = scale * q.k of a (query, key) pair changed before
// the softmax, as FlexAttention's score_mod(score, b, h, q_idx, kv_idx), FlashAttention-2's two:
//   softcap > 0: s -> softcap * tanh(s / softcap) (Gemma 2), then
//   alibi:       s -> s - slope_h * |q + Lk - Lq - kv| (the distance from the bottom-right aligned
//                diagonal; FlashAttention-2's alibi_slopes), slope_h the user's (given_slopes, below) or
//                alibi_slope(h, H).
// ALiBi's slopes (Press et al., 2022, as FlashAttention's tests make them): 2^(-8 (h + 1) / n) for the
// largest power of two n <= H, then for the heads past n every other slope of the sequence for 2n.
ATTN_HOST_DEVICE inline float alibi_slope(int h, int H) {
  int n = 1;
  while (2 * n <= H) n *= 2;
  return h < n ? exp2f(-8.f * static_cast<float>(h + 1) / static_cast<float>(n))
               : exp2f(-4.f * static_cast<float>(2 * (h - n) + 1) / static_cast<float>(n));
}

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
  float softcap;  // chapter 10's score mod (above): 0 for none
  // The attn_mask's entries. Without one (mask_kind none), in chapter 10's score mods, ALiBi's slopes
  // when the user gives them (FlashAttention-2's alibi_slopes; given_slopes() below). One pointer for
  // both keeps the struct at its size (below); a union there compiled other kernels to other SASS.
  const void* mask;
  long long mask_stride_b, mask_stride_h;
  // Scratch memory of the size the variant asked for (its N x N buffers, its l and m...).
  void* workspace;
  // log(sum_j exp(s_ij)) of each query row, [B, H, Lq] fp32, for the variants that write it
  // (what a backward pass needs); -inf for a row with no key to attend to.
  float* lse;
  // Chapter 10's mask_mod (kind none elsewhere): a rule instead of attn_mask's tensor; and ALiBi.
  MaskMod mod;

  // Offset of the causal diagonal: key j is visible to query i when j <= i + causal_offset().
  ATTN_HOST_DEVICE int causal_offset() const { return causal == Causal::bottom_right ? Lk - Lq : 0; }
};
// ALiBi's slopes given by the user: B x H fp32 (a packed batch: sequences x H), head h of batch (or
// sequence) b at b * H + h, where a problem without an attn_mask keeps its mask pointer
// (Problem::kernel_table); null for none: alibi_slope(h, H).
ATTN_HOST_DEVICE inline const float* given_slopes(const AttentionParams& p) {
  return p.mask_kind == MaskKind::none ? static_cast<const float*>(p.mask) : nullptr;
}
// Every kernel takes this struct by value. At 136 bytes nvcc 13.0 compiled chapter 01's kernels,
// which never read a mask_mod, to other SASS (other loops, fewer instructions); at 128 only the
// parameters' offsets moved. A field more must make room, or the SASS data (sass_sm90.inc) and the
// notes' instruction counts change with it.
static_assert(sizeof(AttentionParams) <= 128, "AttentionParams past 128 bytes changes every kernel's SASS");

}  // namespace attn
