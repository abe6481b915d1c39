// tsan_callbacks.cpp: the functions that GCC's ThreadSanitizer instrumentation calls.
//
// Kernels of a counters build are compiled with -fsanitize=thread (cmake/Kernels.cmake), but no
// sanitizer runtime is linked: these definitions take its place. Every load and store of a
// kernel calls __tsan_readN / __tsan_writeN with its address (N bytes), and its return address
// names the instruction; atomics become __tsan_atomicN_* calls, which must also do the operation.
// The counters keep what is global or shared memory of the running kernel (counters_state.h).
#include <cstdint>

#include "counters_state.h"

namespace c = simt::detail::counters;

#define SIMT_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))
#define SIMT_ACCESS(N)                                                                                      \
  extern "C" void __tsan_read##N(void* a) { c::on_access(reinterpret_cast<uintptr_t>(a), N, c::kLd, SIMT_PC); }  \
  extern "C" void __tsan_write##N(void* a) { c::on_access(reinterpret_cast<uintptr_t>(a), N, c::kSt, SIMT_PC); } \
  extern "C" void __tsan_unaligned_read##N(void* a) {                                                       \
    c::on_access(reinterpret_cast<uintptr_t>(a), N, c::kLd, SIMT_PC);                                        \
  }                                                                                                         \
  extern "C" void __tsan_unaligned_write##N(void* a) {                                                      \
    c::on_access(reinterpret_cast<uintptr_t>(a), N, c::kSt, SIMT_PC);                                        \
  }
SIMT_ACCESS(1)
SIMT_ACCESS(2)
SIMT_ACCESS(4)
SIMT_ACCESS(8)
SIMT_ACCESS(16)
#undef SIMT_ACCESS

// Block copies (a struct assigned whole): 16 bytes per access, as the widest GPU load would take them.
static void range(uintptr_t a, unsigned long n, c::Kind k, uintptr_t pc) {
  for (unsigned long at = 0; at < n; at += 16) c::on_access(a + at, n - at < 16 ? static_cast<unsigned>(n - at) : 16, k, pc);
}
extern "C" void __tsan_read_range(void* a, unsigned long n) { range(reinterpret_cast<uintptr_t>(a), n, c::kLd, SIMT_PC); }
extern "C" void __tsan_write_range(void* a, unsigned long n) { range(reinterpret_cast<uintptr_t>(a), n, c::kSt, SIMT_PC); }

// What the runtime would do, and the counters do not need.
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

// Atomics: counted as one atomic access, then done (sequentially consistent, whatever was asked).
#define SIMT_ATOMIC(BITS, T)                                                                                  \
  extern "C" T __tsan_atomic##BITS##_load(const volatile T* a, int) {                                        \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kLd, SIMT_PC);                                   \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                              \
  }                                                                                                           \
  extern "C" T __tsan_atomic##BITS##_exchange(volatile T* a, T v, int) {                                      \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kAtom, SIMT_PC);                                 \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                       \
  }                                                                                                           \
  extern "C" void __tsan_atomic##BITS##_store(volatile T* a, T v, int) {                                      \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kSt, SIMT_PC);                                   \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                 \
  }                                                                                                           \
  SIMT_RMW(BITS, T, fetch_add)                                                                                \
  SIMT_RMW(BITS, T, fetch_sub)                                                                                \
  SIMT_RMW(BITS, T, fetch_and)                                                                                \
  SIMT_RMW(BITS, T, fetch_or)                                                                                 \
  SIMT_RMW(BITS, T, fetch_xor)                                                                                \
  SIMT_RMW(BITS, T, fetch_nand)                                                                               \
  extern "C" int __tsan_atomic##BITS##_compare_exchange_strong(volatile T* a, T* expected, T desired, int, int) { \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kAtom, SIMT_PC);                                 \
    return __atomic_compare_exchange_n(a, expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
  }                                                                                                           \
  extern "C" int __tsan_atomic##BITS##_compare_exchange_weak(volatile T* a, T* expected, T desired, int, int) { \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kAtom, SIMT_PC);                                 \
    return __atomic_compare_exchange_n(a, expected, desired, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
  }                                                                                                           \
  extern "C" T __tsan_atomic##BITS##_compare_exchange_val(volatile T* a, T expected, T desired, int, int) {   \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kAtom, SIMT_PC);                                 \
    __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);            \
    return expected;                                                                                          \
  }
#define SIMT_RMW(BITS, T, OP)                                                  \
  extern "C" T __tsan_atomic##BITS##_##OP(volatile T* a, T v, int) {           \
    c::on_access(reinterpret_cast<uintptr_t>(a), BITS / 8, c::kAtom, SIMT_PC); \
    return __atomic_##OP(a, v, __ATOMIC_SEQ_CST);                              \
  }
SIMT_ATOMIC(8, unsigned char)
SIMT_ATOMIC(16, unsigned short)
SIMT_ATOMIC(32, unsigned int)
SIMT_ATOMIC(64, unsigned long long)
#undef SIMT_RMW
#undef SIMT_ATOMIC
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
