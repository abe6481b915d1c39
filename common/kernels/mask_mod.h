// mask_mod.h: chapter 10's masks as rules, FlexAttention's mask_mod(b, h, q_idx, kv_idx) -> bool.
// Each is a functor a kernel takes as a template parameter and calls on a (query, key) pair; the
// reference (harness/problem.cpp) calls the same rules on the host, and test_reference checks them
// against hand-written tables. params.h says what each kind means.
#pragma once
#include "params.h"

namespace attn {

// Every key: no mask at all.
struct AllKeys {
  ATTN_HOST_DEVICE bool operator()(int, int, int, int) const { return true; }
};
// is_causal as a rule: key kv visible to query q when kv <= q + offset (torch's alignments).
struct CausalMod {
  int offset;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return kv <= q + offset; }
};
struct SlidingWindow {
  int window;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return kv <= q && q - kv <= window; }
};
// FlashAttention-2's window_size: key kv visible to query q within [-left, right] of the diagonal
// q + offset (offset = Lk - Lq, bottom-right), a side of -1 unbounded. kv - q - offset lies in
// (-Lk, Lq], so it cannot overflow.
struct Window {
  int left, right, offset;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const {
    const int from_diagonal = kv - q - offset;
    return (left < 0 || from_diagonal >= -left) && (right < 0 || from_diagonal <= right);
  }
};
struct PrefixLM {
  int prefix;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return kv < prefix || kv <= q; }
};
struct Document {
  const int* doc;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return doc[q] == doc[kv]; }
};
struct DocumentCausal {
  const int* doc;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return kv <= q && doc[q] == doc[kv]; }
};
// A packed batch (params.h: varlen, varlen_window): the query's sequence s, the last whose first
// query is at or before it (empty sequences share their start with the next), found by bisection of
// cu_q; then s's keys, and with is_causal those up to the diagonal aligned in s, with a window those
// within it of s's bottom-right diagonal. The reference's rule, for any pair; steps e and f need none
// of it, each of their blocks holding one sequence (10_masks/sequence_tiles.cuh).
struct Varlen {
  const int *cu_q, *cu_k;
  int n;
  Causal causal;
  int left = -1, right = -1;  // the window's sides (varlen_window), -1 unbounded
  ATTN_HOST_DEVICE static Varlen of(const MaskMod& m, Causal causal) {
    const int* sides = window_sides(m);
    const bool window = m.kind == ModKind::varlen_window;
    return {m.doc, m.doc + m.arg + 1, m.arg, causal, window ? sides[0] : -1, window ? sides[1] : -1};
  }
  ATTN_HOST_DEVICE bool operator()(int b, int h, int q, int kv) const {
    int s = 0;
    for (int hi = n; hi - s > 1;) {
      const int mid = (s + hi) / 2;
      if (cu_q[mid] <= q) s = mid;
      else hi = mid;
    }
    if (kv < cu_k[s] || kv >= cu_k[s + 1]) return false;
    if (!Window{left, right, cu_k[s + 1] - cu_q[s + 1]}(b, h, q, kv)) return false;
    if (causal == Causal::none) return true;
    return kv <= q + (causal == Causal::bottom_right ? cu_k[s + 1] - cu_q[s + 1] : cu_k[s] - cu_q[s]);
  }
};
// 64 x 64 blocks, each visible with probability 1/2: a splitmix-style hash of (seed, block row,
// block column). Test data for block masks: kernel tiles that are whole, empty and partial.
struct RandomBlocks {
  static constexpr int kBlock = 64;
  uint32_t seed;
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const {
    uint32_t x = seed ^ (static_cast<uint32_t>(q / kBlock) * 0x9E3779B1u) ^ (static_cast<uint32_t>(kv / kBlock) * 0x85EBCA77u);
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return (x & 1u) != 0;
  }
};

// A block mask given as data (params.h: blocks): whether the pair's block is listed, one load from
// the table of classes.
struct GivenBlocks {
  const int* t;  // block_q, block_kv, K/V blocks per row, then the classes
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return t[3 + (q / t[0]) * t[2] + kv / t[1]] != 0; }
};

// The book's patterns behind one functor, the kind chosen at run time: one kernel serves them all.
// Called per score it would test the kind on every score; visit(f) tests it once and calls f with
// the concrete rule, so that a kernel's masking loop is compiled once per rule and carries none of
// the others (mask_tile in 05_flash_v2/fa2_tile.cuh). is_causal, when the problem has it, is the
// rule CausalMod.
struct BookMod {
  MaskMod m;
  int offset;  // the diagonal's: is_causal's (CausalMod's, 0 for top-left), else a window's (Lk - Lq)
  bool causal;
  ATTN_HOST_DEVICE static BookMod of(const AttentionParams& p) {
    return {p.mod, p.causal == Causal::top_left ? 0 : p.Lk - p.Lq, p.causal != Causal::none};
  }
  template <class F>
  ATTN_HOST_DEVICE void visit(F&& f) const {
    if (causal) return f(CausalMod{offset});
    switch (m.kind) {
      case ModKind::none: return f(AllKeys{});
      case ModKind::sliding_window: return f(SlidingWindow{m.arg});
      case ModKind::prefix_lm: return f(PrefixLM{m.arg});
      case ModKind::document: return f(Document{m.doc});
      case ModKind::document_causal: return f(DocumentCausal{m.doc});
      case ModKind::random_blocks: return f(RandomBlocks{static_cast<uint32_t>(m.arg)});
      case ModKind::window: return f(Window{m.arg, m.right, offset});
      case ModKind::blocks: return f(GivenBlocks{m.doc});
      default: return;  // a packed batch: steps e and f alone, which need no rule per score (masks.h: has_rule)
    }
  }
  ATTN_HOST_DEVICE bool operator()(int b, int h, int q, int kv) const {
    bool v = true;
    visit([&](const auto& rule) { v = rule(b, h, q, kv); });
    return v;
  }
};

}  // namespace attn
