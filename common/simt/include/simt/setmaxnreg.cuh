// simt/setmaxnreg.cuh: a warpgroup (4 aligned warps) gives registers back or takes more, so that
// a producer warpgroup that only issues copies can run on 24 registers per thread while its
// consumers compute on 240 (FlashAttention-3). The register count is a template argument, because
// the instruction takes an immediate.
//
//   setmaxnreg_dec<Regs>()   this warpgroup's threads keep at most Regs registers
//   setmaxnreg_inc<Regs>()   they get Regs (on a GPU it waits until the SM has them free)
//
// Regs is 24..256, a multiple of 8 (checked when compiled, on both backends). The instruction is
// sm_90a's: built for another target it does nothing (the compiler's allocation stands, and only
// the occupancy it allowed changes); and ptxas applies it only in a kernel whose register count at
// entry it knows, one with __launch_bounds__(threads, 1) (else it warns and drops it). On the CPU, where registers are not emulated, it checks what
// a GPU requires: every warp of a warpgroup makes the same calls in the same order (the k-th of
// each warp the same action and count), the block is whole warpgroups, an .inc does not lower nor a
// .dec raise the count a warp has, and once every warpgroup has set its count, their sum fits the
// SM's 64K registers. A mismatch is an error naming both lines. Not checked: the barrier a
// warpgroup's warps need between two calls.
#pragma once
#include "simt/simt.h"

#if SIMT_CPU
#define SIMT_SETMAXNREG_CALLER SIMT_CALLER
#define SIMT_SETMAXNREG_SITE simt_file, simt_line
#else
#define SIMT_SETMAXNREG_CALLER
#define SIMT_SETMAXNREG_SITE nullptr, 0
#endif

namespace simt {

namespace detail {
#if SIMT_CPU
struct RegisterChange {
  bool inc;
  unsigned regs;
};
inline void setmaxnreg_check(Thread* const* lanes, unsigned mask, const void* arg) {
  if (mask != 0xffffffffu)
    kernel_error(t_thread->file, t_thread->line, "setmaxnreg needs all 32 lanes of the warp (mask 0x%08x)", mask);
  const auto* c = static_cast<const RegisterChange*>(arg);
  register_change(lanes[0]->warp, c->inc, c->regs, t_thread->file, t_thread->line);
}
#endif

// Both actions: the count checked when compiled, then the instruction (or, on the CPU, its checks).
template <bool Inc, unsigned Regs>
__device__ __forceinline__ void setmaxnreg([[maybe_unused]] const char* file, [[maybe_unused]] int line) {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg: 24..256 registers, a multiple of 8");
#if SIMT_CPU
  static constexpr RegisterChange change{Inc, Regs};
  warp_collective(0xffffffffu, Inc ? "setmaxnreg.inc" : "setmaxnreg.dec", file, line, &setmaxnreg_check, &change);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (Inc)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}
}  // namespace detail

template <unsigned Regs>
__device__ __forceinline__ void setmaxnreg_dec(SIMT_SETMAXNREG_CALLER) {
  detail::setmaxnreg<false, Regs>(SIMT_SETMAXNREG_SITE);
}

template <unsigned Regs>
__device__ __forceinline__ void setmaxnreg_inc(SIMT_SETMAXNREG_CALLER) {
  detail::setmaxnreg<true, Regs>(SIMT_SETMAXNREG_SITE);
}

}  // namespace simt

#undef SIMT_SETMAXNREG_CALLER
#undef SIMT_SETMAXNREG_SITE
