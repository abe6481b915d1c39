// score_mod.h: chapter 10's score mods, FlexAttention's score_mod(score, b, h, q_idx, kv_idx) -> score.
// Each is a functor a kernel applies in fp32 to the scaled score (scale * q.k) of every pair it
// visits, before the row maximum; FlashAttention-2's two as functors: softcap and alibi_slopes.
// params.h defines what each means; the reference (harness/reference.cpp) computes them in double.
#pragma once
#include "params.h"
#include "simt/ptx.cuh"

namespace attn {

struct NoScoreMod {
  __device__ float operator()(float s, int, int, int, int) const { return s; }
};
// FlashAttention-2's softcap (Gemma 2): cap * tanh(s / cap), a smooth clamp into (-cap, cap). One
// MUFU.TANH per score (tanh.approx.f32, as FlashAttention's), and a multiply on each side: the
// reciprocal is taken once (a division per score would be a MUFU.RCP and a correction).
struct Softcap {
  float cap, inv;
  __device__ float operator()(float s, int, int, int, int) const { return cap * simt::tanh_approx(s * inv); }
};
// FlashAttention-2's alibi_slopes: s - slope_h * |q + Lk - Lq - kv|, the distance from the diagonal
// aligned bottom-right (offset = Lk - Lq); with is_causal, slope_h * (kv - q - offset) on the keys seen.
// Made for one head: its slope is computed once, not per score (an exp2 and a division).
struct Alibi {
  float slope;
  int offset;
  __device__ float operator()(float s, int, int, int q, int kv) const {
    const int dist = q + offset - kv;
    return s - slope * static_cast<float>(dist < 0 ? -dist : dist);
  }
};
// Both, in FlashAttention-2's order: the cap first, then the bias.
struct SoftcapAlibi {
  Softcap cap;
  Alibi alibi;
  __device__ float operator()(float s, int b, int h, int q, int kv) const {
    return alibi(cap(s, b, h, q, kv), b, h, q, kv);
  }
};

// The book's score mods behind one functor, chosen at run time from the parameters, for head h of
// batch b; visit(f) tests them once per tile and calls f with the concrete functor, as BookMod does
// for the rules. The slope is head (b, h)'s of H: the user's (given_slopes, one load)
// or computed.
struct BookScore {
  float softcap;
  bool alibi;
  const float* slopes;
  int bh, h, H, offset;
  __device__ static BookScore of(const AttentionParams& p, int b, int h) {
    return {p.softcap, p.mod.alibi, given_slopes(p), b * p.H + h, h, p.H, p.Lk - p.Lq};
  }
  template <class F>
  __device__ void visit(F&& f) const {
    const Softcap cap{softcap, 1.f / softcap};
    const Alibi bias{alibi ? (slopes ? slopes[bh] : alibi_slope(h, H)) : 0.f, offset};
    if (softcap > 0.f && alibi) return f(SoftcapAlibi{cap, bias});
    if (softcap > 0.f) return f(cap);
    if (alibi) return f(bias);
    return f(NoScoreMod{});
  }
};

// A Policy (lean_loop's) with the book's score mods for head h: chapter 10's step d on step c's
// lists, step f on its window.
template <class Policy>
struct WithBookScore : Policy {
  __device__ static BookScore score_mod(const AttentionParams& p, int b, int h) { return BookScore::of(p, b, h); }
};

}  // namespace attn
