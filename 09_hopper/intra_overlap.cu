// intra_overlap.cu: step f. Step e's consumers, each overlapping its own softmax with its own
// products: the P V of tile j - 1 runs while the softmax of tile j does.
//
// In step e a consumer waited for S_j, ran the softmax, issued P_j V_j and waited for it before it
// issued S_{j+1}: its own tensor-core work and its own softmax never overlapped, only the other
// consumer's could fill the gap. Here the loop is rotated by half a tile (FlashAttention-3's
// intra-warpgroup overlap): in its turn a consumer issues S_j = Q K_j^T and then O += P_{j-1} V_{j-1},
// two groups; wgmma_wait<1> waits for the older one only, S_j, and the softmax of tile j runs
// while P_{j-1} V_{j-1} is still in the tensor cores. Only then the wait for it: O is complete up to
// tile j - 1, the stage of tile j - 1 goes back to the producer, and O is rescaled by tile j's
// alpha and P_j packed over P_{j-1} (which is why the softmax's halves are separate: softmax_s, then
// rescale_o and pack_p). Tile 0's
// softmax comes before the loop, and the last tile's P V after it.
// The wait for P_{j-1} V_{j-1} is wgmma_wait_in_place: ptxas would move a plain wait above the
// softmax, which would then wait for the products instead of running under them (notes/09 step f).
// Cost: P_{j-1} and the rescale factors live across the loop's turn (registers); a stage is held
// until its P V is done, a tile longer, so the ring has a stage more (kRotatedStages: 224 KiB of
// shared memory at d = 128) for its copies to keep their lead; the fence, an instruction a tile.
#include "ring.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(kWsThreads, 1)
    intra_overlap_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  const Ring<T, D, kRotatedStages> ring;  // a stage more: each is given back a tile later
  const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * kConsumers * kBr;
  const int tiles = (p.Lk + kBc - 1) / kBc;
  if (!split_roles(ring, &q_map, &k_map, &v_map, q0, bh, tiles)) return;  // the producer is done

  const int c = static_cast<int>(threadIdx.x) / kThreads - 1, warp = static_cast<int>(threadIdx.x / 32) % 4;
  const int row = q0 + c * kBr + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4);
  const float scale_log2 = p.scale * attn::kLog2e;
  simt::WgmmaAccumulator<D> O;
  for (int i = 0; i < D / 2; ++i) O[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
  PingPong::start(c);  // consumer 0 goes first
  simt::mbarrier_wait_parity(ring.q_full, 0);
  const uint64_t q_desc = ring.q_desc(c);

  simt::WgmmaAccumulator<kBc> S;
  uint32_t pa[kBc / 16][4];  // P of the previous tile, waiting for its P V
  int s = ring.wait_tile(0);
  const PingPong first(c, 0, tiles);
  first.take();
  issue_s<T, D>(S, q_desc, ring.k_desc(s));
  first.pass();
  simt::wgmma_wait<0>(S);
  softmax_s(S, m, l, alpha, p, row, bh, 0, scale_log2);  // O is still 0: no rescale
  ch05::pack_p<T, kBc>(pa, S.tiles());

  for (int j = 1; j < tiles; ++j) {
    const int prev = s;
    s = ring.wait_tile(j);
    const PingPong turn(c, j, tiles);
    turn.take();
    issue_s<T, D>(S, q_desc, ring.k_desc(s));  // S_j
    issue_pv<T, D>(O, pa, ring.v_desc(prev));  // O += P_{j-1} V_{j-1}
    turn.pass();
    simt::wgmma_wait<1>(S);  // S_j is done; P_{j-1} V_{j-1} may still run
    softmax_s(S, m, l, alpha, p, row, bh, j * kBc, scale_log2);  // P_j, in fp32 in S
    simt::wgmma_wait_in_place<0>(O);  // P_{j-1} V_{j-1} is done (after the softmax: ptxas would
                                      // hoist a plain wait above it): P's registers and O are free
    simt::wgmma_fence_operand(pa);  // so P_j's packing stays after the wait (O's is in wgmma_wait)
    simt::mbarrier_arrive(&ring.empty[prev]);  // and so are K and V of tile j - 1
    ch05::rescale_o<D>(O.tiles(), alpha);
    ch05::pack_p<T, kBc>(pa, S.tiles());
  }
  issue_pv<T, D>(O, pa, ring.v_desc(s));
  simt::wgmma_wait<0>(O);
  simt::mbarrier_arrive(&ring.empty[s]);
  ch05::store_rows<T, D>(O.tiles(), m, l, row, p, bh);
}

}  // namespace

cudaError_t intra_overlap(const attn::AttentionParams& p) {
  return launch_ring<kRotatedStages>(p, [](auto t, auto d) { return intra_overlap_kernel<decltype(t), decltype(d)::value>; });
}

}  // namespace ch09
