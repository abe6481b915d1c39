// simt/cpu/builtins.h: the CUDA device built-ins, as the C++ compiler sees them in the cpu backend.
#pragma once
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "simt/cpu/counters_hooks.h"
#include "simt/cpu/launch.h"

// ---- qualifiers -------------------------------------------------------------------------------
// __global__, __device__, __host__, __forceinline__ and __align__ come from CUDA's host_defines.h.
#ifndef __launch_bounds__
#define __launch_bounds__(...)  // an occupancy hint only
#endif
#undef __shared__
#define __shared__ static thread_local  // one copy per OS thread = per resident block
#undef __constant__
#define __constant__ static
#undef __grid_constant__
#define __grid_constant__  // a kernel parameter the GPU keeps in its parameter space (a TMA map): a copy here

// ---- built-in variables -----------------------------------------------------------------------
#define threadIdx (static_cast<const uint3&>(::simt::detail::t_thread->tid))
#define blockIdx (static_cast<const uint3&>(::simt::detail::t_block_idx))
#define blockDim (static_cast<const dim3&>(::simt::detail::t_block_dim))
#define gridDim (static_cast<const dim3&>(::simt::detail::t_grid_dim))
#define warpSize 32

// Every synchronizing call records its caller's file:line for the deadlock and divergence reports.
#define SIMT_CALLER const char *simt_file = __builtin_FILE(), int simt_line = __builtin_LINE()

// ---- barriers -----------------------------------------------------------------------------------
inline void __syncthreads(SIMT_CALLER) {
  simt::detail::block_barrier(simt::detail::Barrier::plain, 0, "__syncthreads", simt_file, simt_line);
}
inline int __syncthreads_count(int pred, SIMT_CALLER) {
  return simt::detail::block_barrier(simt::detail::Barrier::count, pred, "__syncthreads_count",
                                     simt_file, simt_line);
}
inline int __syncthreads_and(int pred, SIMT_CALLER) {
  return simt::detail::block_barrier(simt::detail::Barrier::all, pred, "__syncthreads_and",
                                     simt_file, simt_line);
}
inline int __syncthreads_or(int pred, SIMT_CALLER) {
  return simt::detail::block_barrier(simt::detail::Barrier::any, pred, "__syncthreads_or",
                                     simt_file, simt_line);
}

namespace simt::detail {
// Shuffles follow the PTX ISA's shfl.sync: c = ((32 - width) << 8) | clamp, segmask = c[12:8],
// maxLane = (lane & segmask) | (clamp & ~segmask), and a source lane out of range yields the
// caller's own value.
enum class Shfl { idx, up, down, bfly };
template <Shfl Mode, int Size>
SIMT_UNCOUNTED void shfl_exchange(Thread* const* lanes, unsigned mask, const void*) {
  for (int l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    const unsigned b = static_cast<unsigned>(lanes[l]->arg) & 31u;
    const unsigned segmask = (32u - static_cast<unsigned>(lanes[l]->width)) & 31u;
    const unsigned clamp = Mode == Shfl::up ? 0u : 31u;
    const unsigned lane = static_cast<unsigned>(l);
    const unsigned max_lane = (lane & segmask) | (clamp & ~segmask), min_lane = lane & segmask;
    int j = 0;
    bool valid = false;
    switch (Mode) {
      case Shfl::up: j = static_cast<int>(lane) - static_cast<int>(b); valid = j >= static_cast<int>(max_lane); break;
      case Shfl::down: j = static_cast<int>(lane + b); valid = j <= static_cast<int>(max_lane); break;
      case Shfl::bfly: j = static_cast<int>(lane ^ b); valid = j <= static_cast<int>(max_lane); break;
      case Shfl::idx: j = static_cast<int>(min_lane | (b & ~segmask)); valid = j <= static_cast<int>(max_lane); break;
    }
    if (!valid) j = l;
    if (!(mask >> j & 1u))
      kernel_error(t_thread->file, t_thread->line, "shuffle: lane %d reads lane %d, which is not in mask 0x%08x", l, j,
                   mask);
    std::memcpy(lanes[l]->out, lanes[j]->in, Size);
  }
}
template <Shfl Mode, class T>
inline T shfl(unsigned mask, T v, int arg, int width, const char* what, const char* file, int line) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 64, "shuffle of an unsupported type");
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    kernel_error(file, line, "%s: width %d is not a power of two in 1..32", what, width);
  Thread* self = t_thread;
  std::memcpy(self->in, &v, sizeof(T));
  self->arg = arg;
  self->width = width;
  warp_collective(mask, what, file, line, &shfl_exchange<Mode, static_cast<int>(sizeof(T))>, nullptr);
  T r;
  std::memcpy(&r, t_thread->out, sizeof(T));
  return r;
}

enum class Vote { ballot, all, any };
template <Vote Kind>
SIMT_UNCOUNTED void vote_exchange(Thread* const* lanes, unsigned mask, const void*) {
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && lanes[l]->arg) ballot |= 1u << l;
  const unsigned r = Kind == Vote::ballot ? ballot : Kind == Vote::all ? ballot == mask : ballot != 0;
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) std::memcpy(lanes[l]->out, &r, sizeof r);
}
template <Vote Kind>
inline unsigned vote(unsigned mask, int pred, const char* what, const char* file, int line) {
  t_thread->arg = pred != 0;
  warp_collective(mask, what, file, line, &vote_exchange<Kind>, nullptr);
  unsigned r;
  std::memcpy(&r, t_thread->out, sizeof r);
  return r;
}
}  // namespace simt::detail

inline void __syncwarp(unsigned mask = 0xffffffffu, SIMT_CALLER) {
  simt::detail::warp_collective(mask, "__syncwarp", simt_file, simt_line, &simt::detail::no_op, nullptr);
}

// ---- warp shuffles and votes --------------------------------------------------------------------
template <class T>
inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize, SIMT_CALLER) {
  using simt::detail::Shfl;
  return simt::detail::shfl<Shfl::idx>(mask, v, src_lane, width, "__shfl_sync", simt_file, simt_line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize, SIMT_CALLER) {
  using simt::detail::Shfl;
  return simt::detail::shfl<Shfl::up>(mask, v, static_cast<int>(delta), width, "__shfl_up_sync", simt_file,
                                      simt_line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize, SIMT_CALLER) {
  using simt::detail::Shfl;
  return simt::detail::shfl<Shfl::down>(mask, v, static_cast<int>(delta), width, "__shfl_down_sync",
                                        simt_file, simt_line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize, SIMT_CALLER) {
  using simt::detail::Shfl;
  return simt::detail::shfl<Shfl::bfly>(mask, v, lane_mask, width, "__shfl_xor_sync", simt_file,
                                        simt_line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, SIMT_CALLER) {
  using simt::detail::Vote;
  return simt::detail::vote<Vote::ballot>(mask, pred, "__ballot_sync", simt_file, simt_line);
}
inline int __all_sync(unsigned mask, int pred, SIMT_CALLER) {
  using simt::detail::Vote;
  return static_cast<int>(simt::detail::vote<Vote::all>(mask, pred, "__all_sync", simt_file, simt_line));
}
inline int __any_sync(unsigned mask, int pred, SIMT_CALLER) {
  using simt::detail::Vote;
  return static_cast<int>(simt::detail::vote<Vote::any>(mask, pred, "__any_sync", simt_file, simt_line));
}
// Lanes of the caller's warp that have not exited: the CPU has no notion of divergence.
inline unsigned __activemask() { return simt::detail::active_mask(); }

// ---- memory: loads, fences, atomics (blocks run on several OS threads: atomics are real) -------
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// atomicAdd on floats, atomicMax and atomicMin are compare-and-swap loops on the CPU, one atomic
// instruction each on a GPU. In a counters build they stay out of line and out of the
// instrumentation, and count as that one instruction: the loop's first load and its retries (as
// many as the blocks running at the same time on other workers happened to cause) are the CPU's.
#if SIMT_COUNTERS
#define SIMT_RMW SIMT_UNCOUNTED __attribute__((noinline))
#define SIMT_RMW_COUNT(a) ::simt::detail::counters::atomic(a, static_cast<unsigned>(sizeof(*(a))), __builtin_return_address(0))
#else
#define SIMT_RMW inline
#define SIMT_RMW_COUNT(a) static_cast<void>(0)
#endif
template <class T>
SIMT_RMW T atomicAdd(T* a, T v) {
  SIMT_RMW_COUNT(a);
  if constexpr (std::is_integral_v<T>) {
    return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);
  } else {
    T old = *a, next;
    do next = old + v;
    while (!__atomic_compare_exchange(a, &old, &next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
  }
}
template <class T>
inline T atomicSub(T* a, T v) {
  return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED);
}
template <class T>
inline T atomicAnd(T* a, T v) {
  return __atomic_fetch_and(a, v, __ATOMIC_RELAXED);
}
template <class T>
inline T atomicOr(T* a, T v) {
  return __atomic_fetch_or(a, v, __ATOMIC_RELAXED);
}
template <class T>
inline T atomicXor(T* a, T v) {
  return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED);
}
template <class T>
inline T atomicExch(T* a, T v) {
  T old;
  __atomic_exchange(a, &v, &old, __ATOMIC_RELAXED);
  return old;
}
template <class T>
inline T atomicCAS(T* a, T expected, T desired) {
  __atomic_compare_exchange(a, &expected, &desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
template <class T>
SIMT_RMW T atomicMax(T* a, T v) {
  SIMT_RMW_COUNT(a);
  T old = *a;
  while (old < v && !__atomic_compare_exchange(a, &old, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <class T>
SIMT_RMW T atomicMin(T* a, T v) {
  SIMT_RMW_COUNT(a);
  T old = *a;
  while (v < old && !__atomic_compare_exchange(a, &old, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
#undef SIMT_RMW
#undef SIMT_RMW_COUNT

// ---- arithmetic the device has and the host headers lack ---------------------------------------
// The fast GPU intrinsics (__expf, __fdividef, ...) are approximate on the GPU; the CPU computes
// them exactly. Compare with tolerances, never bit for bit. Those the GPU's special-function
// unit (MUFU) computes are counted in a counters build (simt/counters.h), one each.
#define SIMT_MUFU ::simt::detail::counters::mufu()
inline float __expf(float x) { return SIMT_MUFU, std::exp(x); }
inline float __exp10f(float x) { return SIMT_MUFU, std::pow(10.0f, x); }
inline float __logf(float x) { return SIMT_MUFU, std::log(x); }
inline float __log2f(float x) { return SIMT_MUFU, std::log2(x); }
inline float __sinf(float x) { return SIMT_MUFU, std::sin(x); }
inline float __cosf(float x) { return SIMT_MUFU, std::cos(x); }
inline float __tanf(float x) { return SIMT_MUFU, SIMT_MUFU, std::tan(x); }
inline float __powf(float x, float y) { return SIMT_MUFU, SIMT_MUFU, std::pow(x, y); }
inline float __fdividef(float x, float y) { return SIMT_MUFU, x / y; }
inline float fdividef(float x, float y) { return SIMT_MUFU, x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frsqrt_rn(float x) { return SIMT_MUFU, 1.0f / std::sqrt(x); }
inline float rsqrtf(float x) { return SIMT_MUFU, 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float exp10f(float x) { return SIMT_MUFU, std::pow(10.0f, x); }
inline float __saturatef(float x) { return std::fmin(std::fmax(x, 0.0f), 1.0f); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
inline unsigned __float_as_uint(float x) { unsigned i; std::memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int i) { float x; std::memcpy(&x, &i, 4); return x; }
inline float __uint_as_float(unsigned i) { float x; std::memcpy(&x, &i, 4); return x; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// Device code has global min and max for the arithmetic types.
#define SIMT_MINMAX(T)                                  \
  inline T min(T a, T b) { return b < a ? b : a; }      \
  inline T max(T a, T b) { return a < b ? b : a; }
SIMT_MINMAX(int)
SIMT_MINMAX(unsigned)
SIMT_MINMAX(long)
SIMT_MINMAX(unsigned long)
SIMT_MINMAX(long long)
SIMT_MINMAX(unsigned long long)
SIMT_MINMAX(float)
SIMT_MINMAX(double)
#undef SIMT_MINMAX

#if SIMT_COUNTERS
// exp2f, expf, log2f and logf are the C library's on the CPU; on the GPU each is one MUFU
// operation (and a few multiply-adds). In a counters build the kernels call them through these.
namespace simt::detail::counted {
inline float exp2f_(float x) { return SIMT_MUFU, ::exp2f(x); }
inline float expf_(float x) { return SIMT_MUFU, ::expf(x); }
inline float log2f_(float x) { return SIMT_MUFU, ::log2f(x); }
inline float logf_(float x) { return SIMT_MUFU, ::logf(x); }
}  // namespace simt::detail::counted
#define exp2f(x) ::simt::detail::counted::exp2f_(x)
#define expf(x) ::simt::detail::counted::expf_(x)
#define log2f(x) ::simt::detail::counted::log2f_(x)
#define logf(x) ::simt::detail::counted::logf_(x)
#endif
#undef SIMT_MUFU
