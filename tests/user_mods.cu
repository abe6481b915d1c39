// user_mods.cu: chapter 05's lean_loop with a mask_mod and a score_mod of a user's own, neither of
// which the book knows: FlexAttention's promise, that any pair of functors makes a kernel, kept by
// the Policy (lean_loop.cuh) without a line of common/ changed. test_masks.cpp checks the output
// against a double-precision loop of its own.
#include "05_flash_v2/lean_loop.cuh"
#include "user_mods.h"

namespace user_mods {
namespace {

// A Policy visits every tile and masks each with the rule; the score mod runs first, on every score.
struct UserTiles : ch05::EveryTile {
  __device__ static bool needs_mask(const attn::AttentionParams&, int, int, int, int) { return true; }
  __device__ static Dilated mask_mod(const attn::AttentionParams&) { return {}; }
  __device__ static RelativeBias score_mod(const attn::AttentionParams&, int, int) { return {}; }
};

}  // namespace

cudaError_t run(const attn::AttentionParams& p) {
  if (p.dtype != attn::DType::fp16 || p.d != kD) return cudaErrorInvalidValue;
  return ch05::launch_policy<__half, kD, UserTiles>(p);
}

}  // namespace user_mods
