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
// After the role split no barrier spans the block: roles meet only on the mbarriers.
// Cost: a third of the threads do no arithmetic; and each consumer's products still wait for its
// own softmax (steps e and f).
#include "dispatch.cuh"
#include "simt/setmaxnreg.cuh"
#include "tile.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kWsThreads, 1)
    warp_specialized_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                            const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  T* Qs = aligned_smem<T>();              // [kConsumers][D / 64][kBr][64]
  T* Ks = Qs + kConsumers * kBr * D;      // [kStages][D / 64][kBc][64]
  T* Vs = Ks + kStages * kBc * D;         // the same
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + kStages * kBc * D);
  uint64_t* empty = full + kStages;
  uint64_t* q_full = empty + kStages;
  const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * kConsumers * kBr;
  const int wg = static_cast<int>(threadIdx.x) / kThreads;  // 0: the producer; 1 .. kConsumers: consumers
  const int tiles = (p.Lk + kBc - 1) / kBc;
  constexpr unsigned kTileBytes = kBc * D * sizeof(T);

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      simt::mbarrier_init(&full[s], 1);
      simt::mbarrier_init(&empty[s], kConsumers * kThreads);
    }
    simt::mbarrier_init(q_full, 1);
  }
  simt::fence_mbarrier_init();
  __syncthreads();  // the last barrier of the whole block

  if (wg == 0) {  // the producer
    simt::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      simt::mbarrier_arrive_expect_tx(q_full, kConsumers * kBr * D * sizeof(T));
      for (int c = 0; c < kConsumers; ++c)
        for (int cb = 0; cb < D / 64; ++cb)
          simt::tma_load_3d(Qs + (c * (D / 64) + cb) * kBr * 64, &q_map, cb * 64, q0 + c * kBr, bh, q_full);
      for (int j = 0; j < tiles; ++j) {
        const int s = j % kStages;
        if (j >= kStages) simt::mbarrier_wait_parity(&empty[s], static_cast<unsigned>(j / kStages - 1) & 1u);
        simt::mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);
        for (int cb = 0; cb < D / 64; ++cb) {
          simt::tma_load_3d(Ks + (s * (D / 64) + cb) * kBc * 64, &k_map, cb * 64, j * kBc, bh, &full[s]);
          simt::tma_load_3d(Vs + (s * (D / 64) + cb) * kBc * 64, &v_map, cb * 64, j * kBc, bh, &full[s]);
        }
      }
    }
    return;
  }

  simt::setmaxnreg_inc<kConsumerRegs>();
  const int c = wg - 1, warp = static_cast<int>(threadIdx.x / 32) % 4;
  const int row = q0 + c * kBr + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const float scale_log2 = p.scale * attn::kLog2e;
  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  simt::mbarrier_wait_parity(q_full, 0);
  const uint64_t q_desc = k_major(Qs + c * kBr * D);

  for (int j = 0; j < tiles; ++j) {
    const int s = j % kStages;
    simt::mbarrier_wait_parity(&full[s], static_cast<unsigned>(j / kStages) & 1u);
    const uint64_t k_desc = k_major(Ks + s * kBc * D), v_desc = n_major<kBc>(Vs + s * kBc * D);
    attend_tile<T, D>(O, m, l, q_desc, k_desc, v_desc, p, row, bh, j * kBc, scale_log2);
    simt::mbarrier_arrive(&empty[s]);
  }
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t warp_specialized(const attn::AttentionParams& p) {
  return dispatch(p, [&](auto t, auto d) {
    constexpr int D = decltype(d)::value;
    TensorMaps maps;
    if (const cudaError_t e = tensor_maps<decltype(t), D>(p, kBr, &maps); e != cudaSuccess) return e;
    constexpr int rows = kConsumers * kBr;
    return simt::launch(warp_specialized_kernel<decltype(t), D>, dim3((p.Lq + rows - 1) / rows, p.B * p.H),
                        dim3(kWsThreads), ws_smem_bytes(D) + kAlign, maps.q, maps.k, maps.v, p);
  });
}

}  // namespace ch09
