// backward_params.h: what every backward kernel of the book receives. Plain data, no harness.
//
// The forward's problem (AttentionParams: Q, K, V, the scale, is_causal, the mask) plus what the
// backward adds. Given the forward's O and log-sum-exp L and the gradient dO of a loss with
// respect to O, the kernels compute the gradients with respect to Q, K and V:
//
//   inputs:  Q [B, H, Lq, d]  K, V [B, H, Lk, d]  O, dO [B, H, Lq, d]  (type `dtype`)
//            L [B, H, Lq] fp32 (AttentionParams::lse; -inf for a row that sees no key)
//   outputs: dQ [B, H, Lq, d]  dK, dV [B, H, Lk, d]  (type `dtype`, accumulated in fp32)
//
// Here AttentionParams::o is an input (the forward's output) and ::lse is read, not written.
#pragma once
#include "params.h"

namespace attn {

struct BackwardParams : AttentionParams {
  const void* dout;  // dO
  void* dq;
  void* dk;
  void* dv;
};

}  // namespace attn
