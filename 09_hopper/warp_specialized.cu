// warp_specialized.cu: step d. Step c's ring with its two jobs given to different warps: a producer
// warpgroup copies, two consumer warpgroups compute.
//
// In step c thread 0 refilled a stage only once its own warpgroup had finished with it, and spent
// its registers on O and S like every other thread. Here the block has three warpgroups. The first,
// the producer, gives its registers back (setmaxnreg.dec to 24, simt/setmaxnreg.cuh) and one of its
// threads does nothing but wait on `empty` and issue TMA copies; the two consumers take the
// registers (setmaxnreg.inc to 240) and each runs step c's loop on its own 64 rows of a 128-row Q
// tile, against the same K/V stages: `empty` now completes when all 256 consumer threads have
// arrived. The copies of tile j + kStages start as soon as both consumers are done with tile j,
// whatever they compute next, and a K/V tile brought in once serves 128 query rows instead of 64.
// After the role split no barrier spans the block: roles meet only on the mbarriers. The shared
// memory, the role split (split_roles) and the producer's loop are in ring.cuh: the later steps
// change only the consumers.
// Cost: a third of the threads do no arithmetic; and each consumer's products still wait for its
// own softmax (steps e and f).
#include "ring.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kWsThreads, 1)
    warp_specialized_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                            const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  const Ring<T, D> ring;
  const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * kConsumers * kBr;
  const int tiles = (p.Lk + kBc - 1) / kBc;
  if (!split_roles(ring, &q_map, &k_map, &v_map, q0, bh, tiles)) return;  // the producer is done

  const int c = static_cast<int>(threadIdx.x) / kThreads - 1, warp = static_cast<int>(threadIdx.x / 32) % 4;
  const int row = q0 + c * kBr + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const float scale_log2 = p.scale * attn::kLog2e;
  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  simt::mbarrier_wait_parity(ring.q_full, 0);

  for (int j = 0; j < tiles; ++j) {
    const int s = ring.wait_tile(j);
    attend_tile<T, D>(O, m, l, ring.q_desc(c), ring.k_desc(s), ring.v_desc(s), p, row, bh, j * kBc, scale_log2);
    simt::mbarrier_arrive(&ring.empty[s]);  // this thread is done with stage s
  }
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t warp_specialized(const attn::AttentionParams& p) {
  return launch_ring(p, [](auto t, auto d) { return warp_specialized_kernel<decltype(t), decltype(d)::value>; });
}

}  // namespace ch09
