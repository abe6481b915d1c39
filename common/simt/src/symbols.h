// symbols.h: what the executable's own symbol table (.symtab) says about a kernel: its name, and the
// static __shared__ it declares. On the CPU a kernel's `__shared__` arrays are function-local
// `static thread_local` variables (simt/cpu/builtins.h), so the symbol table lists each with its
// size, under the kernel's name: what ptxas reports as a kernel's static shared memory.
#pragma once
#include <cstddef>
#include <string>

namespace simt::detail {

// The kernel's demangled name, or "" when no symbol names it (a stripped file).
std::string kernel_name(const void* kernel);
// The bytes of the static __shared__ variables the kernel itself declares (those of the device
// functions it calls are theirs, as in a GPU's report), or -1 when its symbol is not found.
long long static_smem_bytes(const void* kernel);

}  // namespace simt::detail
