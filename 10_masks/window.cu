// window.cu: step f, a sliding window in closed form. FlashAttention-2's window_size = (left,
// right): a query sees the keys from `left` before its diagonal to `right` after it, the diagonal
// bottom-right as FlashAttention aligns it (params.h). Step c found a pattern's tiles by evaluating
// its rule on every (query, key) pair and listing them; a window needs no list. A Q tile sees keys
// from its first row's first to its last row's last: its K/V tiles are one range, two divisions
// away (masks.h: window_tiles), and a tile needs the rule only where it crosses one of the window's
// two edges or the end of the keys: the others are a range of visits too (window_full), so a tile's
// test is two comparisons. The kernel is chapter 05's lean_loop again, with that Policy: the rule is
// the Window functor itself, not BookMod's switch over the kinds.
// With the window cut by the sequence's start (and end), the Q tiles there have less work, and the
// blocks are launched from the end where the cut is shorter (window_from_end), so that the lighter
// tiles close the launch, as chapter 06 launched its causal tiles heaviest first.
// Cost: nothing is written or read beyond Q, K, V and O; per block, a few integer instructions for the
// two ranges and the order.
#include "05_flash_v2/lean_loop.cuh"
#include "06_causal/causal.h"
#include "kernels/mask_mod.h"
#include "masks.h"

namespace ch10 {
namespace {

template <int Br, int Bc>
struct WindowTiles : ch05::EveryTile {
  // Grid (heads, Q tiles over y and z), chapter 06's: the Q tiles counted down from the last, or up.
  __device__ static Block block(const attn::AttentionParams& p, int /*q_tiles*/) {
    const int head = static_cast<int>(blockIdx.x);
    if (window_from_end(p)) return {head, ch06::heaviest_first_tile(blockIdx.y, blockIdx.z, gridDim.y, gridDim.z)};
    return {head, static_cast<int>(blockIdx.y + gridDim.y * blockIdx.z)};  // past the last tile: nothing to visit
  }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int /*Br*/, int /*Bc*/) {
    return window_tiles(p, q0, Br, Bc).count;
  }
  __device__ static int kv_tile(const attn::AttentionParams& p, int q0, int j) { return window_tiles(p, q0, Br, Bc).first + j; }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int j, int /*k0*/, int /*Bc*/) {
    const TileRange full = window_full(p, q0, Br, Bc);
    return j < full.first || j >= full.first + full.count;
  }
  __device__ static attn::Window mask_mod(const attn::AttentionParams& p) { return {p.mod.arg, p.mod.right, p.Lk - p.Lq}; }
};

}  // namespace

cudaError_t window(const attn::AttentionParams& p) {
  if (p.mod.kind != attn::ModKind::window) return cudaErrorInvalidValue;  // its Policy reads the window's sides
  return ch05::dispatch_tensor_core(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr ch05::Tiles kT = ch05::fa2_tiles(D);
    const auto q_tiles = static_cast<unsigned>((p.Lq + kT.Br - 1) / kT.Br), heads = static_cast<unsigned>(p.B * p.H);
    return simt::launch(ch05::lean_loop_kernel<T, D, WindowTiles<kT.Br, kT.Bc>>, ch06::heaviest_first_grid(heads, q_tiles),
                        dim3(ch05::block_threads(ch05::Step::lean_loop, D)),
                        ch05::smem_bytes(ch05::Step::lean_loop, D, sizeof(T)), p);
  });
}

}  // namespace ch10
