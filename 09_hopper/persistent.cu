// persistent.cu: step i. Step h's blocks made persistent: one block per SM, each walking the Q tiles
// of step h's grid, in its launch order, in steps of the blocks launched (FlashAttention-3's static
// tile scheduler over its heaviest-first order).
//
// A block of step h runs one Q tile: it waits for Q and its first K/V tile, multiplies, and ends
// with O's stores, its SM idle at both ends but for the rest of the ring. Where a Q tile visits few
// K/V tiles (N = 512: one to four), those ends weigh as much as the products. Here the producer goes
// straight on to the next Q tile: its first K/V tile into the ring as soon as a stage frees, then Q
// once every consumer has given the last one back (q_empty: after its last S, before its last P V),
// then the other tiles, all while the consumers finish the Q tile before and write its O. The
// ring's tiles and Q's copies are counted across the Q tiles (t0, n), so that each mbarrier's phase
// follows on from the last Q tile's.
// Cost: an mbarrier more (q_empty), an arrival on it and a wait for it per Q tile; Q's copy waits
// for the last S of the Q tile before (one Q buffer: at d = 128 the ring leaves no room for a
// second); a loop around step h's block; the Q tiles dealt in turn, a block's share may be heavier
// than another's.
#include "causal_skip.cuh"

namespace ch09 {
namespace {

// Step h's ring with Q given back: every consumer thread arrives once its last S is done.
template <class T, int D, int Consumers>
struct PersistentRing : Ring<T, D, kRotatedStages, Consumers> {
  uint64_t* q_empty = this->q_full + 1;
  __device__ __forceinline__ void init() const {
    Ring<T, D, kRotatedStages, Consumers>::init();
    simt::mbarrier_init(q_empty, Consumers * kThreads);
  }
};

template <class T, int D>
__global__ void __launch_bounds__(ws_threads(consumers_for(D)), 1)
    persistent_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                      const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p, const dim3 grid) {
  constexpr int C = consumers_for(D), rows = C * kBr;
  const PersistentRing<T, D, C> ring;
  const unsigned blocks = grid.x * grid.y * grid.z;
  // Q tile i of step h's grid, in its launch order (x fastest), and the K/V tiles its block visits.
  const auto tile = [&](unsigned i, int* q0, int* tiles) {
    const ch06::HeadTile at = block_tile(p, uint3{i % grid.x, i / grid.x % grid.y, i / grid.x / grid.y}, grid);
    *q0 = at.tile * rows;
    *tiles = at.head < p.B * p.H ? ch06::tiles_to_visit(p, *q0, rows, kBc) : -1;  // -1: past the heads
    return at.head;
  };
  int t0 = 0, n = 0;  // the K/V tiles and the Q tiles copied so far
  if (!split_roles(ring, &q_map, &k_map, &v_map, 0, 0, 0)) {  // the producer: nothing copied yet
    if (threadIdx.x != 0) return;
    for (unsigned i = blockIdx.x; i < blocks; i += gridDim.x) {
      int q0, tiles;
      const int bh = tile(i, &q0, &tiles);
      if (tiles <= 0) continue;
      // Q once the last one is given back, after this Q tile's first K/V tile (none to give back first)
      ring.produce(&q_map, &k_map, &v_map, q0, bh, tiles, t0, n > 0 ? ring.q_empty : nullptr, static_cast<unsigned>(n - 1) & 1u);
      t0 += tiles, ++n;
    }
    return;
  }
  for (unsigned i = blockIdx.x; i < blocks; i += gridDim.x) {
    int q0, tiles;
    const int bh = tile(i, &q0, &tiles);
    if (tiles < 0) continue;
    consume<T, D, C, true>(ring, p, q0, bh, tiles, t0, n);
    if (tiles > 0) t0 += tiles, ++n;
  }
}

}  // namespace

cudaError_t persistent(const attn::AttentionParams& p) {
  return launch_ring<kRotatedStages, true, true>(
      p, [](auto t, auto d) { return persistent_kernel<decltype(t), decltype(d)::value>; }, heaviest_first(p));
}

}  // namespace ch09
