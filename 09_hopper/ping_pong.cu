// ping_pong.cu: step e. Step d's consumers take turns on the tensor cores, so that one's softmax
// runs while the other's products do.
//
// In step d both consumers issued their S chains whenever their tiles landed: often together, and
// then both waited for S, both ran the softmax with the tensor cores idle, and both issued P V.
// Here a consumer issues its S chain only in its turn, and hands the turn to the other as soon as
// the chain is issued: consumer 0's Q K^T, then consumer 1's, then consumer 0's again, ... The turn
// is a named barrier per consumer (simt/named_barrier.cuh; PingPong in ring.cuh, which steps f
// to h share), id kTurn + c, for the two warpgroups' 256 threads: c waits on it (bar.sync, 128
// threads) until the other has arrived (bar.arrive, 128), which the other does right after issuing
// its own chain. While consumer 0 runs its softmax on S, the tensor cores run consumer 1's Q K^T;
// while consumer 1 runs its own, they run consumer 0's P V and next Q K^T: the softmax of one hides
// under the products of the other (FlashAttention-3's ping-pong). Consumer 1 arrives once before the loop to give consumer 0 the
// first turn, and not after its last chain, which no turn follows.
// Cost: a consumer whose tile has landed may wait for its turn; and its own softmax and its own
// products still take turns (step f).
#include "ring.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kWsThreads, 1)
    ping_pong_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
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
  PingPong::start(c);  // consumer 0 goes first
  simt::mbarrier_wait_parity(ring.q_full, 0);

  for (int j = 0; j < tiles; ++j) {
    const int s = ring.wait_tile(j);
    const PingPong turn(c, j, tiles);
    attend_tile<T, D>(O, m, l, ring.q_desc(c), ring.k_desc(s), ring.v_desc(s), p, row, bh, j * kBc, scale_log2, turn);
    simt::mbarrier_arrive(&ring.empty[s]);  // this thread is done with stage s
  }
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t ping_pong(const attn::AttentionParams& p) {
  return launch_ring(p, [](auto t, auto d) { return ping_pong_kernel<decltype(t), decltype(d)::value>; });
}

}  // namespace ch09
