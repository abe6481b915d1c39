// sass_fresh.h: whether the SASS data (sass_sm90.inc) still describes the sources it was compiled
// from. A learner who edits a kernel, as the exercises ask, gets the edited kernel's rows from the
// counters build, which compiles them itself (sass.h's kSassLive); where it could not (no nvcc or
// nvdisasm), the old kernel's issue and latency terms and registers would be used without a word:
// the profile says so instead (profile.cpp).
#pragma once
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sass.h"

namespace attn {

inline constexpr SassSource kSassSources[] = {
#include "sass_sm90_sources.inc"
};

// FNV-1a, 64 bits, over a file's bytes: tools/sass_issue.py's file_hash.
inline uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// The listed sources that no longer hash as they did under `root` (changed, or gone), but those
// the build compiled again as they are now (kSassLive, when nothing kept it from doing so).
inline std::vector<std::string> stale_sass_sources(const std::string& root, const SassLive& live = kSassLive) {
  std::vector<std::string> stale;
  for (const SassSource& s : kSassSources) {
    std::ifstream f(root + "/" + s.path, std::ios::binary);
    const uint64_t now = f ? fnv1a64(std::string(std::istreambuf_iterator<char>(f), {})) : 0;
    if (f && now == s.hash) continue;
    bool rebuilt = false;
    for (int i = 0; f && !*live.why && i < live.edited_count; ++i)
      rebuilt |= live.edited[i].path == std::string(s.path) && live.edited[i].hash == now;
    if (!rebuilt) stale.push_back(s.path);
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
