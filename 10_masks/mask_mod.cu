// mask_mod.cu: step b, the mask as a function. Step a's tensor is gone: the kernel takes the rule
// itself (kernels/mask_mod.h, FlexAttention's mask_mod) as its Policy's mask_mod and evaluates it
// on each score of a tile, in registers, where step a loaded a byte (fa2_tile.cuh: mask_tile).
// A rule is a few integer instructions (a document's: two loads of its positions' documents, which
// stay in L1); it knows nothing of tiles yet, so every tile is still visited and masked.
// Cost: the rule's instructions on every score; the book's rules share one functor (BookMod), whose
// kind is a branch taken the same way by every thread, where a kernel for one rule has none.
#include "05_flash_v2/lean_loop.cuh"
#include "kernels/mask_mod.h"
#include "masks.h"

namespace ch10 {
namespace {

struct EveryTileMod : ch05::EveryTile {
  __device__ static bool needs_mask(const attn::AttentionParams&, int /*q0*/, int /*j*/, int /*k0*/, int /*Bc*/) {
    return true;
  }
  __device__ static attn::BookMod mask_mod(const attn::AttentionParams& p) { return attn::BookMod::of(p); }
};

}  // namespace

cudaError_t mask_mod(const attn::AttentionParams& p) {
  if (!has_rule(p)) return cudaErrorInvalidValue;
  return ch05::dispatch_tensor_core(
      p, [&](auto t, auto d) { return ch05::launch_policy<decltype(t), decltype(d)::value, EveryTileMod>(p); });
}

}  // namespace ch10
