// symbols.cpp: the executable's .symtab, read once per file: function symbols by address, and the
// sizes of thread-local objects by name.
#include "symbols.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace simt::detail {
namespace {

struct Table {
  std::map<uintptr_t, std::string> functions;  // mangled, by address (a PIE's: offsets from its base)
  std::map<std::string, size_t> tls;           // thread-local objects: mangled name -> bytes
  bool absolute = false;
};

// Empty when the file cannot be read or was stripped.
Table read_symbols(const char* path) {
  Table out;
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return out;
  std::string bytes;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
  std::fclose(f);
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0 ||
      bytes[EI_CLASS] != ELFCLASS64)
    return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  out.absolute = eh.e_type == ET_EXEC;  // addresses as loaded; a PIE's are offsets from its base
  auto section = [&](size_t i) {
    Elf64_Shdr sh{};
    const size_t at = eh.e_shoff + i * sizeof(Elf64_Shdr);
    if (at + sizeof sh <= bytes.size()) std::memcpy(&sh, bytes.data() + at, sizeof sh);
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_offset + sh.sh_size > bytes.size()) continue;
    const Elf64_Shdr str = section(sh.sh_link);
    if (str.sh_offset + str.sh_size > bytes.size()) continue;
    for (size_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, bytes.data() + sh.sh_offset + k * sizeof sym, sizeof sym);
      if (sym.st_name >= str.sh_size) continue;
      const char* name = bytes.data() + str.sh_offset + sym.st_name;
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value)
        out.functions.emplace(sym.st_value, name);
      else if (ELF64_ST_TYPE(sym.st_info) == STT_TLS)
        out.tls.emplace(name, sym.st_size);
    }
  }
  return out;
}

std::string demangled(const std::string& symbol) {
  int status = 0;
  char* d = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string name = d ? d : symbol;
  std::free(d);
  return name;
}

std::mutex g_mu;

// The kernel's mangled name and the table of the file it is in.
const Table* lookup(const void* kernel, std::string& mangled) {
  Dl_info info{};
  if (!dladdr(kernel, &info)) return nullptr;
  static std::map<std::string, Table> files;  // callers hold g_mu
  const std::string file = info.dli_fname ? info.dli_fname : "";
  auto it = files.find(file);
  if (it == files.end()) {
    Table t = read_symbols(file.c_str());
    if (t.functions.empty()) t = read_symbols("/proc/self/exe");  // the main program
    it = files.emplace(file, std::move(t)).first;
  }
  if (info.dli_sname && info.dli_saddr == kernel) {
    mangled = info.dli_sname;
    return &it->second;
  }
  const uintptr_t at = reinterpret_cast<uintptr_t>(kernel) -
                       (it->second.absolute ? 0 : reinterpret_cast<uintptr_t>(info.dli_fbase));
  const auto sym = it->second.functions.find(at);
  if (sym == it->second.functions.end()) return nullptr;
  mangled = sym->second;
  return &it->second;
}

}  // namespace

std::string kernel_name(const void* kernel) {
  std::lock_guard<std::mutex> g(g_mu);
  std::string mangled;
  return lookup(kernel, mangled) ? demangled(mangled) : "";
}

long long static_smem_bytes(const void* kernel) {
  std::lock_guard<std::mutex> g(g_mu);
  static std::map<const void*, long long> known;
  if (const auto it = known.find(kernel); it != known.end()) return it->second;
  std::string mangled;
  const Table* t = lookup(kernel, mangled);
  long long bytes = -1;
  if (t && mangled.rfind("_Z", 0) == 0) {
    // A function-local static's name is _ZZ <the function's encoding> E <its own name>: the kernel's
    // symbol without its _Z, between _ZZ and E.
    const std::string prefix = "_ZZ" + mangled.substr(2) + "E";
    bytes = 0;
    for (auto it = t->tls.lower_bound(prefix); it != t->tls.end() && it->first.rfind(prefix, 0) == 0; ++it)
      bytes += static_cast<long long>(it->second);
  }
  known.emplace(kernel, bytes);
  return bytes;
}

}  // namespace simt::detail
