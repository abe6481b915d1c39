// ring.cuh: what steps d onwards share and do not change: the block's shared memory (each consumer's
// Q, the ring of K/V stages, their mbarriers), the producer's loop, and the launch. The steps differ
// in their consumers.
#pragma once
#include "06_causal/causal.h"  // heaviest_first_grid
#include "dispatch.cuh"
#include "simt/named_barrier.cuh"
#include "simt/setmaxnreg.cuh"
#include "tile.cuh"

namespace ch09 {

template <class T, int D, int Stages = kStages>
struct Ring {
  T* Qs = aligned_smem<T>();             // [kConsumers][D / 64][kBr][64]
  T* Ks = Qs + kConsumers * kBr * D;     // [Stages][D / 64][kBc][64]
  T* Vs = Ks + Stages * kBc * D;         // the same
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + Stages * kBc * D);  // a stage has landed
  uint64_t* empty = full + Stages;       // every consumer thread is done with a stage
  uint64_t* q_full = empty + Stages;

  // By one thread, before the block's last __syncthreads.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < Stages; ++s) {
      simt::mbarrier_init(&full[s], 1);
      simt::mbarrier_init(&empty[s], kConsumers * kThreads);
    }
    simt::mbarrier_init(q_full, 1);
  }

  // The producer's one thread: every consumer's Q, then tile j into stage j % Stages, once both
  // consumers are done with tile j - Stages.
  __device__ __forceinline__ void produce(const CUtensorMap* q_map, const CUtensorMap* k_map, const CUtensorMap* v_map,
                                          int q0, int bh, int tiles) const {
    constexpr unsigned kTileBytes = kBc * D * sizeof(T);  // a whole box, zeros past the last key included
    simt::mbarrier_arrive_expect_tx(q_full, kConsumers * kBr * D * sizeof(T));
    for (int c = 0; c < kConsumers; ++c)
      for (int cb = 0; cb < D / 64; ++cb)
        simt::tma_load_3d(Qs + (c * (D / 64) + cb) * kBr * 64, q_map, cb * 64, q0 + c * kBr, bh, q_full);
    for (int j = 0; j < tiles; ++j) {
      const int s = j % Stages;
      if (j >= Stages) simt::mbarrier_wait_parity(&empty[s], static_cast<unsigned>(j / Stages - 1) & 1u);
      simt::mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        simt::tma_load_3d(Ks + (s * (D / 64) + cb) * kBc * 64, k_map, cb * 64, j * kBc, bh, &full[s]);
        simt::tma_load_3d(Vs + (s * (D / 64) + cb) * kBc * 64, v_map, cb * 64, j * kBc, bh, &full[s]);
      }
    }
  }

  // A consumer waits for tile j, and gets its stage's descriptors.
  __device__ __forceinline__ int wait_tile(int j) const {
    const int s = j % Stages;
    simt::mbarrier_wait_parity(&full[s], static_cast<unsigned>(j / Stages) & 1u);
    return s;
  }
  __device__ __forceinline__ uint64_t q_desc(int c) const { return k_major(Qs + c * kBr * D); }
  __device__ __forceinline__ uint64_t k_desc(int s) const { return k_major(Ks + s * kBc * D); }
  __device__ __forceinline__ uint64_t v_desc(int s) const { return n_major<kBc>(Vs + s * kBc * D); }
};

// Steps e onwards: the two consumers take turns at issuing their S chains (attend_tile's Turn).
// Consumer c's named barrier is kTurn + c, for both warpgroups' 256 threads: c takes its turn by
// waiting on it (bar.sync, 128 threads), the other gives it by arriving (bar.arrive, 128) once its
// own chain is issued. Consumer 1 gives consumer 0 the first turn (start), and nobody passes the
// turn after the last chain of all, which no turn follows.
inline constexpr unsigned kTurn = 1;  // named barriers 1 and 2 (0 is __syncthreads')
struct PingPong {
  unsigned mine, other;
  bool pass_on;
  // Consumer c's turn for its chain of tile j.
  __device__ __forceinline__ PingPong(int c, int j, int tiles)
      : mine(kTurn + static_cast<unsigned>(c)), other(kTurn + static_cast<unsigned>(1 - c)), pass_on(c == 0 || j + 1 < tiles) {
    static_assert(kConsumers == 2, "the turn goes back and forth between two consumers");
  }
  __device__ __forceinline__ static void start(int c) {
    if (c == 1) simt::named_barrier_arrive(kTurn, kConsumers * kThreads);
  }
  __device__ __forceinline__ void take() const { simt::named_barrier_sync(mine, kConsumers * kThreads); }
  __device__ __forceinline__ void pass() const {
    if (pass_on) simt::named_barrier_arrive(other, kConsumers * kThreads);
  }
};

// The block's start, the same in steps d onwards: one thread initialises the ring's barriers before
// the block's last __syncthreads (after it, roles meet only on the mbarriers); the producer
// warpgroup gives its registers back and its thread 0 copies Q and the block's tiles, then returns
// false; a consumer takes the registers and gets true. No copy when no tile is visited (step g).
template <class T, int D, int Stages>
__device__ __forceinline__ bool split_roles(const Ring<T, D, Stages>& ring, const CUtensorMap* q_map, const CUtensorMap* k_map,
                                            const CUtensorMap* v_map, int q0, int bh, int tiles) {
  if (threadIdx.x == 0) ring.init();
  simt::fence_mbarrier_init();
  __syncthreads();
  if (threadIdx.x < kThreads) {  // warpgroup 0, the producer
    simt::setmaxnreg_dec<kProducerRegs>();  // by all 32 lanes of each of its warps, before the branch
    if (threadIdx.x == 0 && tiles > 0) ring.produce(q_map, k_map, v_map, q0, bh, tiles);
    return false;
  }
  simt::setmaxnreg_inc<kConsumerRegs>();
  return true;
}

// Launches a kernel of steps d onwards, kernel(t, d) naming its instantiation: Q tiles of
// kConsumers * kBr rows, kWsThreads threads, the shared memory of its ring of Stages. The grid is (Q tiles, heads),
// heads at most 65535 (the registry's max_heads), or for step g under is_causal, which launches the
// heaviest Q tiles first (causal_skip.cu), chapter 06's (heads of a section, Q tiles over y,
// sections or the Q tiles' spread over z): no dimension past its limit.
template <int Stages = kStages, class Kernel>
cudaError_t launch_ring(const attn::AttentionParams& p, Kernel&& kernel, bool heaviest_first = false) {
  if (p.Lk < 1) return cudaErrorInvalidValue;  // steps d to f wait for tile 0 (the harness refuses it first)
  return dispatch(p, [&](auto t, auto d) {
    constexpr int D = decltype(d)::value, rows = kConsumers * kBr;
    TensorMaps maps;
    if (const cudaError_t e = tensor_maps<decltype(t), D>(p, kBr, &maps); e != cudaSuccess) return e;
    const unsigned q_tiles = static_cast<unsigned>((p.Lq + rows - 1) / rows), heads = static_cast<unsigned>(p.B * p.H);
    const dim3 grid =
        heaviest_first ? ch06::heaviest_first_grid(heads, q_tiles, kv_section(p, sizeof(decltype(t)), D)) : dim3(q_tiles, heads);
    return simt::launch(kernel(t, d), grid, dim3(kWsThreads), ws_smem_bytes(D, Stages) + kAlign, maps.q, maps.k, maps.v, p);
  });
}

}  // namespace ch09
