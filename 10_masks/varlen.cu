// varlen.cu: step e, a packed batch: sequences of different lengths end to end in one tensor, as
// FlashAttention's flash_attn_varlen_func takes them (cu_seqlens_q, cu_seqlens_k: params.h, varlen).
// As a rule (mask_mod.h's Varlen, a query seeing its own sequence's keys), steps b and c would serve it
// with tiles of the packed rows that straddle sequences and a lookup per masked score. Here a block
// never straddles: it runs one Q tile of one sequence, and sees that sequence as a problem of its own
// (SequenceTiles::part): its tensors offset to the sequence's first query and key, its lengths the
// sequence's. Chapter 06's Policy then works unchanged inside it: the K/V tiles past is_causal's
// diagonal skipped, the mask only where a tile crosses the diagonal or the sequence's last key, the
// diagonal bottom-right in each sequence as FlashAttention aligns it. No padding: no row computed
// for a shorter sequence's sake, no key loaded beyond its sequence.
// Which block runs which tile is a map (write_tile_map, FlashAttention-3's varlen scheduler's prefix
// sum): one kernel scans the sequences' tile counts. Each sequence's tiles are listed from its last,
// under is_causal its heaviest, and every head's t-th slot starts before any head's next (chapter
// 06's grid), so that a long sequence's heavy tiles start together, not head after head.
// Step d's score mods apply in each sequence as they would to it alone (ScoredSequenceTiles).
// Cost: the map's launch and its Lq / Br + n entries; per block, two loads of the map and four of
// cu_seqlens; the slots past the last tile (at most one per sequence, and the few the grid's rounding
// adds) start and stop at once.
#include "05_flash_v2/lean_loop.cuh"
#include "06_causal/causal.h"
#include "kernels/score_mod.h"
#include "masks.h"

namespace ch10 {
namespace {

template <class T, int Br, int Bc>
struct SequenceTiles : ch05::EveryTile {
  static constexpr bool kAttnMask = false;  // a packed batch has no attn_mask: its sequences are its mask
  // Grid (heads, slots over y and z: tile_map_grid), in launch order: slot t of every head, then
  // slot t + 1 of every head. The map (the workspace, which the part keeps) has an entry for each.
  __device__ static SeqTile entry(const attn::AttentionParams& p) {
    return static_cast<const SeqTile*>(p.workspace)[blockIdx.y + gridDim.y * blockIdx.z];
  }
  // Sequence s of head blockIdx.x as a problem of one head: B = H = 1, its first query and key at
  // the tensors' starts (the keys of K/V head blockIdx.x / heads_per_kv: grouped-query attention),
  // its lengths Lq and Lk. A slot past the last tile: no rows, no keys.
  __device__ static attn::AttentionParams part(const attn::AttentionParams& p) {
    const SeqTile e = entry(p);
    attn::AttentionParams one = p;
    one.B = one.H = 1;
    one.mod = {};
    one.Lq = one.Lk = 0;
    if (e.seq < 0) return one;
    const int *cu_q = p.mod.doc, *cu_k = cu_q + p.mod.arg + 1;
    const int kv_head = static_cast<int>(blockIdx.x) / (p.mod.heads_per_kv > 1 ? p.mod.heads_per_kv : 1);
    const size_t q = static_cast<size_t>(blockIdx.x) * p.Lq + cu_q[e.seq], k = static_cast<size_t>(kv_head) * p.Lk + cu_k[e.seq];
    one.q = static_cast<const T*>(p.q) + q * p.d;
    one.o = static_cast<T*>(p.o) + q * p.d;
    one.k = static_cast<const T*>(p.k) + k * p.d;
    one.v = static_cast<const T*>(p.v) + k * p.d;
    if (p.lse) one.lse = p.lse + q;
    one.Lq = cu_q[e.seq + 1] - cu_q[e.seq], one.Lk = cu_k[e.seq + 1] - cu_k[e.seq];
    return one;
  }
  __device__ static Block block(const attn::AttentionParams& p, int /*q_tiles*/) { return {0, entry(p).tile}; }
  __device__ static int tiles(const attn::AttentionParams& p, int q0, int /*Br*/, int /*Bc*/) {
    return ch06::tiles_to_visit(p, q0, Br, Bc);
  }
  __device__ static bool needs_mask(const attn::AttentionParams& p, int q0, int /*j*/, int k0, int /*Bc*/) {
    return ch06::tile_needs_mask(p, q0, k0, Bc, p.causal != attn::Causal::none);
  }
};

// With step d's score mods, in each sequence: softcap as everywhere; ALiBi's distance from the
// sequence's own bottom-right diagonal (the part's Lk - Lq, FlashAttention-2's varlen alibi_slopes),
// its slope the block's query head's among the launch's heads (the grid's x: the part has one head).
template <class T, int Br, int Bc>
struct ScoredSequenceTiles : SequenceTiles<T, Br, Bc> {
  __device__ static attn::AttentionParams part(const attn::AttentionParams& p) {
    attn::AttentionParams one = SequenceTiles<T, Br, Bc>::part(p);
    one.mod.alibi = p.mod.alibi;
    return one;
  }
  __device__ static attn::BookScore score_mod(const attn::AttentionParams& p, int /*h*/) {
    return {p.softcap, p.mod.alibi, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), p.Lk - p.Lq};
  }
};

// One block is enough: the sequences are few (tens to thousands) against the tiles, and one block
// needs no pass across the grid to carry its running sum. The scan is Hillis-Steele, the simplest to
// read: log2(256) steps, each thread adding its neighbour's partial sum. cu_seqlens is trusted, as
// FlashAttention trusts it: the harness checks the lengths on the host (Problem::validate).
constexpr int kMapThreads = 256;
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
    for (int i = 0; i < count; ++i) map[listed + scan[t] - count + i] = {s, count - 1 - i};
    listed += scan[kMapThreads - 1];
    __syncthreads();  // before the next round rewrites scan
  }
  for (int i = listed + t; i < slots; i += kMapThreads) map[i] = {-1, 0};
}

// A packed batch is one batch of B = 1, with no attn_mask (its Policies keep none).
bool packed(const attn::AttentionParams& p) {
  return p.mod.kind == attn::ModKind::varlen && p.B == 1 && p.mask_kind == attn::MaskKind::none;
}

}  // namespace

cudaError_t write_tile_map(const attn::AttentionParams& p, void* map) {
  if (!packed(p)) return cudaErrorInvalidValue;
  return ch05::dispatch_tensor_core(p, [&](auto, auto d) {
    constexpr int Br = ch05::fa2_tiles(decltype(d)::value).Br;
    return simt::launch(tile_map_kernel<Br>, dim3(1), dim3(kMapThreads), 0, p, static_cast<SeqTile*>(map),
                        static_cast<int>(tile_slots(p.Lq, p.mod.arg, Br)));
  });
}

cudaError_t varlen(const attn::AttentionParams& p, const void* map) {
  if (!packed(p)) return cudaErrorInvalidValue;  // its Policy reads cu_seqlens
  attn::AttentionParams a = p;
  a.workspace = const_cast<void*>(map);  // the Policy finds the map there
  // A problem without a score_mod runs the kernel without one: chosen at launch, as step d chooses.
  const bool scored = p.softcap > 0.f || p.mod.alibi;
  return ch05::dispatch_tensor_core(a, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    constexpr ch05::Tiles kT = ch05::fa2_tiles(D);
    const auto launch = [&](auto kernel) {
      return simt::launch(kernel, tile_map_grid(a.H, a.Lq, a.mod.arg, kT.Br), dim3(ch05::block_threads(ch05::Step::lean_loop, D)),
                          ch05::smem_bytes(ch05::Step::lean_loop, D, sizeof(T)), a);
    };
    if (scored) return launch(ch05::lean_loop_kernel<T, D, ScoredSequenceTiles<T, kT.Br, kT.Bc>>);
    return launch(ch05::lean_loop_kernel<T, D, SequenceTiles<T, kT.Br, kT.Bc>>);
  });
}

}  // namespace ch10
