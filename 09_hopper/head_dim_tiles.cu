// head_dim_tiles.cu: step h. Step g with as many consumers as the head dim lets a block have:
// three at d = 64 (Q tiles of 192 rows, 512 threads), two at d = 128, where it is step g.
//
// At d = 64 a tile's products are half of d = 128's, and its softmax is as long: the two consumers
// of step g take turns at a tensor core that waits for their softmaxes, and each K/V tile copied
// serves 128 rows. A consumer's registers at d = 64 (S and P of 128 keys, O of 64 columns) fit in
// 160, so the SM's 64K registers hold a third consumer beside the producer (hopper.h's
// consumers_for, producer_regs, consumer_regs: FlashAttention-3's counts with three warpgroups,
// and its tiles of 192 rows at d = 64). Each consumer's loop is step g's; the turn goes round the
// three (ring.cuh's PingPong), and the ring's empty barrier counts all three.
// Cost: 160 registers a consumer thread, where step g gave 240 (ptxas must fit the loop in them);
// a third of the block's rows waits for its turn behind two; Q tiles of 192 rows leave more rows
// past Lq in the last one, where a consumer with no row multiplies nothing but still takes its
// turns (let_go), and under is_causal more tiles that a consumer lets go by.
#include "causal_skip.cuh"

namespace ch09 {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(ws_threads(consumers_for(D)), 1)
    head_dim_tiles_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                          const __grid_constant__ CUtensorMap v_map, const attn::AttentionParams p) {
  causal_skip_block<T, D, consumers_for(D)>(q_map, k_map, v_map, p);
}

}  // namespace

cudaError_t head_dim_tiles(const attn::AttentionParams& p) {
  return launch_ring<kRotatedStages, true>(
      p, [](auto t, auto d) { return head_dim_tiles_kernel<decltype(t), decltype(d)::value>; }, heaviest_first(p));
}

}  // namespace ch09
