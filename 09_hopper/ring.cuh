// ring.cuh: what steps d onwards share and do not change: the block's shared memory (each consumer's
// Q, the ring of K/V stages, their mbarriers), the producer's loop, and the launch. The steps differ
// in their consumers.
#pragma once
#include <algorithm>

#include "06_causal/causal.h"  // heaviest_first_grid
#include "dispatch.cuh"
#include "simt/named_barrier.cuh"
#include "simt/setmaxnreg.cuh"
#include "tile.cuh"

namespace ch09 {

template <class T, int D, int Stages = kStages, int Consumers = kConsumers>
struct Ring {
  static constexpr int kGroups = Consumers;  // consumer warpgroups
  T* Qs = aligned_smem<T>();             // [Consumers][D / 64][kBr][64]
  T* Ks = Qs + Consumers * kBr * D;      // [Stages][D / 64][kBc][64]
  T* Vs = Ks + Stages * kBc * D;         // the same
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + Stages * kBc * D);  // a stage has landed
  uint64_t* empty = full + Stages;       // every consumer thread is done with a stage
  uint64_t* q_full = empty + Stages;

  // By one thread, before the block's last __syncthreads.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < Stages; ++s) {
      simt::mbarrier_init(&full[s], 1);
      simt::mbarrier_init(&empty[s], Consumers * kThreads);
    }
    simt::mbarrier_init(q_full, 1);
  }

  // The producer's one thread: every consumer's Q, then tile j into stage j % Stages, once every
  // consumer is done with tile j - Stages. A persistent block's (step i): t0, the tiles the ring took
  // before this Q tile's, which tile j follows; and Q after the first tile, once the consumers have
  // given the last Q back (q_free's phase q_phase), so that the first tile's copy does not wait for it.
  __device__ __forceinline__ void produce(const CUtensorMap* q_map, const CUtensorMap* k_map, const CUtensorMap* v_map,
                                          int q0, int bh, int tiles, int t0 = 0, uint64_t* q_free = nullptr,
                                          unsigned q_phase = 0) const {
    constexpr unsigned kTileBytes = kBc * D * sizeof(T);  // a whole box, zeros past the last key included
    const auto copy_q = [&] {
      simt::mbarrier_arrive_expect_tx(q_full, Consumers * kBr * D * sizeof(T));
      for (int c = 0; c < Consumers; ++c)
        for (int cb = 0; cb < D / 64; ++cb)
          simt::tma_load_3d(Qs + (c * (D / 64) + cb) * kBr * 64, q_map, cb * 64, q0 + c * kBr, bh, q_full);
    };
    if (q_free == nullptr) copy_q();
    for (int j = 0; j < tiles; ++j) {
      const int t = t0 + j, s = t % Stages;
      if (t >= Stages) simt::mbarrier_wait_parity(&empty[s], static_cast<unsigned>(t / Stages - 1) & 1u);
      simt::mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        simt::tma_load_3d(Ks + (s * (D / 64) + cb) * kBc * 64, k_map, cb * 64, j * kBc, bh, &full[s]);
        simt::tma_load_3d(Vs + (s * (D / 64) + cb) * kBc * 64, v_map, cb * 64, j * kBc, bh, &full[s]);
      }
      if (j == 0 && q_free != nullptr) {
        simt::mbarrier_wait_parity(q_free, q_phase);
        copy_q();
      }
    }
  }

  // A consumer waits for the ring's tile j (of all it took: t0 + j in a persistent block), and gets
  // its stage's descriptors.
  __device__ __forceinline__ int wait_tile(int j) const {
    const int s = j % Stages;
    simt::mbarrier_wait_parity(&full[s], static_cast<unsigned>(j / Stages) & 1u);
    return s;
  }
  __device__ __forceinline__ uint64_t q_desc(int c) const { return k_major(Qs + c * kBr * D); }
  __device__ __forceinline__ uint64_t k_desc(int s) const { return k_major(Ks + s * kBc * D); }
  __device__ __forceinline__ uint64_t v_desc(int s) const { return n_major<kBc>(Vs + s * kBc * D); }
};

// Steps e onwards: the consumers take turns at issuing their S chains (attend_tile's Turn), in
// order, consumer c after consumer c - 1 (two in steps e to g: back and forth; three in step h at
// d = 64). Consumer c's named barrier is kTurn + c, for two warpgroups' 256 threads: c takes its
// turn by waiting on it (bar.sync, 128 threads), the consumer before it gives it by arriving
// (bar.arrive, 128) once its own chain is issued (in steps g and h, at a tile it lets go by, with no
// chain: causal_skip.cuh's let_go). The last consumer gives consumer 0 the first turn (start), and
// nobody passes the turn after the last turn of all, the last consumer's on the last tile.
inline constexpr unsigned kTurn = 1;  // named barriers 1, 2 (and 3); 0 is __syncthreads'
struct PingPong {
  static constexpr int kWaiters = 2 * kThreads;  // the consumer taking the turn and the one giving it
  unsigned mine, other;
  bool pass_on;
  // Consumer c's turn for its chain of tile j.
  __device__ __forceinline__ PingPong(int c, int j, int tiles, int consumers = kConsumers)
      : mine(kTurn + static_cast<unsigned>(c)),
        other(kTurn + static_cast<unsigned>((c + 1) % consumers)),
        pass_on(c + 1 < consumers || j + 1 < tiles) {}
  __device__ __forceinline__ static void start(int c, int consumers = kConsumers) {
    if (c == consumers - 1) simt::named_barrier_arrive(kTurn, kWaiters);
  }
  __device__ __forceinline__ void take() const { simt::named_barrier_sync(mine, kWaiters); }
  __device__ __forceinline__ void pass() const {
    if (pass_on) simt::named_barrier_arrive(other, kWaiters);
  }
};

// The block's start, the same in steps d onwards: one thread initialises the ring's barriers before
// the block's last __syncthreads (after it, roles meet only on the mbarriers); the producer
// warpgroup gives its registers back and its thread 0 copies Q and the block's tiles, then returns
// false; a consumer takes the registers and gets true. No copy when no tile is visited (steps g, h).
template <class R>
__device__ __forceinline__ bool split_roles(const R& ring, const CUtensorMap* q_map, const CUtensorMap* k_map,
                                            const CUtensorMap* v_map, int q0, int bh, int tiles) {
  constexpr int Consumers = R::kGroups;
  if (threadIdx.x == 0) ring.init();
  simt::fence_mbarrier_init();
  __syncthreads();
  if (threadIdx.x < kThreads) {  // warpgroup 0, the producer
    simt::setmaxnreg_dec<producer_regs(Consumers)>();  // by all 32 lanes of each of its warps, before the branch
    if (threadIdx.x == 0 && tiles > 0) ring.produce(q_map, k_map, v_map, q0, bh, tiles);
    return false;
  }
  simt::setmaxnreg_inc<consumer_regs(Consumers)>();
  static_assert(kThreads * (producer_regs(Consumers) + Consumers * consumer_regs(Consumers)) <= 65536,
                "the warpgroups' registers after setmaxnreg fit an SM's 64K");
  return true;
}

// Launches a kernel of steps d onwards, kernel(t, d) naming its instantiation: Q tiles of
// kConsumers * kBr rows (consumers_for(d) * kBr where ByHeadDim, step h), a producer's and their
// threads, the shared memory of its ring of Stages. The grid is (Q tiles, heads), heads at most
// 65535 (the registry's max_heads), or for steps g and h under is_causal, which launch the
// heaviest Q tiles first (causal_skip.cu), chapter 06's (heads of a section, Q tiles over y,
// sections or the Q tiles' spread over z): no dimension past its limit. Persistent (step i): that
// grid is the kernel's last argument, the order of its Q tiles, and the launch one block per SM
// (fewer when there are fewer Q tiles), each walking them in steps of the blocks launched.
template <int Stages = kStages, bool ByHeadDim = false, bool Persistent = false, class Kernel>
cudaError_t launch_ring(const attn::AttentionParams& p, Kernel&& kernel, bool heaviest_first = false) {
  if (p.Lk < 1) return cudaErrorInvalidValue;  // steps d to f wait for tile 0 (the harness refuses it first)
  return dispatch(p, [&](auto t, auto d) {
    constexpr int D = decltype(d)::value, consumers = ByHeadDim ? consumers_for(D) : kConsumers, rows = consumers * kBr;
    TensorMaps maps;
    if (const cudaError_t e = tensor_maps<decltype(t), D>(p, kBr, &maps); e != cudaSuccess) return e;
    const unsigned q_tiles = static_cast<unsigned>((p.Lq + rows - 1) / rows), heads = static_cast<unsigned>(p.B * p.H);
    const dim3 grid =
        heaviest_first ? ch06::heaviest_first_grid(heads, q_tiles, kv_section(p, sizeof(decltype(t)), D)) : dim3(q_tiles, heads);
    const size_t smem = ws_smem_bytes(D, Stages, consumers, Persistent) + kAlign;
    if constexpr (Persistent) {
      int device = 0, sms = 0;
      if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
      if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
      const unsigned long long blocks = static_cast<unsigned long long>(grid.x) * grid.y * grid.z;
      const unsigned launched = static_cast<unsigned>(std::min<unsigned long long>(blocks, static_cast<unsigned>(std::max(sms, 1))));
      return simt::launch(kernel(t, d), dim3(launched), dim3(ws_threads(consumers)), smem, maps.q, maps.k, maps.v, p, grid);
    } else {
      return simt::launch(kernel(t, d), grid, dim3(ws_threads(consumers)), smem, maps.q, maps.k, maps.v, p);
    }
  });
}

}  // namespace ch09
