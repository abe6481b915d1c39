// eight_warps.cu: the launches of eight_warps.h. A Policy names its tiles (lean_loop.cuh's
// policy_tiles): each here is the library's own Policy with 8-warp tiles, launched as the library
// launches it, so the emulator counts what the H200 ran.
#include "eight_warps.h"

#include "06_causal/skip_tiles.cuh"

namespace eight_warps {
namespace {

constexpr ch05::Tiles kEightWarps{8, 2, 8 * 2 * 16, 32, 2};

template <class Policy>
struct EightWarps : Policy {
  static constexpr ch05::Tiles kTiles = kEightWarps;
};

// f(std::integral_constant<int, D>{}) for fp16 at d = 96 or 128, the head dims that ran 8 warps.
template <class F>
cudaError_t dispatch(const attn::AttentionParams& p, F&& f) {
  if (p.dtype != attn::DType::fp16) return cudaErrorInvalidValue;
  if (p.d == 96) return f(std::integral_constant<int, 96>{});
  if (p.d == 128) return f(std::integral_constant<int, 128>{});
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t lean_loop(const attn::AttentionParams& p) {
  return dispatch(p, [&](auto d) {
    constexpr int D = decltype(d)::value;
    return ch05::launch_policy<__half, D, EightWarps<ch05::EveryTile>>(p);
  });
}

cudaError_t balanced(const attn::AttentionParams& p) {
  return dispatch(p, [&](auto d) {
    constexpr int D = decltype(d)::value;
    using ch06::Mode, ch06::SkipTiles;
    if (p.mask_kind != attn::MaskKind::none) return ch06::launch_tiles<__half, D, EightWarps<SkipTiles<Mode::mask, false>>>(p);
    if (p.causal == attn::Causal::none) return ch06::launch_tiles<__half, D, EightWarps<SkipTiles<Mode::none, false>>>(p);
    return ch06::launch_tiles<__half, D, EightWarps<SkipTiles<Mode::causal, true>>>(p);
  });
}

}  // namespace eight_warps
