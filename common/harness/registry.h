// registry.h: every variant of every chapter, in one list. A chapter registers its variants from
// its own variants.cpp; chapter binaries, tests and benchmarks iterate the list, so a new chapter
// needs no change anywhere else.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "device.h"
#include "kernels/params.h"
#include "problem.h"
#include "timing.h"

namespace attn {

// The head dims a variant supports: a range (every d in [min, max] that is a multiple of
// `multiple`), or a list.
struct HeadDims {
  int min = 1, max = 256, multiple = 1;
  std::vector<int> list;  // when not empty, exactly these
  bool contains(int d) const;
  std::string describe() const;  // "1..256", "32, 64, 96, 128"
};

struct Variant {
  std::string chapter;      // "01_naive_attention"
  std::string name;         // "naive"; unique across chapters
  std::vector<std::string> formerly;  // names it had before a chapter was recut; still accepted
  std::string description;  // one line
  std::vector<DType> dtypes = {DType::fp32, DType::fp16, DType::bf16};
  HeadDims head_dims;
  bool causal = true;       // both alignments of is_causal
  bool mask = true;         // boolean and additive attn_mask
  std::vector<ModKind> mask_mods;  // chapter 10's mask_mod rules it takes (Problem::mod), none aside
  bool needs_mask_mod = false;     // and it runs only problems with one of them
  bool score_mod = false;   // chapter 10's score mods (Problem::softcap, alibi)
  bool writes_lse = false;  // fills AttentionParams::lse
  long long max_heads = 0;  // B * H the grid can hold (a grid's y dimension: 65535); 0: any
  bool best = false;        // the chapter's best variant: the one the tour runs
  // What it asks of the GPU: the compute capability its instructions need (80: cp.async, mma.sync
  // m16n8k16, bf16 mma; 75: nothing past the oldest GPU the book builds for), whether its code is
  // built for sm_90a alone (wgmma, setmaxnreg: sm_90 GPUs only), and the shared memory one block of
  // its kernels asks for on p, static and dynamic together (the most of any of its kernels).
  int min_cc = 75;
  bool sm90a = false;
  std::function<size_t(const Problem&)> smem_bytes = [](const Problem&) { return size_t{0}; };
  // Cost model: scratch memory (the N x N buffers of chapter 01...) and HBM bytes moved.
  std::function<size_t(const Problem&)> workspace_bytes = [](const Problem&) { return size_t{0}; };
  std::function<double(const Problem&)> hbm_bytes;
  // How the emulator copes with it: multiply-adds per second of emulation on one core, to refuse
  // problems that would take more than the CPU time budget.
  double cpu_flops_per_second = 2e8;
  // The rows of a group when a profile emulates a few groups of rows (model/sampling.h): a multiple
  // of 256 and of its blocks' rows (chapter 09's step h: 192 at d = 64); none: sampling.h's kRowGroup.
  std::function<int(const Problem&)> row_group;
  // A persistent kernel's work items (chapter 09's step i: its Q tiles, of every head), which its
  // blocks, one per SM, walk between them; none: a block per item.
  std::function<long long(const Problem&)> work_items;
  // Anything worth printing about how the variant handles this problem ("Br=64 Bc=64").
  std::function<std::string(const Problem&)> plan;
  // Launches the kernels, through stages.run().
  std::function<void(const AttentionParams&, Stages&)> run;

  // Why the variant cannot run `p` ("" if it can): dtype, head dim, features, and what it needs of
  // the device (this build's code for it, its compute capability, its shared memory per block), in
  // the device's terms. The first form asks about the device at hand (on the cpu backend: the GPU
  // the emulator stands for; on a gpu build without a usable GPU it leaves the device part out).
  std::string unsupported(const Problem& p) const;
  std::string unsupported(const Problem& p, const DeviceInfo& dev) const;
  // The device part alone: "" when dev can run the variant's kernels on p.
  std::string unfit(const Problem& p, const DeviceInfo& dev) const;
  // The rest: dtype, head dim, is_causal, attn_mask, heads.
  std::string unsupported_features(const Problem& p) const;
  std::string supports() const;  // "fp32, fp16, bf16; d 1..256; causal, masks"
  bool answers_to(const std::string& n) const;  // its name or a former one
  // The bytes its cost model moves on p (hbm_bytes), or Q, K, V read and O written once without one.
  double bytes_moved(const Problem& p) const { return hbm_bytes ? hbm_bytes(p) : p.qkvo_bytes(); }
};

// "variant X needs N B of shared memory per block at d = ... ; <the GPU> allows M", or "" when it fits.
std::string smem_refusal(const std::string& variant, size_t need, int d, DType t, const DeviceInfo& dev);

std::vector<Variant>& registry();
// (chapter, name) of the variants only nvcc builds: a chapter's GPU_KERNELS (cmake/Chapter.cmake),
// each file named after its variant. The gpu backend registers them; the cpu build knows their
// names only, so that asking for one says it needs a GPU.
std::vector<std::pair<std::string, std::string>> gpu_only_variants();
const Variant* find_variant(const std::string& name);
std::vector<std::string> chapters();  // in order
const Variant* best_of(const std::string& chapter);
// The chapter's best variant if it runs p on the device at hand, else its most advanced step that
// does (the last registered); nullptr when none does.
const Variant* runnable_step(const std::string& chapter, const Problem& p);

// At namespace scope in a chapter's variants.cpp:  static attn::Register r({...});
struct Register {
  explicit Register(Variant v);
};

}  // namespace attn
