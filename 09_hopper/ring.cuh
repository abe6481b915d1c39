// ring.cuh: what steps d onwards share and do not change: the block's shared memory (each consumer's
// Q, the ring of K/V stages, their mbarriers), the producer's loop, and the launch. The steps differ
// in their consumers.
#pragma once
#include "dispatch.cuh"
#include "simt/setmaxnreg.cuh"
#include "tile.cuh"

namespace ch09 {

template <class T, int D>
struct Ring {
  T* Qs = aligned_smem<T>();             // [kConsumers][D / 64][kBr][64]
  T* Ks = Qs + kConsumers * kBr * D;     // [kStages][D / 64][kBc][64]
  T* Vs = Ks + kStages * kBc * D;        // the same
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + kStages * kBc * D);  // a stage has landed
  uint64_t* empty = full + kStages;      // every consumer thread is done with a stage
  uint64_t* q_full = empty + kStages;

  // By one thread, before the block's last __syncthreads.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < kStages; ++s) {
      simt::mbarrier_init(&full[s], 1);
      simt::mbarrier_init(&empty[s], kConsumers * kThreads);
    }
    simt::mbarrier_init(q_full, 1);
  }

  // The producer's one thread: every consumer's Q, then tile j into stage j % kStages, once both
  // consumers are done with tile j - kStages.
  __device__ __forceinline__ void produce(const CUtensorMap* q_map, const CUtensorMap* k_map, const CUtensorMap* v_map,
                                          int q0, int bh, int tiles) const {
    constexpr unsigned kTileBytes = kBc * D * sizeof(T);  // a whole box, zeros past the last key included
    simt::mbarrier_arrive_expect_tx(q_full, kConsumers * kBr * D * sizeof(T));
    for (int c = 0; c < kConsumers; ++c)
      for (int cb = 0; cb < D / 64; ++cb)
        simt::tma_load_3d(Qs + (c * (D / 64) + cb) * kBr * 64, q_map, cb * 64, q0 + c * kBr, bh, q_full);
    for (int j = 0; j < tiles; ++j) {
      const int s = j % kStages;
      if (j >= kStages) simt::mbarrier_wait_parity(&empty[s], static_cast<unsigned>(j / kStages - 1) & 1u);
      simt::mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        simt::tma_load_3d(Ks + (s * (D / 64) + cb) * kBc * 64, k_map, cb * 64, j * kBc, bh, &full[s]);
        simt::tma_load_3d(Vs + (s * (D / 64) + cb) * kBc * 64, v_map, cb * 64, j * kBc, bh, &full[s]);
      }
    }
  }

  // A consumer waits for tile j, and gets its stage's descriptors.
  __device__ __forceinline__ int wait_tile(int j) const {
    const int s = j % kStages;
    simt::mbarrier_wait_parity(&full[s], static_cast<unsigned>(j / kStages) & 1u);
    return s;
  }
  __device__ __forceinline__ uint64_t q_desc(int c) const { return k_major(Qs + c * kBr * D); }
  __device__ __forceinline__ uint64_t k_desc(int s) const { return k_major(Ks + s * kBc * D); }
  __device__ __forceinline__ uint64_t v_desc(int s) const { return n_major<kBc>(Vs + s * kBc * D); }
};

// Launches a kernel of steps d onwards, kernel(t, d) naming its instantiation: Q tiles of
// kConsumers * kBr rows, kWsThreads threads, the ring's shared memory.
template <class Kernel>
cudaError_t launch_ring(const attn::AttentionParams& p, Kernel&& kernel) {
  return dispatch(p, [&](auto t, auto d) {
    constexpr int D = decltype(d)::value, rows = kConsumers * kBr;
    TensorMaps maps;
    if (const cudaError_t e = tensor_maps<decltype(t), D>(p, kBr, &maps); e != cudaSuccess) return e;
    return simt::launch(kernel(t, d), dim3((p.Lq + rows - 1) / rows, p.B * p.H), dim3(kWsThreads),
                        ws_smem_bytes(D) + kAlign, maps.q, maps.k, maps.v, p);
  });
}

}  // namespace ch09
