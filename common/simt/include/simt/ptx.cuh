// simt/ptx.cuh: the tensor-core and asynchronous-copy instructions the chapters use, each with two
// branches: the real inline PTX under nvcc, and a warp collective on the CPU that implements the
// PTX ISA's fragment layouts (simt/fragments.h) exactly.
//
//   mma_m16n8k16<T>(d, a, b, c)      D = A*B + C; A 16x16 row-major, B 16x8 column-major (T = __half
//                                    or __nv_bfloat16, two per 32-bit register), C and D fp32
//   ldmatrix_x{1,2,4}[_trans](r, p)  loads 1, 2 or 4 8x8 b16 matrices from shared memory; lane
//                                    8j + r gives the address p of row r of matrix j
//   cp_async_{cg,ca}_16(dst, src)    16-byte global -> shared copy that completes asynchronously
//   cp_async_cg_16_zfill(dst, src, n) copies n (0..16) bytes, zero-fills the rest
//   cp_async_commit(); cp_async_wait<N>()  close a group; wait until at most N groups are pending
//   ex2_approx_ftz(x)                2^x by ex2.approx.ftz.f32: one MUFU.EX2, subnormal inputs and
//                                    results flushed to zero
//
// On the CPU a cp.async reads its source when issued and writes shared memory only at the
// cp_async_wait that completes its group: reading the destination earlier shows the poison
// (NaN) that dynamic shared memory starts with, as a missing wait would show on the GPU.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "simt/simt.h"
#include "simt/fragments.h"

#if SIMT_CPU
#include <cmath>
#include <cstring>
#define SIMT_PTX_CALLER , SIMT_CALLER
#else
#define SIMT_PTX_CALLER
#endif

#if SIMT_CPU
namespace simt::detail {

template <class T>
inline float b16_element(const unsigned char* regs, int i) {  // element i, the low half first
  uint16_t bits;
  std::memcpy(&bits, regs + 2 * i, 2);
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(__ushort_as_bfloat16(bits));
  else
    return __half2float(__ushort_as_half(bits));
}

// Each lane publishes a[4] at in[0], b[2] at in[16], c[4] at in[24].
template <class T>
SIMT_UNCOUNTED void mma_m16n8k16_exchange(Thread* const* lanes, unsigned mask, const void*) {
  if (mask != 0xffffffffu) kernel_error(t_thread->file, t_thread->line, "mma.sync needs all 32 lanes (mask 0x%08x)", mask);
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    const unsigned char* in = lanes[l]->in;
    for (int i = 0; i < 8; ++i) A[frag::a_row(l, i)][frag::a_col(l, i)] = b16_element<T>(in, i);
    for (int i = 0; i < 4; ++i) B[frag::b_k(l, i)][frag::b_n(l, i)] = b16_element<T>(in + 16, i);
    for (int i = 0; i < 4; ++i) std::memcpy(&C[frag::c_row(l, i)][frag::c_col(l, i)], in + 24 + 4 * i, 4);
  }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const int r = frag::c_row(l, i), c = frag::c_col(l, i);
      // Products of 16-bit floats are exact; the sum is kept exact enough and rounded once. The
      // tensor core's own fp32 accumulation order is unspecified, so results agree to rounding.
      double acc = C[r][c];
      for (int k = 0; k < 16; ++k) acc += static_cast<double>(A[r][k]) * B[k][c];
      const float d = static_cast<float>(acc);
      std::memcpy(lanes[l]->out + 4 * i, &d, 4);
    }
}

// Lane l receives, for matrix j, row l/4 and columns 2(l%4), 2(l%4)+1 (with .trans: column l/4 and
// rows 2(l%4), 2(l%4)+1), as one 32-bit register.
template <int Num, bool Trans>
SIMT_UNCOUNTED void ldmatrix_exchange(Thread* const* lanes, unsigned mask, const void*) {
  if (mask != 0xffffffffu) kernel_error(t_thread->file, t_thread->line, "ldmatrix needs all 32 lanes (mask 0x%08x)", mask);
  for (int j = 0; j < Num; ++j)
    for (int l = 0; l < 32; ++l) {
      uint16_t e[2];
      for (int k = 0; k < 2; ++k) {
        const int row = Trans ? 2 * (l & 3) + k : l >> 2, col = Trans ? l >> 2 : 2 * (l & 3) + k;
        std::memcpy(&e[k], static_cast<const unsigned char*>(lanes[8 * j + row]->addr) + 2 * col, 2);
      }
      const uint32_t v = e[0] | static_cast<uint32_t>(e[1]) << 16;
      std::memcpy(lanes[l]->out + 4 * j, &v, 4);
    }
}

template <int Num, bool Trans>
inline void ldmatrix(uint32_t* r, const void* p, const char* file, int line) {
  Thread* self = t_thread;
  if (self->lane < 8u * Num && (reinterpret_cast<uintptr_t>(p) & 15) != 0)
    kernel_error(file, line, "ldmatrix: row address %p of lane %u is not 16-byte aligned", p, self->lane);
  self->addr = p;
  counters::ldmatrix_row(self->lane < 8u * Num ? p : nullptr, Num, Trans, file, line);
  warp_collective(0xffffffffu, Trans ? "ldmatrix.trans" : "ldmatrix", file, line, &ldmatrix_exchange<Num, Trans>,
                  nullptr);
  std::memcpy(r, t_thread->out, 4 * Num);
}

SIMT_UNCOUNTED inline void cp_async(void* dst, const void* src, int src_bytes, const char* what, const char* file,
                                    int line) {
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) != 0)
    kernel_error(file, line, "%s: addresses must be 16-byte aligned (dst %p, src %p)", what, dst, src);
  if (src_bytes < 0 || src_bytes > 16) kernel_error(file, line, "%s: source size %d is not in 0..16", what, src_bytes);
  require_arch(80, what, file, line);
  counters::cp_async(dst, src, src_bytes, file, line);
  Thread& t = *t_thread;
  AsyncCopy c{dst, {}, 16, t.committed_groups};
  if (src_bytes > 0) std::memcpy(c.bytes, src, static_cast<size_t>(src_bytes));
  t.copies.push_back(c);
}

// ex2.approx.ftz.f32 on the CPU: a subnormal input counts as zero, a subnormal result becomes +0,
// and the rest is exp2 rounded to float (the GPU's approximation differs from it in the last bits).
inline float ex2_approx_ftz(float x) {
  counters::mufu();  // one MUFU.EX2 on the GPU
  if (std::fpclassify(x) == FP_SUBNORMAL) x = 0.f;
  const float y = std::exp2(x);
  return std::fpclassify(y) == FP_SUBNORMAL ? 0.f : y;
}

// tanh.approx.f32 on the CPU: tanh rounded to float (the GPU's approximation has a relative error
// up to 2^-11, PTX ISA: tanh).
inline float tanh_approx(float x) {
  counters::mufu();  // one MUFU.TANH on the GPU
  return std::tanh(x);
}

}  // namespace simt::detail
#endif  // SIMT_CPU

namespace simt {

// ---- mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 ----------------------------------
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                             const float (&c)[4] SIMT_PTX_CALLER) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma inputs are __half or __nv_bfloat16");
#if SIMT_CPU
  detail::require_arch(80, "mma.sync.m16n8k16", simt_file, simt_line);
  unsigned char* in = detail::t_thread->in;
  std::memcpy(in, a, 16);
  std::memcpy(in + 16, b, 8);
  std::memcpy(in + 24, c, 16);
  detail::warp_collective(0xffffffffu, "mma.sync.m16n8k16", simt_file, simt_line, &detail::mma_m16n8k16_exchange<T>,
                          nullptr);
  std::memcpy(d, detail::t_thread->out, 16);
#elif SIMT_BEFORE_SM80
  (void)d, (void)a, (void)b, (void)c;
  __trap();
#else
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  }
#endif
}

// ---- ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 -------------------------------------------
#if SIMT_CPU
#define SIMT_LDMATRIX(NAME, NUM, TRANS, ASM)                                                 \
  inline void NAME(uint32_t (&r)[NUM], const void* p, SIMT_CALLER) {                         \
    detail::ldmatrix<NUM, TRANS>(r, p, simt_file, simt_line);                                 \
  }
#else
#define SIMT_LDMATRIX(NAME, NUM, TRANS, ASM)                                                 \
  __device__ __forceinline__ void NAME(uint32_t (&r)[NUM], const void* p) {                  \
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));                   \
    ASM;                                                                                     \
  }
#endif
SIMT_LDMATRIX(ldmatrix_x1, 1, false,
              asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s) : "memory"))
SIMT_LDMATRIX(ldmatrix_x2, 2, false,
              asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                           : "=r"(r[0]), "=r"(r[1]) : "r"(s) : "memory"))
SIMT_LDMATRIX(ldmatrix_x4, 4, false,
              asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                           : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s) : "memory"))
SIMT_LDMATRIX(ldmatrix_x1_trans, 1, true,
              asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s) : "memory"))
SIMT_LDMATRIX(ldmatrix_x2_trans, 2, true,
              asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                           : "=r"(r[0]), "=r"(r[1]) : "r"(s) : "memory"))
SIMT_LDMATRIX(ldmatrix_x4_trans, 4, true,
              asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                           : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s) : "memory"))
#undef SIMT_LDMATRIX

// ---- cp.async ----------------------------------------------------------------------------------------
// .cg caches in L2 only (streamed tiles); .ca also in L1.
__device__ __forceinline__ void cp_async_cg_16(void* smem_dst, const void* gmem_src SIMT_PTX_CALLER) {
#if SIMT_CPU
  detail::cp_async(smem_dst, gmem_src, 16, "cp.async.cg", simt_file, simt_line);
#elif SIMT_BEFORE_SM80
  (void)smem_dst, (void)gmem_src;
  __trap();
#else
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem_src) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_ca_16(void* smem_dst, const void* gmem_src SIMT_PTX_CALLER) {
#if SIMT_CPU
  detail::cp_async(smem_dst, gmem_src, 16, "cp.async.ca", simt_file, simt_line);
#elif SIMT_BEFORE_SM80
  (void)smem_dst, (void)gmem_src;
  __trap();
#else
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem_src) : "memory");
#endif
}
// Copies src_bytes (0..16) and fills the rest of the 16 bytes with zeros: the boundary tile's rows
// past the end of a sequence become zeros without a branch around the copy.
__device__ __forceinline__ void cp_async_cg_16_zfill(void* smem_dst, const void* gmem_src,
                                                     int src_bytes SIMT_PTX_CALLER) {
#if SIMT_CPU
  detail::cp_async(smem_dst, gmem_src, src_bytes, "cp.async.cg (zero-fill)", simt_file, simt_line);
#elif SIMT_BEFORE_SM80
  (void)smem_dst, (void)gmem_src, (void)src_bytes;
  __trap();
#else
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem_src), "r"(src_bytes) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if SIMT_CPU
  ++detail::t_thread->committed_groups;
#elif SIMT_BEFORE_SM80
  __trap();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if SIMT_CPU
  detail::wait_async_copies(N);
#elif SIMT_BEFORE_SM80
  __trap();
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ---- ex2.approx.ftz.f32 -----------------------------------------------------------------------------
// exp2f compiles to ex2.approx.f32 plus the instructions that keep subnormal results; with ftz the
// exponential is the one MUFU.EX2 instruction.
__device__ __forceinline__ float ex2_approx_ftz(float x) {
#if SIMT_CPU
  return detail::ex2_approx_ftz(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#endif
}

// ---- tanh.approx.f32 ----------------------------------------------------------------------------
// tanhf compiles to a sequence of FP32 instructions around an exponential; the approximation is
// one MUFU.TANH (sm_75 and later), as FlashAttention's softcap uses it.
__device__ __forceinline__ float tanh_approx(float x) {
#if SIMT_CPU
  return detail::tanh_approx(x);
#else
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#endif
}

}  // namespace simt
