// simt.h: one kernel source, two compilers.
//
// A kernel file includes this header first and then is plain CUDA C++, with three exceptions:
//   1. launch with  simt::launch(kernel, grid, block, smem_bytes, args...)  instead of <<<...>>>
//      (it also opts the kernel in to more than 48 KB of dynamic shared memory);
//   2. dynamic shared memory via  T* p = simt::dynamic_smem<T>();  instead of `extern __shared__`;
//   3. inline PTX only through the wrappers of the simt/*.cuh headers (ptx.cuh, mbarrier.cuh,
//      ...), which have a CPU branch.
//
// Under nvcc this header only defines those two helpers. Under a C++ compiler (the cpu backend,
// where it is also force-included) it maps the CUDA built-ins onto the simt emulator, which runs
// every GPU thread as a fiber: see notes/emulator.md.
#pragma once

#if defined(__CUDACC__)
#include "simt/gpu.h"
#define SIMT_CPU 0
#else
#define SIMT_CPU 1
#include "simt/cpu/launch.h"
#include "simt/cpu/builtins.h"
#include "simt/cpu/half_math.h"
#endif

// sm_80's instructions (mma.sync m16n8k16, bf16 mma, cp.async, mbarrier) in nvcc's pass for an older
// GPU (sm_75, a T4): the wrappers (ptx.cuh, mbarrier.cuh) trap there instead, never reached, since
// the registry refuses every variant that uses them (Variant::min_cc); the emulator standing for
// such a GPU fails the launch at the instruction.
#if !SIMT_CPU && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define SIMT_BEFORE_SM80 1
#else
#define SIMT_BEFORE_SM80 0
#endif
