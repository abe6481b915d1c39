// sass_fresh.h: whether the SASS data (sass_sm90.inc) still describes the sources it was compiled
// from. A learner who edits a kernel, as the exercises ask, would otherwise get the old kernel's
// issue and latency terms and registers without a word: the profile says so instead (profile.cpp).
#pragma once
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace attn {

struct SassSource {
  const char* path;  // from the repository's root
  uint64_t hash;     // tools/sass_issue.py's file_hash
};
inline constexpr SassSource kSassSources[] = {
#include "sass_sm90_sources.inc"
};

// FNV-1a, 64 bits, over a file's bytes: tools/sass_issue.py's file_hash.
inline uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// The listed sources that no longer hash as they did under `root` (changed, or gone).
inline std::vector<std::string> stale_sass_sources(const std::string& root) {
  std::vector<std::string> stale;
  for (const SassSource& s : kSassSources) {
    std::ifstream f(root + "/" + s.path, std::ios::binary);
    if (!f || fnv1a64(std::string(std::istreambuf_iterator<char>(f), {})) != s.hash) stale.push_back(s.path);
  }
  return stale;
}

// Whether a kernel (as the emulator names it) may be built from one of `stale`: a file under
// common/, or one of chapter NN's (folder "NN_...") for a kernel that names namespace chNN (chapter
// 06's kernels are chapter 05's with a ch06 policy: both names appear).
inline bool built_from(const std::string& kernel, const std::vector<std::string>& stale) {
  for (const std::string& f : stale) {
    if (f.rfind("common/", 0) == 0) return true;
    if (f.size() > 3 && f[2] == '_' && kernel.find("ch" + f.substr(0, 2) + "::") != std::string::npos) return true;
  }
  return false;
}

}  // namespace attn
