// hopper.h: chapter 09, FlashAttention-2's loop on Hopper's own instructions, one at a time: the
// tensor cores fed from shared memory (wgmma) first; then TMA copies, warp specialization, the
// overlaps of FlashAttention-3 and its tiles by head dim. Each step compiles for sm_90a and runs on
// the CPU emulator.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/head_dims.h"
#include "kernels/params.h"

namespace ch09 {

// FlashAttention-3's head dims that the steps compile for (wgmma's N is the head dim in P V).
using HopperDims = attn::HeadDimList<64, 128>;

// Step a is chapter 05's best (lean_loop), the baseline every later step is measured against.
cudaError_t wgmma(const attn::AttentionParams& p);     // b: both products as wgmma, a warpgroup per 64 rows
cudaError_t tma_ring(const attn::AttentionParams& p);  // c: TMA copies into a ring of stages, mbarriers
cudaError_t warp_specialized(const attn::AttentionParams& p);  // d: a producer warpgroup, two consumers
cudaError_t ping_pong(const attn::AttentionParams& p);         // e: the consumers take turns (named barriers)
cudaError_t intra_overlap(const attn::AttentionParams& p);     // f: softmax of tile j under P V of tile j - 1
cudaError_t causal_skip(const attn::AttentionParams& p);       // g: chapter 06's causal policy on step f
cudaError_t head_dim_tiles(const attn::AttentionParams& p);    // h: step g with three consumers at d = 64
cudaError_t persistent(const attn::AttentionParams& p);        // i: step h's blocks, one per SM, walking the Q tiles

// The tiles of step b: a warpgroup of 128 threads owns Br = 64 query rows and walks K/V tiles of
// Bc = 128 keys (S: 64 floats per thread, as O at d = 128).
inline constexpr int kBr = 64, kBc = 128, kThreads = 128;
// Q, one K tile and one V tile, 16-bit: 80 KiB at d = 128.
inline constexpr long smem_bytes(int d) { return 2L * (kBr + 2 * kBc) * d; }
// Step c: kStages K and V tiles in flight, and the ring's mbarriers (full and empty per stage, one for
// Q): 144 KiB of tiles at d = 128.
inline constexpr int kStages = 2;
inline constexpr long ring_smem_bytes(int d) { return 2L * (kBr + 2 * kStages * kBc) * d + 8L * (2 * kStages + 1); }
// Step d: a producer warpgroup that only copies, and kConsumers warpgroups of kBr rows each (a
// block's Q tile is kConsumers * kBr = 128 rows) sharing the ring. setmaxnreg moves registers from
// the producer to the consumers: 128 x 24 + 256 x 240 = 64512 of the SM's 65536 (FlashAttention-3's
// counts with two consumers). 160 KiB of tiles at d = 128.
inline constexpr int kConsumers = 2, kWsThreads = kThreads * (1 + kConsumers);
inline constexpr unsigned kProducerRegs = 24, kConsumerRegs = 240;
// Steps f to h: a consumer gives a stage back only after its softmax of the next tile (step f's
// rotation), a tile later than in steps d and e, so their ring has a stage more, for the producer to
// keep as many copies in flight: 224 KiB of tiles at d = 128, of the 227 a block may have.
inline constexpr int kRotatedStages = kStages + 1;
// Step i: an mbarrier more, Q given back by the consumers (8 bytes).
inline constexpr long ws_smem_bytes(int d, int stages = kStages, int consumers = kConsumers, bool persistent = false) {
  return ring_smem_bytes(d) + (stages - kStages) * (4L * kBc * d + 16) + 2L * (consumers - 1) * kBr * d + (persistent ? 8 : 0);
}
// Step h: the consumers a block has by head dim, as FlashAttention-3 sizes its tiles by head dim
// (hopper/tile_size.h, tile_size_fwd_sm90: Q tiles of 192 rows at d = 64, 128 at d = 128). A
// consumer's S, O and P at d = 64 fit in 160 registers (step h's loop names R153 at most, no spill:
// results/static-sm90a), so three consumers share each K/V tile, 128 x 32 + 384 x 160 = 65536
// registers (FlashAttention-3's counts with three); at d = 128 they take more than 160 (step g's
// loop names R187), and step h is step g.
__host__ __device__ inline constexpr int consumers_for(int d) { return d <= 64 ? 3 : kConsumers; }
__host__ __device__ inline constexpr int ws_threads(int consumers) { return kThreads * (1 + consumers); }
__host__ __device__ inline constexpr unsigned producer_regs(int consumers) {
  return consumers == kConsumers ? kProducerRegs : 32;
}
__host__ __device__ inline constexpr unsigned consumer_regs(int consumers) {
  return consumers == kConsumers ? kConsumerRegs : 160;
}
static_assert(kThreads * (producer_regs(3) + 3 * consumer_regs(3)) <= 65536, "three consumers' registers fit an SM's 64K");
// Every launch asks for kAlign bytes beyond its tiles, to start them on a 1024-byte boundary
// (smem_tiles.cuh's aligned_smem: the 128-byte swizzle repeats every 1024 bytes).
inline constexpr int kAlign = 1024;

// Steps g and h under is_causal: the heads of a section of their heaviest-first grid
// (ch06::heaviest_first_grid): as many as have their K and V in 32 MB, FlashAttention-3's budget
// for them (its tile scheduler, hopper/tile_scheduler.hpp), which leaves Q, O and the rest of the
// H100's and H200's 50 MB of L2 to the blocks in flight; at least one, and as many in each section
// as the sections needed allow.
inline unsigned kv_section(const attn::AttentionParams& p, size_t element_bytes, int D) {
  const unsigned heads = static_cast<unsigned>(p.B * p.H);
  const double kv_bytes = 2.0 * p.Lk * D * static_cast<double>(element_bytes);
  const unsigned fit = static_cast<unsigned>(std::clamp(32.0 * (1 << 20) / kv_bytes, 1.0, static_cast<double>(heads)));
  const unsigned sections = (heads + fit - 1) / fit;
  return (heads + sections - 1) / sections;
}

}  // namespace ch09
