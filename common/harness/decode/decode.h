// decode/decode.h: decoding (chapter 08): its problem, inputs, reference check, variants and runner.
//
// A decoding step is another operation than the forward of chapters 01 to 06: a few new query
// tokens per sequence against a KV cache of per-sequence length, paged or not, with fewer KV heads
// than query heads, and the new tokens' K and V appended to the cache in place. Its variants stay
// out of the forward registry (as chapter 07's backward does); `flashsteps decode`, the chapter's
// binary and tests/test_decode.cpp iterate this list. The check: each sequence is the forward
// problem of its own length, with the KV heads repeated (enable_gqa) and causal aligned
// bottom-right, against the forward's fp64 reference (reference.h).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/registry.h"
#include "harness/runner.h"
#include "kernels/decode_params.h"

namespace attn {

struct DecodeProblem {
  int B = 1, Hq = 32, Hkv = 8, d = 128;
  int Lq = 1;                       // new tokens per sequence
  std::vector<int> cache_lens{1000};  // keys in each sequence's cache before the append; one value: every sequence's
  int capacity = 0;                 // keys a sequence's cache holds; 0: the fewest whole pages that hold the longest
  bool paged = false;               // a pool of pages and a block table; else [B, capacity, Hkv, d]
  int page_size = 16;               // when paged
  bool append = true;               // the new tokens' K and V are written into the cache first
  bool causal = false;              // bottom-right aligned (FlashAttention's); matters when Lq > 1
  int splits = 0;                   // of the keys, for the variants that split them; 0: their heuristic
  DType dtype = DType::fp16;
  std::optional<double> scale_override;
  uint64_t seed = 1;

  int cache_len(int b) const { return cache_lens.size() == 1 ? cache_lens[0] : cache_lens[b]; }
  int keys(int b) const { return cache_len(b) + (append ? Lq : 0); }  // keys sequence b attends over
  int max_keys() const;
  int group() const { return Hq / Hkv; }
  int resolved_capacity() const;  // capacity, or the default
  int page() const { return paged ? page_size : resolved_capacity(); }
  int max_pages() const { return (resolved_capacity() + page() - 1) / page(); }
  // Pages in the pool: every sequence's, and as many more that no sequence uses (poisoned: a kernel
  // that reads a page it was not given fails the check).
  int pool_pages() const { return paged ? 2 * B * max_pages() : B; }
  float scale() const;
  // Throws UsageError, before any work, for what cannot run: sizes below 1, Hq not a multiple of
  // Hkv, a page size below 1, a length below 0 or above the capacity (with the append), a list of
  // lengths of another size than B, splits outside 0..128, sizes whose byte counts overflow.
  void validate() const;
  std::string describe() const;  // "B=1 Hq=32 Hkv=8 d=128 new=1 cache=1000 pages of 16 fp16"
  // Query-key pairs each query head sees, over every sequence (causal removes some when Lq > 1).
  double visible_pairs() const;
  double flops() const;        // 4 * d * Hq * visible pairs: the forward's convention
  double cache_bytes() const;  // K and V of every key attended, once: the least a decoding step reads
  double min_bytes() const;    // that, Q read, O written, and the new K, V read and written once
  // Sequence b as a forward problem (Lq new tokens against keys(b) keys, Hq heads), for the reference.
  Problem forward(int b) const;
};

struct DecodeInputs {
  std::vector<float> q;             // [B, Lq, Hq, d], rounded to the dtype
  std::vector<float> k_new, v_new;  // [B, Lq, Hkv, d] (empty without append)
  std::vector<float> k_pool, v_pool;  // [pool pages, page, Hkv, d]: NaN where no key lives yet
  std::vector<int> block_table;     // [B, max_pages]: a seeded permutation of pages when paged
  std::vector<int> cache_seqlens;   // [B]
  static DecodeInputs generate(const DecodeProblem& p);
  // The pool after the append, as a kernel must leave it.
  void appended(const DecodeProblem& p, std::vector<float>& k, std::vector<float>& v) const;
};
// Throws UsageError unless the inputs fit the problem: sizes, lengths within 0..capacity (with the
// append), every block-table entry a sequence uses a page of the pool (the entries past its keys
// are never read) and no page given to two sequences.
void check_decode_inputs(const DecodeProblem& p, const DecodeInputs& in);

// The blocks per SM the split heuristic fills unless a variant says otherwise (steps c to g): one
// block's loads in flight while another computes.
inline constexpr int kSplitBlocksPerSm = 2;

struct DecodeVariant {
  // What a forward Variant says of itself: chapter, name, description, dtypes, head dims, best,
  // cpu_flops_per_second. Its run, workspace and byte models stay empty: those below take a
  // DecodeProblem and the split count.
  Variant info;
  bool paged = false;   // reads a paged cache (a variant without refuses one)
  bool splits = false;  // splits each sequence's keys across blocks (--splits); else always 1
  // The query rows of one KV head that one block holds (the chapter's rule; 1: a block per row): the
  // unsplit grid is B x Hkv x ceil(g x Lq / rows) blocks.
  std::function<int(const DecodeProblem&)> rows_per_block = [](const DecodeProblem&) { return 1; };
  // The blocks of its attention kernel the split heuristic fills on each SM: two for steps c to g
  // (whatever their registers allow, two to seven); steps h and i's, which their kernel is held
  // to (decoding.h's occupancy_blocks).
  std::function<int(const DecodeProblem&)> blocks_per_sm = [](const DecodeProblem&) { return kSplitBlocksPerSm; };
  std::string per_sequence_stage;  // a stage that launches its kernels once per sequence (a profile's sampling)
  std::function<size_t(const DecodeProblem&, int splits)> workspace_bytes = [](const DecodeProblem&, int) {
    return size_t{0};
  };
  std::function<double(const DecodeProblem&, int splits)> hbm_bytes;  // what its kernels move, by its cost model
  std::function<std::string(const DecodeProblem&, int splits)> plan;   // "2 rows per block, 33 splits"
  // The shared memory one block of its kernels asks for, static and dynamic (the most of any); with
  // info's compute capability, what unsupported() holds against the device.
  std::function<size_t(const DecodeProblem&)> smem_bytes = [](const DecodeProblem&) { return size_t{0}; };
  std::function<void(const DecodeParams&, Stages&)> run;
  std::string unsupported(const DecodeProblem& p) const;  // "" when it runs p
  int splits_for(const DecodeProblem& p) const;           // p.splits, or the heuristic's, or 1
};

std::vector<DecodeVariant>& decode_registry();
const DecodeVariant* find_decode(const std::string& name);
const DecodeVariant* best_decode();  // the chapter's best (Variant::best), nullptr if none is
struct RegisterDecode {
  explicit RegisterDecode(DecodeVariant v);
};

// Flash-Decoding's split count (chapter 08's note explains it): the fewest splits (1: none) that
// give the grid about `per_sm` blocks per SM (90 % of per_sm x SMs; two: one block's loads in flight
// while another computes), none where the unsplit grid has them, or up to twice as many when they
// fill the last round better (blocks x splits / (per_sm x SMs x rounds)); no split shorter than
// kMinSplitKeys keys, and at most 128.
inline constexpr int kMinSplitKeys = 256;
int split_heuristic(long long blocks, int max_keys, int sms, int per_sm = kSplitBlocksPerSm);
// The SMs the heuristic fills: the GPU's, or on the emulator the SMs of the GPU it stands for (an
// H100's 132 unless --gpu), or with no GPU at hand the H100's.
int decode_sms();

// The reference of one problem, computed once for every variant: every sequence (a large problem:
// the first, the last and two seeded ones), every new token, every query head (a large problem: four).
class DecodeChecker {
 public:
  DecodeChecker(const DecodeProblem& p, const DecodeInputs& in, const RunOptions& o);
  // out: the whole O [B, Lq, Hq, d]; k, v: the whole pool after the run, which must equal the
  // inputs' pool with the new tokens appended, bit for bit, everywhere.
  Verdict check(const std::vector<float>& out, const std::vector<float>& k, const std::vector<float>& v) const;
  size_t sequences_checked() const { return seqs_.size(); }
  const std::vector<int>& heads_checked() const { return heads_; }

 private:
  struct Sequence {
    int b;
    Problem fwd;
    Selection sel;
    Expected ref;
    std::vector<double> naive;
  };
  DecodeProblem p_;
  std::vector<int> heads_;
  std::vector<Sequence> seqs_;
  std::vector<float> k_after_, v_after_;
};

// The inputs on the device, uploaded once; the pool is re-uploaded before each variant so that
// every variant appends to the cache as the inputs left it.
struct DecodeDevice {
  DeviceBuffer q, k_new, v_new, k_pool, v_pool, table, lens;
  DecodeDevice(const DecodeProblem& p, const DecodeInputs& in);
  void reset_pool(const DecodeProblem& p, const DecodeInputs& in);
};
// The params of v on p: the block table for a variant that reads one (step e; on an unpaged problem
// the identity table, one page per sequence, so that its row shows what reading a table costs),
// none for the others (steps b to d refuse one: decode_params.h).
DecodeParams decode_params(const DecodeVariant& v, const DecodeProblem& p, const DecodeDevice& dev,
                           const std::vector<int>& host_lens);
// The same with every address at `at` and the lengths on the host (a dry run's: simt's counters).
DecodeParams decode_params(const DecodeVariant& v, const DecodeProblem& p, void* at, const std::vector<int>& host_lens);

// Throws UsageError when v cannot run p (naming why), needs more memory than is free, or would take
// the emulator longer than its budget.
void check_decode_runnable(const DecodeVariant& v, const DecodeProblem& p, const RunOptions& o);
// Runs v with poisoned output and workspace (NaN), times it, checks O and the cache; `output`, when
// given, receives O [B, Lq, Hq, d].
Result run_decode(const DecodeVariant& v, const DecodeProblem& p, DecodeDevice& dev, const DecodeInputs& in,
                  const DecodeChecker& checker, const RunOptions& o, std::vector<float>* output = nullptr);

// One variant modelled with the emulator's counters (a counters build: profile.h). When `sample`
// and every sequence has one length, only KV head 0 of the first sequence is emulated (with its
// query heads), with the split count of the whole problem, and its counts times Hkv x B stand for
// all: the heads and sequences run the same blocks at the same offsets of their own rows and
// pages, and a dry run of the whole problem gives its grids. The others go unchecked. Inputs made,
// checked and uploaded here.
class Profiler;
struct Profile;
bool decode_sampled(const DecodeProblem& p);  // what `sample` does to p: whether it emulates a part
DecodeProblem decode_emulated(const DecodeProblem& p, bool sample);  // what is emulated: p, or KV head 0 of sequence 0
// Whether a profile samples by default (`flashsteps decode --profile`, the tour's decoding line): sequences
// of one length, and a cache of more than 16 MB, whose whole emulation would take a while.
bool decode_profile_sampled(const DecodeProblem& p);
const Profile& profile_decode(Profiler& profiler, const DecodeVariant& v, const DecodeProblem& p, bool sample,
                              const RunOptions& o, bool details = true);

}  // namespace attn
