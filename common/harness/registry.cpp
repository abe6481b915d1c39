#include "registry.h"

#include <algorithm>
#include <sstream>

namespace attn {

bool HeadDims::contains(int d) const {
  if (!list.empty()) return std::find(list.begin(), list.end(), d) != list.end();
  return d >= min && d <= max && d % multiple == 0;
}
std::string HeadDims::describe() const {
  std::ostringstream s;
  if (!list.empty()) {
    for (size_t i = 0; i < list.size(); ++i) s << (i ? ", " : "") << list[i];
  } else {
    s << min << ".." << max;
    if (multiple > 1) s << " (multiples of " << multiple << ")";
  }
  return s.str();
}

std::string Variant::supports() const {
  std::ostringstream s;
  for (size_t i = 0; i < dtypes.size(); ++i) s << (i ? ", " : "") << dtype_name(dtypes[i]);
  s << "; d " << head_dims.describe();
  if (causal) s << "; causal";
  if (mask) s << "; masks";
  for (size_t i = 0; i < mask_mods.size(); ++i)
    s << (i ? ", " : "; mask_mod ") << mod_name(mask_mods[i]) << (mask_mods[i] == ModKind::varlen ? " (--seqlens)" : mask_mods[i] == ModKind::varlen_window ? " (--seqlens with --mask-mod window)"
                                                          : mask_mods[i] == ModKind::blocks ? " (--block-mask)" : "");
  if (score_mod) s << "; score_mod";
  return s.str();
}

std::string Variant::unfit(const Problem& p, const DeviceInfo& dev) const {
  if (const std::string why = dev.lacks_code(sm90a); !why.empty()) return "variant " + name + ": " + why;
  if (sm90a && dev.cc() != 90)
    return "variant " + name + " is sm_90a code (wgmma, setmaxnreg), which runs on sm_90 GPUs only; " + dev.target() +
           " is not one";
  if (dev.cc() < min_cc)
    return "variant " + name + " needs sm_" + std::to_string(min_cc) + " or later (cp.async, mma.sync m16n8k16, bf16 "
           "tensor cores); " + dev.target() + " is older";
  return smem_refusal(name, smem_bytes(p), p.d, p.dtype, dev);
}

std::string smem_refusal(const std::string& variant, size_t need, int d, DType t, const DeviceInfo& dev) {
  if (static_cast<long long>(need) <= dev.smem_optin) return "";
  return "variant " + variant + " needs " + std::to_string(need) + " B of shared memory per block at d = " +
         std::to_string(d) + " in " + dtype_name(t) + "; " + dev.target() + " allows " + std::to_string(dev.smem_optin);
}

std::string Variant::unsupported_features(const Problem& p) const {
  if (std::find(dtypes.begin(), dtypes.end(), p.dtype) == dtypes.end())
    return "variant " + name + " does not take " + dtype_name(p.dtype) + " inputs (it supports " + supports() + ")";
  if (!head_dims.contains(p.d))
    return "variant " + name + " does not support head dim " + std::to_string(p.d) + " (it supports " + supports() + ")";
  if (p.causal != Causal::none && !causal)
    return "variant " + name + " has no is_causal (it supports " + supports() + ")";
  if (p.mask != MaskKind::none && !mask)
    return "variant " + name + " takes no attn_mask (it supports " + supports() + ")";
  if (p.mod != ModKind::none && std::find(mask_mods.begin(), mask_mods.end(), p.mod) == mask_mods.end())
    return "variant " + name + " takes no mask_mod " + mod_name(p.mod) + " (it supports " + supports() +
           (mask_mods.empty() ? "; chapter 10's steps take one)" : ")");
  if (p.mod == ModKind::none && needs_mask_mod)
    return "variant " + name + " runs only a mask_mod (it supports " + supports() + ")";
  if (p.score_mod() && !score_mod)
    return "variant " + name + " takes no score_mod (softcap, alibi; it supports " + supports() +
           "; chapter 10's score_mod step takes them)";
  if (max_heads > 0 && static_cast<long long>(p.heads()) > max_heads)
    return "variant " + name + " runs at most " + std::to_string(max_heads) + " heads (B*H), not " +
           std::to_string(p.heads()) + ": its grid has one row of blocks per head";
  return "";
}

std::string Variant::unsupported(const Problem& p, const DeviceInfo& dev) const {
  const std::string why = unsupported_features(p);
  return why.empty() ? unfit(p, dev) : why;
}
std::string Variant::unsupported(const Problem& p) const {
  const std::string why = unsupported_features(p);
  if (!why.empty()) return why;
  const DeviceInfo* dev = device_if_any();
  return dev ? unfit(p, *dev) : "";
}

std::vector<Variant>& registry() {
  static std::vector<Variant> r;
  return r;
}
Register::Register(Variant v) { registry().push_back(std::move(v)); }

std::vector<std::pair<std::string, std::string>> gpu_only_variants() {
  // "01_naive_attention/math_path,...", from the chapters' GPU_KERNELS (the top CMakeLists.txt).
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream list(FLASHSTEPS_GPU_ONLY_VARIANTS);
  for (std::string item; std::getline(list, item, ',');)
    if (const size_t slash = item.find('/'); slash != std::string::npos)
      out.emplace_back(item.substr(0, slash), item.substr(slash + 1));
  return out;
}

bool Variant::answers_to(const std::string& n) const {
  return n == name || std::find(formerly.begin(), formerly.end(), n) != formerly.end();
}

const Variant* find_variant(const std::string& name) {
  for (const Variant& v : registry())
    if (v.answers_to(name)) return &v;
  return nullptr;
}
std::vector<std::string> chapters() {
  std::vector<std::string> c;
  for (const Variant& v : registry())
    if (std::find(c.begin(), c.end(), v.chapter) == c.end()) c.push_back(v.chapter);
  std::sort(c.begin(), c.end());
  return c;
}
const Variant* runnable_step(const std::string& chapter, const Problem& p) {
  const Variant* last = nullptr;
  for (const Variant& v : registry())
    if (v.chapter == chapter && v.unsupported(p).empty()) {
      if (v.best) return &v;
      last = &v;
    }
  return last;
}

const Variant* best_of(const std::string& chapter) {
  const Variant* last = nullptr;
  for (const Variant& v : registry())
    if (v.chapter == chapter) {
      if (v.best) return &v;
      last = &v;
    }
  return last;
}

}  // namespace attn
