// varlen.cu: step e, a packed batch: sequences of different lengths end to end in one tensor, as
// FlashAttention's flash_attn_varlen_func takes them (cu_seqlens_q, cu_seqlens_k: params.h, varlen).
// As a rule (mask_mod.h's Varlen, a query seeing its own sequence's keys), steps b and c would serve it
// with tiles of the packed rows that straddle sequences and a lookup per masked score. Here a block
// never straddles: it runs one Q tile of one sequence, and sees that sequence as a problem of its own
// (SequenceTiles::part, sequence_tiles.cuh, which step f's windows share): its tensors offset to
// the sequence's first query and key, its lengths the sequence's. Chapter 06's Policy then works
// unchanged inside it: the K/V tiles past is_causal's diagonal skipped, the mask only where a tile
// crosses the diagonal or the sequence's last key, the diagonal bottom-right in each sequence as
// FlashAttention aligns it. No padding: no row computed
// for a shorter sequence's sake, no key loaded beyond its sequence.
// Which block runs which tile is a map (write_tile_map, FlashAttention-3's varlen scheduler's prefix
// sum): one kernel scans the sequences' tile counts. Each sequence's tiles are listed from its last,
// under is_causal its heaviest (with step f's window in each, from the end window_from_end names in
// that sequence), and every head's t-th slot starts before any head's next (chapter 06's grid), so
// that a long sequence's heavy tiles start together, not head after head.
// Step d's score mods apply in each sequence as they would to it alone (ScoredSequenceTiles).
// Cost: the map's launch and its Lq / Br + n entries; per block, two loads of the map and four of
// cu_seqlens; the slots past the last tile (at most one per sequence, and the few the grid's rounding
// adds) start and stop at once.
#include "sequence_tiles.cuh"

namespace ch10 {
namespace {

// One block is enough: the sequences are few (tens to thousands) against the tiles, and one block
// needs no pass across the grid to carry its running sum. The scan is Hillis-Steele, the simplest to
// read: log2(256) steps, each thread adding its neighbour's partial sum. cu_seqlens is trusted, as
// FlashAttention trusts it: the harness checks the lengths on the host (Problem::validate).
constexpr int kMapThreads = 256;
// Which end of sequence s its tiles are listed from: the last under is_causal (the heaviest) or
// without a window (equal tiles); with one, the end whose tiles the window's cut at the sequence's
// ends lightens less (masks.h: window_from_end, on the sequence's own Lq, Lk and diagonal), as step
// f's plain grid chooses.
__device__ inline bool from_last(const attn::AttentionParams& p, const int* cu_q, int s) {
  if (p.mod.kind != attn::ModKind::varlen_window) return true;
  const int *cu_k = cu_q + p.mod.arg + 1, *sides = attn::window_sides(p.mod);
  attn::AttentionParams one{};
  one.Lq = cu_q[s + 1] - cu_q[s], one.Lk = cu_k[s + 1] - cu_k[s];
  one.mod.arg = sides[0], one.mod.right = sides[1];
  return window_from_end(one);
}
template <int Br>
__global__ void __launch_bounds__(kMapThreads) tile_map_kernel(const attn::AttentionParams p, SeqTile* map, int slots) {
  __shared__ int scan[kMapThreads];
  const int n = p.mod.arg, t = static_cast<int>(threadIdx.x);
  const int* cu_q = p.mod.doc;
  int listed = 0;  // the tiles of the rounds before
  for (int s0 = 0; s0 < n; s0 += kMapThreads) {
    const int s = s0 + t, count = s < n ? (cu_q[s + 1] - cu_q[s] + Br - 1) / Br : 0;
    scan[t] = count;
    __syncthreads();
    for (int step = 1; step < kMapThreads; step *= 2) {  // scan[t]: the counts of this round's sequences up to s
      const int before = t >= step ? scan[t - step] : 0;
      __syncthreads();
      scan[t] += before;
      __syncthreads();
    }
    const bool from_end = s >= n || from_last(p, cu_q, s);
    for (int i = 0; i < count; ++i) map[listed + scan[t] - count + i] = {s, from_end ? count - 1 - i : i};
    listed += scan[kMapThreads - 1];
    __syncthreads();  // before the next round rewrites scan
  }
  for (int i = listed + t; i < slots; i += kMapThreads) map[i] = {-1, 0};
}

}  // namespace

cudaError_t write_tile_map(const attn::AttentionParams& p, void* map) {
  if (!packed_batch(p)) return cudaErrorInvalidValue;
  return ch05::dispatch_tensor_core(p, [&](auto, auto d) {
    constexpr int Br = ch05::fa2_tiles(decltype(d)::value).Br;
    return simt::launch(tile_map_kernel<Br>, dim3(1), dim3(kMapThreads), 0, p, static_cast<SeqTile*>(map),
                        static_cast<int>(tile_slots(p.Lq, p.mod.arg, Br)));
  });
}

cudaError_t varlen(const attn::AttentionParams& p, const void* map) {
  // Its Policy reads cu_seqlens; a window in each sequence is step f's (window.cu: packed_window).
  if (!packed_batch(p) || p.mod.kind != attn::ModKind::varlen) return cudaErrorInvalidValue;
  return launch_sequences<SequenceTiles, ScoredSequenceTiles>(p, map);
}

}  // namespace ch10
