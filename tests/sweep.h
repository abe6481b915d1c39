// sweep.h: the problems every variant must get right.
#pragma once
#include <vector>

#include "harness/problem.h"

namespace attn {

// Lengths that are no multiple of any tile (1, 17, 97, 257) and Lq != Lk both ways; head dims
// 32, 64, 80, 128 (and 96, 256 in fp16/bf16); every dtype; without is_causal and with both
// alignments; B*H > 1.
std::vector<Problem> shape_sweep();
// Boolean and additive masks, shared and per head, with fully masked rows; an explicit scale.
std::vector<Problem> mask_sweep();
// Chapter 10's mask_mods: sliding windows of 0 keys, smaller than a tile and longer than Lk;
// prefixes of 0, inside and past Lk; documents (and causal ones), drawn and of given lengths; random 64 x 64 blocks (tiles whole, empty and
// partial; rows that see no key); lengths 1, ragged, Lq != Lk both ways; every tensor-core head dim;
// fp16 and bf16.
std::vector<Problem> mask_mod_sweep();
// Chapter 10's score mods: softcap (below and above the scores) and ALiBi (heads a power of two and
// not), alone, together, with is_causal and with mask_mods, across lengths, head dims and dtypes.
std::vector<Problem> score_mod_sweep();
// Scales far from 1/sqrt(d): 1e4 (rows nearly one-hot, scores near 1e5: the log-sum-exp's
// tolerance must grow with them), 1e-4 (rows nearly uniform), -1 (the scores' order flipped);
// two K/V tiles of every chapter (Lk = 200), fp32 and fp16, with and without is_causal.
std::vector<Problem> scale_sweep();
// The backward's: N = 1, odd lengths across tile edges, Lq != Lk both ways, every dtype, the head
// dims of every step, without is_causal and with both alignments, masks of both kinds with fully
// masked rows, an explicit scale. Smaller than the forward's: each problem costs about five forwards.
std::vector<Problem> backward_sweep();

}  // namespace attn
