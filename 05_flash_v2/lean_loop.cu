// lean_loop.cu: step h, chapter 05's instantiation of the kernel in lean_loop.cuh: every K/V tile
// visited, blocks in grid order (Q tile, head).
#include "lean_loop.cuh"

namespace ch05 {

cudaError_t lean_loop(const attn::AttentionParams& p) {
  return dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr Tiles kT = fa2_tiles(D);
    return simt::launch(lean_loop_kernel<T, D, EveryTile>, dim3((p.Lq + kT.Br - 1) / kT.Br, p.B * p.H),
                        dim3(block_threads(Step::lean_loop, D)), smem_bytes(Step::lean_loop, D, sizeof(T)), p);
  });
}

}  // namespace ch05
