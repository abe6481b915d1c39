// lean_loop.cu: step h, chapter 05's instantiation of the kernel in lean_loop.cuh: every K/V tile
// visited, blocks in grid order (Q tile, head).
#include "lean_loop.cuh"

namespace ch05 {

cudaError_t lean_loop(const attn::AttentionParams& p) {
  return dispatch_tensor_core(
      p, [&](auto t, auto d) { return launch_policy<decltype(t), decltype(d)::value, EveryTile>(p); });
}

}  // namespace ch05
