// symbols.cpp: the executable's .symtab, read once per file in small pieces (a debug build's symbol
// names take tens of megabytes, which a run should not hold): the function symbols' addresses, the
// thread-local objects named after a function (_ZZ...), and their names read when asked for.
#include "symbols.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace simt::detail {
namespace {

struct Table {
  int fd = -1;
  uint64_t strtab = 0, strtab_size = 0;                 // file offset and size of the symbols' names
  std::vector<std::pair<uintptr_t, uint32_t>> functions;  // (address, name offset), by address
  std::vector<std::pair<std::string, size_t>> locals;     // function-local thread-locals: (name, bytes), by name
  bool absolute = false;                                  // addresses as loaded; a PIE's are offsets from its base

  bool read(uint64_t at, void* out, size_t n) const {
    return pread(fd, out, n, static_cast<off_t>(at)) == static_cast<ssize_t>(n);
  }
  std::string name(uint32_t off) const {
    std::string s;
    char buf[256];
    for (uint64_t at = strtab + off; at < strtab + strtab_size; at += sizeof buf) {
      const ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(at));
      if (n <= 0) break;
      const void* end = std::memchr(buf, 0, static_cast<size_t>(n));
      s.append(buf, end ? static_cast<const char*>(end) - buf : n);
      if (end) break;
    }
    return s;
  }
};

// Empty when the file cannot be read or was stripped.
Table read_symbols(const char* path) {
  Table t;
  t.fd = open(path, O_RDONLY | O_CLOEXEC);
  if (t.fd < 0) return t;
  Elf64_Ehdr eh{};
  if (!t.read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return t;
  t.absolute = eh.e_type == ET_EXEC;
  auto section = [&](size_t i) {
    Elf64_Shdr sh{};
    t.read(eh.e_shoff + i * sizeof sh, &sh, sizeof sh);
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr str = section(sh.sh_link);
    t.strtab = str.sh_offset, t.strtab_size = str.sh_size;
    std::vector<std::pair<uint32_t, size_t>> locals;
    std::vector<Elf64_Sym> chunk(4096);
    for (uint64_t k = 0, n = sh.sh_size / sizeof(Elf64_Sym); k < n; k += chunk.size()) {
      const size_t m = static_cast<size_t>(std::min<uint64_t>(chunk.size(), n - k));
      if (!t.read(sh.sh_offset + k * sizeof(Elf64_Sym), chunk.data(), m * sizeof(Elf64_Sym))) break;
      for (size_t j = 0; j < m; ++j) {
        const Elf64_Sym& sym = chunk[j];
        if (sym.st_name >= str.sh_size) continue;
        if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value) t.functions.emplace_back(sym.st_value, sym.st_name);
        if (ELF64_ST_TYPE(sym.st_info) == STT_TLS) locals.emplace_back(sym.st_name, sym.st_size);
      }
    }
    for (const auto& [off, size] : locals)
      if (std::string n = t.name(off); n.rfind("_ZZ", 0) == 0) t.locals.emplace_back(std::move(n), size);
  }
  std::sort(t.functions.begin(), t.functions.end());
  std::sort(t.locals.begin(), t.locals.end());
  return t;
}

std::string demangled(const std::string& symbol) {
  int status = 0;
  char* d = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string name = d ? d : symbol;
  std::free(d);
  return name;
}

std::mutex g_mu;

// The kernel's mangled name and the table of the file it is in (nullptr when no symbol names it).
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
  const Table& t = it->second;
  if (info.dli_sname && info.dli_saddr == kernel) {
    mangled = info.dli_sname;
    return &t;
  }
  const uintptr_t at = reinterpret_cast<uintptr_t>(kernel) - (t.absolute ? 0 : reinterpret_cast<uintptr_t>(info.dli_fbase));
  const auto f = std::lower_bound(t.functions.begin(), t.functions.end(), std::make_pair(at, uint32_t{0}));
  if (f == t.functions.end() || f->first != at) return nullptr;
  mangled = t.name(f->second);
  return &t;
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
    for (auto it = std::lower_bound(t->locals.begin(), t->locals.end(), std::make_pair(prefix, size_t{0}));
         it != t->locals.end() && it->first.rfind(prefix, 0) == 0; ++it)
      bytes += static_cast<long long>(it->second);
  }
  known.emplace(kernel, bytes);
  return bytes;
}

}  // namespace simt::detail
