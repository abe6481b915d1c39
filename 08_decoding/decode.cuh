// decode.cuh: the decoding kernel of steps b to i, one template whose flags are the steps' ideas.
//
// A block of 128 threads owns up to R query rows that read the same KV head, and streams that
// head's keys. A key row of d elements is d / E lanes of 16 bytes (E = 8 fp16 or bf16 values): a
// *group* of lanes. The block's G = 128 / lanes groups take keys in turn, U at a time, so that each
// lane can have U 16-byte loads in flight before it needs the first (2U with V's rows in step f, and
// in step g a second step's 2U beside them; the compiler keeps them together only where no branch
// and no dependent load comes between them). Each group keeps its own online
// softmax (m, l and its slice of O, for each row); at the end the G groups' states are merged in
// shared memory, by the same rescaling as the combine of the splits.
//
//   Split  the keys cut into p.splits ranges along blockIdx.y (step c); each block writes its
//          rows' O normalised by its own sum, and their log-sum-exp, for the combine.
//   R      rows per block: 1 (steps b, c: every query row reads the cache for itself), or the KV
//          head's g x Lq query rows, up to 8 (step d: each K and V load serves all of them).
//   Paged  key j of sequence b found through the block table (step e), not at b * capacity + j.
//   KvTogether  every key's row found first (a paged cache's U table entries read together), then
//          the U keys' K and V rows asked for together, before the first is used (step f): a step
//          of the key loop waits on the table once and on the cache once, not key by key.
//   Prefetch  each step's K and V rows asked for during the step before, the next step's loads
//          before this step's arithmetic (step g): the cache's wait overlaps a step of work, at the
//          cost of a second step's rows in registers.
//   Occupancy  step g's kernel held to the registers with which an SM holds occupancy_blocks(R) of
//          its blocks (step h): at R = 4, 168 a thread and three blocks, where step g takes 213 and
//          an SM holds two; the host splits the keys to fill them.
//   ScorePerLane  each score of a step summed by one lane of its group, not by every lane
//          (reduce.cuh's group_sum_scatter), masked and exponentiated there once, and the U
//          probabilities of each row fetched back by every lane for P V (step i).
//
// The scores are in base 2 (Q pre-multiplied by scale * log2 e): exp2 is the GPU's exponential.
// The new tokens' keys and values are read from k_new, v_new, and written into the cache by the
// kernel itself (as flash_attn_with_kvcache does): no launch of its own.
#pragma once
#include <cstring>

#include "decoding.h"
#include "kernels/decode_params.h"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"

namespace ch08 {

constexpr int kThreads = kDecodeThreads;
constexpr int kKeysPerStep = 4;  // U: 16-byte loads each lane issues before it uses the first

template <class T, int D>
struct Shape {
  static constexpr int E = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte load
  static constexpr int lanes = D / E;                          // lanes per key row
  static constexpr int groups = kThreads / lanes;              // keys the block reads side by side
  static_assert(lanes >= 1 && lanes <= 32 && 32 % lanes == 0, "a key row must be 1 to 32 lanes of a warp");
};

// 16 bytes loaded as one, as floats.
template <class T>
__device__ __forceinline__ void to_floats(const float4 raw, float* out) {
  T v[16 / sizeof(T)];
  memcpy(static_cast<void*>(v), &raw, sizeof raw);  // the 16 bytes as E values of T
#pragma unroll
  for (int e = 0; e < static_cast<int>(16 / sizeof(T)); ++e) out[e] = attn::load(v + e);
}

// 16 bytes from global memory in one load, as floats.
template <class T>
__device__ __forceinline__ void load16(const T* src, float* out) {
  const float4 raw = *reinterpret_cast<const float4*>(src);
  to_floats<T>(raw, out);
}

// The cache row of key j of sequence b.
template <bool Paged>
__device__ __forceinline__ long long key_row(const attn::DecodeParams& p, int b, int j) {
  if constexpr (Paged) {
    return p.paged_row(b, j);
  } else {
    return p.unpaged_row(b, j);  // a page is the whole capacity
  }
}

// Steps f and g: where the U keys of sequence b from `first` on are, then their 2U loads into `to`
// (K's rows, then V's), with no branch among them, so that the compiler can ask for all before it
// waits for any: a paged cache's U table reads go out together, then the U K rows (ptxas moves step
// f's V rows below the softmax's start; its step's chain still waits twice: sass_sm90.inc). A key
// past the range reads the range's last row, unused. The table has a page for each new token's row
// (the append's); a new token's rows are read where they are given.
template <class T, int D, bool Paged, int U>
__device__ __forceinline__ void ask(const attn::DecodeParams& p, int b, int first, int end, int cached, long long head,
                                    const T* (&kp)[U], const T* (&vp)[U], float4* to) {
  const long long row_stride = static_cast<long long>(p.Hkv) * D;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int jj = min(first + u, end - 1);
    const long long row = key_row<Paged>(p, b, jj);  // read even for a new token: no branch
    const long long fresh = ((static_cast<long long>(b) * p.Lq + jj - cached) * p.Hkv) * D + head;
    const long long at = jj < cached ? row * row_stride + head : fresh;
    kp[u] = (jj < cached ? static_cast<const T*>(p.k_cache) : static_cast<const T*>(p.k_new)) + at;
    vp[u] = (jj < cached ? static_cast<const T*>(p.v_cache) : static_cast<const T*>(p.v_new)) + at;
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    to[u] = *reinterpret_cast<const float4*>(kp[u]), to[U + u] = *reinterpret_cast<const float4*>(vp[u]);
}

template <class T, int D, int R, bool Split, bool Paged, bool KvTogether, bool Prefetch = false, bool Occupancy = false,
          bool ScorePerLane = false>
__global__ void __launch_bounds__(kThreads, Occupancy ? occupancy_blocks(R) : 0)  // 0: ptxas's own choice
    decode_kernel(const attn::DecodeParams p, float* part_o, float* part_lse) {
  using S = Shape<T, D>;
  constexpr int E = S::E, Lanes = S::lanes, G = S::groups, U = kKeysPerStep;
  // [row][group]: the lane 0s of a warp's groups store their m and l to neighbouring words.
  __shared__ float merge_m[R][G], merge_l[R][G];
  // Row r of a group at r * Lanes * (E + 1), a lane's E values at lane * (E + 1) in it: lanes 9 words
  // apart on the stores and the groups padded apart (merge_group_words), so no two of a warp's lanes
  // share a bank; the readers' neighbouring columns stay neighbours but once per E.
  constexpr int kRowWords = Lanes * (E + 1);
  __shared__ float merge_o[G][merge_group_words(Lanes, E, R)];
  static_assert(KvTogether || !Prefetch, "step g asks for step f's loads a step ahead");
  static_assert(Prefetch || !Occupancy, "step h holds step g's kernel to occupancy_blocks(R) an SM");
  static_assert(Occupancy || !ScorePerLane, "step i changes step h's softmax");
  static_assert(sizeof merge_m + sizeof merge_l + sizeof merge_o == decode_smem_bytes(sizeof(T), D, R),
                "decoding.h's decode_smem_bytes is what this kernel declares");

  // Block: (sequence b, KV head hk, chunk of R of its g x Lq rows); row pr of the chunk is new
  // token pr / g of query head hk * g + pr % g.
  const int g = p.group(), rows = g * p.Lq, chunks = (rows + R - 1) / R;
  const int chunk = static_cast<int>(blockIdx.x) % chunks;
  const int hk = static_cast<int>(blockIdx.x) / chunks % p.Hkv, b = static_cast<int>(blockIdx.x) / chunks / p.Hkv;
  const int lane = static_cast<int>(threadIdx.x) % Lanes, grp = static_cast<int>(threadIdx.x) / Lanes;
  const int L = p.keys(p.cache_seqlens[b]);

  // The last key row r of the chunk sees (-1: none; rows past the chunk's end see none).
  const auto last_key = [&](int r) {
    const int pr = chunk * R + r;
    return pr >= rows ? -1 : p.causal ? min(L - 1, pr / g + L - p.Lq) : L - 1;
  };
  float q[R][E];
  int last[R];
  int hi = 0;  // one past the last key any row of the block sees
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int pr = chunk * R + r, t = pr / g, hq = hk * g + pr % g;
    last[r] = last_key(r);
    hi = max(hi, last[r] + 1);
    if (pr < rows) {
      load16(static_cast<const T*>(p.q) + ((static_cast<long long>(b) * p.Lq + t) * p.Hq + hq) * D + lane * E, q[r]);
#pragma unroll
      for (int e = 0; e < E; ++e) q[r][e] *= p.scale * attn::kLog2e;
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e) q[r][e] = 0.f;
    }
  }
  int begin = 0, end = hi;
  if constexpr (Split) {
    const int per = (L + p.splits - 1) / p.splits;
    begin = static_cast<int>(blockIdx.y) * per, end = min(hi, begin + per);
  }
  // Step i: the NF scores this lane sums, the same each step: score j is key (first_of + j) % U of
  // the step for row (first_of + j) / U, InLane of a row's keys side by side, so Mine rows; row h
  // of them sees keys up to lim[h], and m_mine[h] is its m (a copy kept by this lane: m[] indexed by
  // a row known only at run time would be in local memory).
  using Sc = attn::Scatter<Lanes, R * U>;
  constexpr int NF = Sc::per_lane, InLane = NF < U ? NF : U, Mine = NF / InLane;
  const int first_of = lane / Sc::dup * NF;
  int lim[Mine];
  float m_mine[Mine];
  if constexpr (ScorePerLane) {
#pragma unroll
    for (int h = 0; h < Mine; ++h) lim[h] = min(end - 1, last_key((first_of + h * InLane) / U)), m_mine[h] = -INFINITY;
  }

  float m[R], l[R], acc[R][E];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    m[r] = -INFINITY, l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[r][e] = 0.f;
  }
  T* K = static_cast<T*>(p.k_cache);
  T* V = static_cast<T*>(p.v_cache);
  const T* K_new = static_cast<const T*>(p.k_new);
  const T* V_new = static_cast<const T*>(p.v_new);
  const int cached = p.cache_seqlens[b];  // keys in the cache; the new tokens' come after them
  const long long head = static_cast<long long>(hk) * D + lane * E, row_stride = static_cast<long long>(p.Hkv) * D;
  // The append, fused: the new tokens' K and V are read where they are given, and one block of each
  // (sequence, KV head) writes them into the cache, which no block reads at those rows.
  if (K_new != nullptr && chunk == 0 && blockIdx.y == 0)
    for (int i = static_cast<int>(threadIdx.x); i < p.Lq * D; i += kThreads) {
      const int t = i / D, c = i % D;
      const long long to = key_row<Paged>(p, b, cached + t) * row_stride + hk * D + c;
      const long long from = ((static_cast<long long>(b) * p.Lq + t) * p.Hkv + hk) * D + c;
      K[to] = K_new[from], V[to] = V_new[from];
    }
  // Step g: each step's rows asked for a step ahead, the first step's before the loop.
  float4 next[Prefetch ? 2 * U : 1];
  if constexpr (Prefetch) {
    const T* kp[U];
    const T* vp[U];
    if (begin < end) ask<T, D, Paged>(p, b, begin + grp * U, end, cached, head, kp, vp, next);
  }
  // Every group runs the same number of steps (the shuffles need every lane of a warp).
  for (int base = begin; base < end; base += G * U) {
    float s[R][U];
    const T* kp[U];
    const T* vp[U];
    float4 kv[KvTogether ? 2 * U : 1];  // steps f and g: the U keys' K rows, then their V rows
    if constexpr (Prefetch) {
#pragma unroll
      for (int i = 0; i < 2 * U; ++i) kv[i] = next[i];  // asked for during the last step
      ask<T, D, Paged>(p, b, base + G * U + grp * U, end, cached, head, kp, vp, next);  // before the arithmetic
    } else if constexpr (KvTogether) {
      ask<T, D, Paged>(p, b, base + grp * U, end, cached, head, kp, vp, kv);
    }
    if constexpr (KvTogether) {
      // From here on steps f and g read kp and vp only as a flag (their rows are in kv): null for a
      // key past this step's range. In step g they point at the next step's rows, never read.
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + grp * U + u >= end) kp[u] = vp[u] = nullptr;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = base + grp * U + u;
      if constexpr (!KvTogether) {
        kp[u] = vp[u] = nullptr;
        if (j < end && j < cached) {
          const long long at = key_row<Paged>(p, b, j) * row_stride + head;
          kp[u] = K + at, vp[u] = V + at;
        } else if (j < end) {  // a new token's key
          const long long at = ((static_cast<long long>(b) * p.Lq + j - cached) * p.Hkv) * D + head;
          kp[u] = K_new + at, vp[u] = V_new + at;
        }
      }
      float k[E];
      if constexpr (KvTogether) {
        to_floats<T>(kv[u], k);
      } else if (kp[u] != nullptr) {
        load16(kp[u], k);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float dot = 0.f;
        if (kp[u] != nullptr)
#pragma unroll
          for (int e = 0; e < E; ++e) dot += q[r][e] * k[e];
        s[r][u] = dot;
      }
    }
    if constexpr (ScorePerLane) {
      // Step i: the group's R x U scores summed once each, NF to a lane, masked, and their
      // exponentials taken once; then each lane fetches every row's U probabilities for P V.
      float t[R * U];
#pragma unroll
      for (int i = 0; i < R * U; ++i) t[i] = s[i / U][i % U];
      attn::group_sum_scatter<Lanes>(t);
#pragma unroll
      for (int j = 0; j < NF; ++j)
        if (base + grp * U + (first_of + j) % U > lim[j / InLane]) t[j] = -INFINITY;
      float mx[Mine];  // each of this lane's rows' maximum over the step's keys
#pragma unroll
      for (int h = 0; h < Mine; ++h) {
        mx[h] = t[h * InLane];
#pragma unroll
        for (int k = 1; k < InLane; ++k) mx[h] = fmaxf(mx[h], t[h * InLane + k]);
      }
#pragma unroll
      for (int k = InLane; k < U; k *= 2)  // the row's other keys, k / NF lanes (times dup) away
#pragma unroll
        for (int h = 0; h < Mine; ++h) mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], k / NF * Sc::dup));
      float m_new[R];
#pragma unroll
      for (int r = 0; r < R; ++r)  // row r's maximum, from the first lane holding its key 0
        m_new[r] = fmaxf(m[r], __shfl_sync(0xffffffffu, mx[r * U % NF / InLane], r * U / NF * Sc::dup, Lanes));
#pragma unroll
      for (int h = 0; h < Mine; ++h) m_mine[h] = fmaxf(m_mine[h], mx[h]);
#pragma unroll
      for (int j = 0; j < NF; ++j)  // 0 for a masked score
        t[j] = exp2f(t[j] - (m_mine[j / InLane] == -INFINITY ? 0.f : m_mine[j / InLane]));
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float correction = exp2f(m[r] - (m_new[r] == -INFINITY ? 0.f : m_new[r]));  // 0 when m was -inf
        l[r] *= correction;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[r][e] *= correction;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int i = r * U + u;
          s[r][u] = __shfl_sync(0xffffffffu, t[i % NF], i / NF * Sc::dup, Lanes), l[r] += s[r][u];
        }
        m[r] = m_new[r];
      }
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float mx = m[r];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[r][u] = attn::group_sum<Lanes>(s[r][u]);
          if (base + grp * U + u > min(end - 1, last[r])) s[r][u] = -INFINITY;
          mx = fmaxf(mx, s[r][u]);
        }
        if (mx == -INFINITY) {  // nothing seen yet: nothing to add
#pragma unroll
          for (int u = 0; u < U; ++u) s[r][u] = 0.f;
          continue;
        }
        const float correction = exp2f(m[r] - mx);  // 0 when m was -inf
        l[r] *= correction;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[r][e] *= correction;
#pragma unroll
        for (int u = 0; u < U; ++u) s[r][u] = exp2f(s[r][u] - mx), l[r] += s[r][u];
        m[r] = mx;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (vp[u] == nullptr) continue;
      float v[E];
      if constexpr (KvTogether) {
        to_floats<T>(kv[U + u], v);
      } else {
        load16(vp[u], v);  // steps b to e: V's rows asked for only now, a second wait
      }
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int e = 0; e < E; ++e) acc[r][e] += s[r][u] * v[e];
    }
  }

  // The G groups' states merged: each row's m the largest, each group's l and O rescaled to it.
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (lane == 0) merge_m[r][grp] = m[r], merge_l[r][grp] = l[r];
#pragma unroll
    for (int e = 0; e < E; ++e) merge_o[grp][r * kRowWords + lane * (E + 1) + e] = acc[r][e];
  }
  __syncthreads();
  const long long total_rows = static_cast<long long>(p.B) * p.Lq * p.Hq;
  for (int idx = static_cast<int>(threadIdx.x); idx < R * D; idx += kThreads) {
    const int r = idx / D, c = idx % D, pr = chunk * R + r;
    if (pr >= rows) continue;
    float M = -INFINITY;
    for (int k = 0; k < G; ++k) M = fmaxf(M, merge_m[r][k]);
    float sum = 0.f, o = 0.f;
    if (M != -INFINITY)
      for (int k = 0; k < G; ++k) {
        const float w = exp2f(merge_m[r][k] - M);
        sum += w * merge_l[r][k], o += w * merge_o[k][r * kRowWords + c / E * (E + 1) + c % E];
      }
    const long long out_row = (static_cast<long long>(b) * p.Lq + pr / g) * p.Hq + hk * g + pr % g;
    const float value = sum > 0.f ? o / sum : 0.f;  // a row that sees no key: O = 0
    if constexpr (Split) {
      const long long at_row = static_cast<long long>(blockIdx.y) * total_rows + out_row;
      part_o[at_row * D + c] = value;
      if (c == 0) part_lse[at_row] = sum > 0.f ? M + log2f(sum) : -INFINITY;  // base 2
    } else {
      attn::store(static_cast<T*>(p.o) + out_row * D + c, value);
    }
  }
}

// The grid and the launch of one instantiation: a block per (sequence, KV head, chunk of R rows),
// times the splits.
template <int R, bool Split, bool Paged, bool KvTogether = false, bool Prefetch = false, bool Occupancy = false,
          bool ScorePerLane = false>
cudaError_t launch_decode(const attn::DecodeParams& p, float* part_o, float* part_lse) {
  // A kernel reads the cache it was compiled for: a table it would not read, or none where it needs
  // one, is refused, never another sequence's keys read in silence.
  if (p.dtype == attn::DType::fp32 || p.Hq % p.Hkv != 0 || (p.block_table != nullptr) != Paged) return cudaErrorInvalidValue;
  const int chunks = (p.group() * p.Lq + R - 1) / R;
  const dim3 grid(static_cast<unsigned>(static_cast<long long>(p.B) * p.Hkv * chunks),
                  static_cast<unsigned>(Split ? p.splits : 1));
  return attn::dispatch_dtype(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      return cudaErrorInvalidValue;
    } else {
      return attn::dispatch_head_dim(DecodeDims{}, p.d, [&](auto dim) {
        return simt::launch(decode_kernel<T, decltype(dim)::value, R, Split, Paged, KvTogether, Prefetch, Occupancy, ScorePerLane>,
                            grid, dim3(kThreads), 0, p, part_o, part_lse);
      });
    }
  });
}

// R chosen at run time among the compiled 1, 2, 4, 8: the fewest that hold the KV head's rows.
template <bool Split, bool Paged, bool KvTogether = false, bool Prefetch = false, bool Occupancy = false,
          bool ScorePerLane = false>
cudaError_t launch_packed(const attn::DecodeParams& p, float* part_o, float* part_lse) {
  const int rows = p.group() * p.Lq;
  if (rows <= 1) return launch_decode<1, Split, Paged, KvTogether, Prefetch, Occupancy, ScorePerLane>(p, part_o, part_lse);
  if (rows <= 2) return launch_decode<2, Split, Paged, KvTogether, Prefetch, Occupancy, ScorePerLane>(p, part_o, part_lse);
  if (rows <= 4) return launch_decode<4, Split, Paged, KvTogether, Prefetch, Occupancy, ScorePerLane>(p, part_o, part_lse);
  // Step i at 8 rows is step h: its kernel takes all 255 registers there, and the scattered scores
  // spill on sm_86, sm_89 and sm_120 (tools/arch_resources.py; notes/08).
  return launch_decode<8, Split, Paged, KvTogether, Prefetch, Occupancy>(p, part_o, part_lse);
}

}  // namespace ch08
