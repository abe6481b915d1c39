// tma_ring.cu: step c. Step b's loop with its copies handed to the TMA unit: K and V tiles land in a
// ring of kStages stages while the warpgroup computes on an earlier one.
//
// In step b every thread loaded K and V into registers and stored them into the swizzled layout,
// between two __syncthreads, while the tensor cores waited. Here one thread asks for whole boxes
// (simt/tma.cuh): per tile, one box of 64 columns x Bc keys per column block of K and of V, which the
// TMA unit writes in the 128-byte swizzle that wgmma reads (the tensor maps say so), zeros past the
// last key included. Each stage has two mbarriers (simt/mbarrier.cuh): `full`, whose phase completes
// when the stage's bytes have landed (the issuing thread announces them with expect_tx), and
// `empty`, whose phase completes when all 128 threads have arrived, done with the stage. The
// issuing thread waits on `empty` before it refills a stage: no __syncthreads in the loop. Tile j
// lives in stage j % kStages, and the waits name the phase by its parity, (j / kStages) % 2.
// Cost: thread 0 both computes and refills, so a refill waits until its own warpgroup is done with
// the stage; and the products still wait for each other and for the softmax (steps d to f).
#include "dispatch.cuh"
#include "tile.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kThreads)
    tma_ring_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                    const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  T* Qs = aligned_smem<T>();
  T* Ks = Qs + kBr * D;               // [kStages][D / 64][kBc][64]
  T* Vs = Ks + kStages * kBc * D;     // the same
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + kStages * kBc * D);
  uint64_t* empty = full + kStages;
  uint64_t* q_full = empty + kStages;
  const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * kBr;
  const int warp = static_cast<int>(threadIdx.x / 32), row = q0 + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const int tiles = (p.Lk + kBc - 1) / kBc;
  const float scale_log2 = p.scale * attn::kLog2e;
  constexpr unsigned kTileBytes = kBc * D * sizeof(T);  // a whole box, zeros past the last key included

  auto refill = [&](int j) {  // thread 0: tile j's K and V into stage j % kStages
    const int s = j % kStages;
    simt::mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);
    for (int cb = 0; cb < D / 64; ++cb) {
      simt::tma_load_3d(Ks + (s * (D / 64) + cb) * kBc * 64, &k_map, cb * 64, j * kBc, bh, &full[s]);
      simt::tma_load_3d(Vs + (s * (D / 64) + cb) * kBc * 64, &v_map, cb * 64, j * kBc, bh, &full[s]);
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      simt::mbarrier_init(&full[s], 1);
      simt::mbarrier_init(&empty[s], kThreads);
    }
    simt::mbarrier_init(q_full, 1);
  }
  simt::fence_mbarrier_init();
  __syncthreads();
  if (threadIdx.x == 0) {
    simt::mbarrier_arrive_expect_tx(q_full, kBr * D * sizeof(T));
    for (int cb = 0; cb < D / 64; ++cb) simt::tma_load_3d(Qs + cb * kBr * 64, &q_map, cb * 64, q0, bh, q_full);
    for (int j = 0; j < kStages && j < tiles; ++j) refill(j);
  }

  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  simt::mbarrier_wait_parity(q_full, 0);
  const uint64_t q_desc = k_major(Qs);

  for (int j = 0; j < tiles; ++j) {
    const int s = j % kStages, k0 = j * kBc;
    const unsigned phase = static_cast<unsigned>(j / kStages) & 1u;
    simt::mbarrier_wait_parity(&full[s], phase);  // tile j has landed
    const uint64_t k_desc = k_major(Ks + s * kBc * D), v_desc = n_major<kBc>(Vs + s * kBc * D);

    attend_tile<T, D>(O, m, l, q_desc, k_desc, v_desc, p, row, bh, k0, scale_log2);

    simt::mbarrier_arrive(&empty[s]);  // this thread is done with stage s
    if (threadIdx.x == 0 && j + kStages < tiles) {
      simt::mbarrier_wait_parity(&empty[s], phase);  // and so is every other
      refill(j + kStages);
    }
    __syncwarp();  // warp 0 whole again before the next wgmma (.sync.aligned)
  }
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t tma_ring(const attn::AttentionParams& p) {
  return dispatch(p, [&](auto t, auto d) {
    constexpr int D = decltype(d)::value;
    TensorMaps maps;
    if (const cudaError_t e = tensor_maps<decltype(t), D>(p, kBr, &maps); e != cudaSuccess) return e;
    return simt::launch(tma_ring_kernel<decltype(t), D>, dim3((p.Lq + kBr - 1) / kBr, p.B * p.H), dim3(kThreads),
                        ring_smem_bytes(D) + kAlign, maps.q, maps.k, maps.v, p);
  });
}

}  // namespace ch09
