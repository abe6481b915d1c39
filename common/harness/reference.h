// reference.h: what every kernel is checked against.
//
// The reference computes, in double precision with Eigen, exactly what
// torch.nn.functional.scaled_dot_product_attention defines, on the dtype-rounded inputs:
//   S = scale * Q K^T, then is_causal (key j visible to query i when j <= i + offset, offset 0 for
//   top-left alignment, Lk - Lq for bottom-right) or attn_mask (boolean: false removes the key;
//   additive: added to S), P = softmax(S) by rows, O = P V.
// A query row with no visible key (all masked) gets O = 0 and lse = -inf: the convention of
// FlashAttention and of this book (see notes/00_overview.md).
#pragma once
#include <utility>
#include <vector>

#include "problem.h"

namespace attn {

// The query rows checked: the same rows of each listed (b, h). Large problems are checked on a
// sample, so that the CPU reference stays fast next to a GPU.
struct Selection {
  std::vector<std::pair<int, int>> heads;  // (b, h)
  std::vector<int> rows;
  size_t size(int d) const { return heads.size() * rows.size() * static_cast<size_t>(d); }
  static Selection all(const Problem& p);
  // Every row when the problem is small (B*H*Lq*Lk*d up to `budget` multiply-adds), else at most
  // max_rows rows (the first and last rows, rows on 64-row tile edges, seeded random ones) of at
  // most max_heads heads (the first, the last, then seeded ones).
  static Selection sample(const Problem& p, double budget = 2e8, int max_rows = 192, int max_heads = 4);
};

struct Expected {
  std::vector<double> o;    // [heads][rows][d] of the selection
  std::vector<double> lse;  // [heads][rows]
  // [heads][rows]: |scale| * ||q_i|| * max_j ||k_j||, which bounds |scale * q_i . k_j| for every
  // key (Cauchy-Schwarz) and so what rounding the scores can cost (compare.cpp).
  std::vector<double> score_bound;
};

Expected reference(const Problem& p, const Inputs& in, const Selection& sel);

// What a naive computation in the problem's own dtype gets: torch's math backend in fp16/bf16
// (Q and K scaled by sqrt(scale) and rounded, S = Q K^T rounded, mask added and rounded, softmax
// in fp32 rounded, O = P V rounded; fp32 accumulation throughout). FlashAttention's tests judge a
// kernel by its error against the double reference, relative to this computation's error.
std::vector<double> naive_same_dtype(const Problem& p, const Inputs& in, const Selection& sel);

}  // namespace attn
