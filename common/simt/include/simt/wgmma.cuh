// simt/wgmma.cuh: Hopper's warpgroup matrix multiply (wgmma.mma_async, sm_90a). The 4 warps of a
// warpgroup (128 threads, the first warp's index a multiple of 4) multiply a 64 x 16 tile A by a
// 16 x N tile B into a 64 x N fp32 accumulator D spread over their registers; A and B come from
// shared memory through 64-bit descriptors (A may instead come from registers), and the
// instruction returns before the product is done.
//
//   wgmma_desc(p, swizzle, lbo, sbo)   a shared-memory matrix descriptor: start p, the layout's
//                                      swizzle and its two byte offsets (below)
//   WgmmaAccumulator<N> d              D: N / 2 floats per thread, d[i] (simt/fragments.h,
//                                      frag::wgmma_d_row/col, says which element each holds), or
//                                      d.tiles()[N / 8][4], as mma.sync's C tiles
//   wgmma_fence()                      before the first wgmma_ss/rs, and again once registers the
//                                      next ones use (its accumulator, A's registers) were written;
//                                      wgmma_fence_operand(d) first keeps d's writes before it;
//                                      wgmma_fence_operand(a), a uint32_t[R][4] of wgmma_rs's A
//                                      fragments, does the same for A's registers
//   wgmma_ss<T, N, TransA, TransB>(d, desc_a, desc_b, accumulate)   D = A*B (+ D if accumulate)
//   wgmma_rs<T, N, TransB>(d, a, desc_b, accumulate)   the same, A from registers: a[4] per
//                                      thread, warp w's 16 rows in mma.m16n8k16's A layout
//   wgmma_commit()                     closes a group of the warpgroup's wgmma issued so far
//   wgmma_wait<Pending>(d1[, d2])      waits until at most Pending groups are in flight; then the
//                                      accumulators named (none, one or two) may be read, and the
//                                      compiler may not move their reads above the wait
//   wgmma_wait_in_place<Pending>(d)    the same, where the source has it: ptxas may otherwise
//                                      schedule a wait as early in its basic block as it likes (a
//                                      wait too early is never wrong, only slower), above work
//                                      written before it; a CTA-scope fence (fence.acq_rel.cta,
//                                      MEMBAR.ALL.CTA) first is an instruction ptxas does not
//                                      move the wait across (compiler output, notes/09 step f)
//
// T is __half or __nv_bfloat16. Shared-memory layouts, in 16-byte chunks of 8 elements (PTX ISA,
// "Shared Memory Matrix Layout"; CUTLASS's canonical GMMA layouts). K-major (TransA/TransB false:
// A is M x K, B is N x K, K contiguous), element (r, k) of the operand lies at
//   no swizzle:   start + (r % 8) * 16 + (r / 8) * sbo + (k / 8) * lbo + (k % 8) * 2
//   swizzled:     start + (r % 8) * S + (r / 8) * sbo + k * 2           (S = 32, 64, 128 bytes)
// MN-major (Trans true: M or N contiguous, as V for P V), element (n, k) lies at
//   no swizzle:   start + (n % 8) * 2 + (n / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo
//   swizzled:     start + (n % E) * 2 + (n / E) * lbo + (k % 8) * S + (k / 8) * sbo   (E = S / 2)
// and a swizzled address then has its 16-byte chunk bits (4..6) XORed with its bits 7..9 (1, 2 or 3
// of them): the pattern TMA writes (simt/tma.cuh). Row r, k = 0 of a swizzled operand must lie at
// a multiple of 8 S bytes; a K-major operand's next 16 columns start 32 bytes further.
//
// On the CPU the 4 warps each compute their 16 rows: a wgmma reads its operands when issued and
// writes the accumulators at the wait that completes its group. Every misuse is a launch error
// naming a line of the kernel: a wgmma without a wgmma_fence since the last wait (or the kernel's
// start), a block that is not whole warpgroups, lanes or warps of a warpgroup that disagree
// (descriptors, shape, order), an operand outside dynamic shared memory or misaligned for its
// swizzle, a descriptor with a base offset (not emulated), its shared memory written before its
// wait (the GPU may read either), a thread that returns with wgmma in flight; and an accumulator
// read, written, copied or gone out of scope while a wgmma on it is in flight (the message names
// that wgmma's line: element access has no caller's line). Not checked: A's registers or the
// accumulator written between the fence and the wgmma (one fence since the last wait is all it
// asks), the fence.proxy.async a GPU needs between the threads' stores and a wgmma reading them
// (both are plain memory here), fence, commit and wait agreeing across a warpgroup's warps.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "simt/simt.h"

#if SIMT_CPU
#define SIMT_WGMMA_CALLER , SIMT_CALLER
#define SIMT_WGMMA_SITE simt_file, simt_line
#else
#define SIMT_WGMMA_CALLER
#endif

namespace simt {

// The descriptor's swizzle field (bits 62..63).
enum class WgmmaSwizzle : unsigned { none = 0, b128 = 1, b64 = 2, b32 = 3 };


template <int N>
struct WgmmaAccumulator {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma: N is a multiple of 8 from 8 to 256");
  static constexpr int size = N / 2;
  float v[N / 2];
#if SIMT_CPU
  detail::WgmmaInFlight in_flight{};
  // On the CPU a copy, an assignment or the end of its scope while a wgmma on it is in flight is an
  // error too (on a GPU the registers would be read or reused before the wgmma writes them).
  WgmmaAccumulator() = default;
  WgmmaAccumulator(const WgmmaAccumulator& o) {
    if (o.in_flight.ops) detail::wgmma_early_access(o.in_flight);
    for (int i = 0; i < N / 2; ++i) v[i] = o.v[i];
  }
  WgmmaAccumulator& operator=(const WgmmaAccumulator& o) {
    if (o.in_flight.ops) detail::wgmma_early_access(o.in_flight);
    if (in_flight.ops) detail::wgmma_early_access(in_flight);
    for (int i = 0; i < N / 2; ++i) v[i] = o.v[i];
    return *this;
  }
  ~WgmmaAccumulator() {
    if (in_flight.ops) detail::wgmma_out_of_scope(in_flight);
  }
  float& operator[](int i) {
    if (in_flight.ops) detail::wgmma_early_access(in_flight);
    return v[i];
  }
  const float& operator[](int i) const {
    if (in_flight.ops) detail::wgmma_early_access(in_flight);
    return v[i];
  }
  // The same floats as N / 8 tiles of 8 columns, 4 floats each in mma.m16n8k16's C layout (the
  // warp's 16 rows): how FlashAttention-2's helpers take S and O (checked once, here).
  float (&tiles())[N / 8][4] {
    if (in_flight.ops) detail::wgmma_early_access(in_flight);
    return *reinterpret_cast<float(*)[N / 8][4]>(v);
  }
#else
  __device__ __forceinline__ float& operator[](int i) { return v[i]; }
  __device__ __forceinline__ const float& operator[](int i) const { return v[i]; }
  __device__ __forceinline__ float (&tiles())[N / 8][4] { return *reinterpret_cast<float(*)[N / 8][4]>(v); }
#endif
};

__device__ __forceinline__ uint64_t wgmma_desc(const void* smem, WgmmaSwizzle swizzle, unsigned lbo_bytes,
                                               unsigned sbo_bytes SIMT_WGMMA_CALLER) {
#if SIMT_CPU
  // The emulator's descriptors address dynamic shared memory, from its start.
  const uint64_t start = detail::wgmma_smem_offset(smem, SIMT_WGMMA_SITE);
#else
  const uint64_t start = static_cast<unsigned>(__cvta_generic_to_shared(smem));
#endif
  return (start & 0x3FFFF) >> 4 | uint64_t{(lbo_bytes & 0x3FFFF) >> 4} << 16 |
         uint64_t{(sbo_bytes & 0x3FFFF) >> 4} << 32 | uint64_t{static_cast<unsigned>(swizzle)} << 62;
}

#if !SIMT_CPU
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SIMT_WGMMA_ARCH 1
#else
#define SIMT_WGMMA_ARCH 0  // wgmma is sm_90a's: built for another target, it traps
#endif
#define SIMT_WGMMA_D8(d, i)                                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define SIMT_WGMMA_D32(d) SIMT_WGMMA_D8(d, 0), SIMT_WGMMA_D8(d, 8), SIMT_WGMMA_D8(d, 16), SIMT_WGMMA_D8(d, 24)
#define SIMT_WGMMA_D64(d) \
  SIMT_WGMMA_D32(d), SIMT_WGMMA_D8(d, 32), SIMT_WGMMA_D8(d, 40), SIMT_WGMMA_D8(d, 48), SIMT_WGMMA_D8(d, 56)
// The instruction's text, one per shape and operand source; `type` is "f16" or "bf16".
// m64n64k16, A from shared memory
#define SIMT_WGMMA_SS_N64(type) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." type "." type " " \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
               "%32, %33, p, 1, 1, %35, %36;\n}\n" \
               : SIMT_WGMMA_D32(d) \
               : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)), "n"(int{TransA}), "n"(int{TransB}))
// m64n64k16, A from registers
#define SIMT_WGMMA_RS_N64(type) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." type "." type " " \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
               "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n" \
               : SIMT_WGMMA_D32(d) \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<int>(accumulate)), "n"(int{TransB}))
// m64n128k16, A from shared memory
#define SIMT_WGMMA_SS_N128(type) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." type "." type " " \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
               "%64, %65, p, 1, 1, %67, %68;\n}\n" \
               : SIMT_WGMMA_D64(d) \
               : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)), "n"(int{TransA}), "n"(int{TransB}))
// m64n128k16, A from registers
#define SIMT_WGMMA_RS_N128(type) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n" \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." type "." type " " \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
               "{%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n" \
               : SIMT_WGMMA_D64(d) \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<int>(accumulate)), "n"(int{TransB}))
#endif  // !SIMT_CPU

template <class T, int N, bool TransA = false, bool TransB = false>
__device__ __forceinline__ void wgmma_ss(WgmmaAccumulator<N>& d, uint64_t desc_a, uint64_t desc_b,
                                         bool accumulate SIMT_WGMMA_CALLER) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "wgmma inputs are __half or __nv_bfloat16");
#if SIMT_CPU
  static constexpr detail::WgmmaShape shape{N, std::is_same_v<T, __nv_bfloat16>, false, TransA, TransB};
  const detail::WgmmaLane lane{d.v, &d.in_flight, desc_a, desc_b, {}, accumulate};
  static_assert(sizeof lane <= sizeof detail::Thread::in);
  std::memcpy(detail::t_thread->in, &lane, sizeof lane);
  detail::warp_collective(0xffffffffu, "wgmma.mma_async", SIMT_WGMMA_SITE, &detail::wgmma_issue, &shape);
#elif SIMT_WGMMA_ARCH
  static_assert(N == 64 || N == 128, "simt/wgmma.cuh has the PTX for N = 64 and 128: add the width you need");
  if constexpr (N == 64 && std::is_same_v<T, __half>) SIMT_WGMMA_SS_N64("f16");
  if constexpr (N == 64 && std::is_same_v<T, __nv_bfloat16>) SIMT_WGMMA_SS_N64("bf16");
  if constexpr (N == 128 && std::is_same_v<T, __half>) SIMT_WGMMA_SS_N128("f16");
  if constexpr (N == 128 && std::is_same_v<T, __nv_bfloat16>) SIMT_WGMMA_SS_N128("bf16");
#else
  __trap();
#endif
}

template <class T, int N, bool TransB = false>
__device__ __forceinline__ void wgmma_rs(WgmmaAccumulator<N>& d, const uint32_t (&a)[4], uint64_t desc_b,
                                         bool accumulate SIMT_WGMMA_CALLER) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "wgmma inputs are __half or __nv_bfloat16");
#if SIMT_CPU
  static constexpr detail::WgmmaShape shape{N, std::is_same_v<T, __nv_bfloat16>, true, false, TransB};
  const detail::WgmmaLane lane{d.v, &d.in_flight, 0, desc_b, {a[0], a[1], a[2], a[3]}, accumulate};
  std::memcpy(detail::t_thread->in, &lane, sizeof lane);
  detail::warp_collective(0xffffffffu, "wgmma.mma_async", SIMT_WGMMA_SITE, &detail::wgmma_issue, &shape);
#elif SIMT_WGMMA_ARCH
  static_assert(N == 64 || N == 128, "simt/wgmma.cuh has the PTX for N = 64 and 128: add the width you need");
  if constexpr (N == 64 && std::is_same_v<T, __half>) SIMT_WGMMA_RS_N64("f16");
  if constexpr (N == 64 && std::is_same_v<T, __nv_bfloat16>) SIMT_WGMMA_RS_N64("bf16");
  if constexpr (N == 128 && std::is_same_v<T, __half>) SIMT_WGMMA_RS_N128("f16");
  if constexpr (N == 128 && std::is_same_v<T, __nv_bfloat16>) SIMT_WGMMA_RS_N128("bf16");
#else
  __trap();
#endif
}

#if SIMT_CPU
__device__ __forceinline__ void wgmma_fence(SIMT_CALLER) {
  detail::warp_collective(0xffffffffu, "wgmma.fence", simt_file, simt_line, &detail::wgmma_fence, nullptr);
}
__device__ __forceinline__ void wgmma_commit(SIMT_CALLER) {
  detail::warp_collective(0xffffffffu, "wgmma.commit_group", simt_file, simt_line, &detail::wgmma_commit, nullptr);
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait(SIMT_CALLER) {
  static_assert(Pending >= 0 && Pending <= 7, "wgmma.wait_group: 0..7 groups left in flight");
  static constexpr int pending = Pending;
  detail::warp_collective(0xffffffffu, "wgmma.wait_group", simt_file, simt_line, &detail::wgmma_wait, &pending);
}
template <int Pending, int N>
__device__ __forceinline__ void wgmma_wait(WgmmaAccumulator<N>&, SIMT_CALLER) {
  wgmma_wait<Pending>(simt_file, simt_line);
}
template <int Pending, int N1, int N2>
__device__ __forceinline__ void wgmma_wait(WgmmaAccumulator<N1>&, WgmmaAccumulator<N2>&, SIMT_CALLER) {
  wgmma_wait<Pending>(simt_file, simt_line);
}
template <int Pending, int N>
__device__ __forceinline__ void wgmma_wait_in_place(WgmmaAccumulator<N>&, SIMT_CALLER) {
  wgmma_wait<Pending>(simt_file, simt_line);  // the CPU runs the source's order
}
template <int N>
__device__ __forceinline__ void wgmma_fence_operand(WgmmaAccumulator<N>&) {}  // the compiler's matter
template <int R>
__device__ __forceinline__ void wgmma_fence_operand(uint32_t (&)[R][4]) {}
#else
__device__ __forceinline__ void wgmma_fence() {
#if SIMT_WGMMA_ARCH
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if SIMT_WGMMA_ARCH
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  static_assert(Pending >= 0 && Pending <= 7, "wgmma.wait_group: 0..7 groups left in flight");
#if SIMT_WGMMA_ARCH
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#else
  __trap();
#endif
}
// Keeps the compiler from moving the accumulator's reads and writes across this point (CUTLASS's
// warpgroup_fence_operand): before wgmma_fence, so that writes such as a rescale of O stay before
// it; after the wait, so that reads stay after (the compiler sees the wgmma's asm write the
// registers when issued).
template <int N>
__device__ __forceinline__ void wgmma_fence_operand(WgmmaAccumulator<N>& d) {
  #pragma unroll
  for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(d.v[i])::"memory");
}
// The same for wgmma_rs's A fragments: their writes (P packed) stay before the fence, and after the
// wait that retires the wgmma reading them, the next writes stay after it.
template <int R>
__device__ __forceinline__ void wgmma_fence_operand(uint32_t (&a)[R][4]) {
  #pragma unroll
  for (int r = 0; r < R; ++r)
  #pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[r][i])::"memory");
}
template <int Pending, int N>
__device__ __forceinline__ void wgmma_wait(WgmmaAccumulator<N>& d) {
  wgmma_wait<Pending>();
  wgmma_fence_operand(d);
}
template <int Pending, int N1, int N2>
__device__ __forceinline__ void wgmma_wait(WgmmaAccumulator<N1>& d1, WgmmaAccumulator<N2>& d2) {
  wgmma_wait<Pending>();
  wgmma_fence_operand(d1);
  wgmma_fence_operand(d2);
}
template <int Pending, int N>
__device__ __forceinline__ void wgmma_wait_in_place(WgmmaAccumulator<N>& d) {
#if SIMT_WGMMA_ARCH
  asm volatile("fence.acq_rel.cta;\n" ::: "memory");
#endif
  wgmma_wait<Pending>(d);
}
#endif

}  // namespace simt

#undef SIMT_WGMMA_CALLER
#undef SIMT_WGMMA_SITE
