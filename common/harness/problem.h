// problem.h: one attention problem, its seeded inputs, and the counts the cost models use.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dtype.h"
#include "kernels/params.h"

namespace attn {

struct Problem {
  int B = 1, H = 2, Lq = 128, Lk = 128, d = 64;
  DType dtype = DType::fp16;
  std::optional<double> scale_override;  // default 1/sqrt(d), as torch
  Causal causal = Causal::none;
  MaskKind mask = MaskKind::none;
  bool mask_per_head = false;  // [B, H, Lq, Lk] instead of one [Lq, Lk] for every (batch, head)
  // Chapter 10's mask_mod (params.h says what each kind means): the window or prefix it takes, or
  // a window's sides (FlashAttention-2's window_size, -1 unbounded; window's, and varlen_window's in
  // each sequence); random_blocks' draw comes from the seed, and so do a document pattern's lengths
  // unless doc_lengths gives them (in order, adding up to max(Lq, Lk): FlexAttention's document ids).
  ModKind mod = ModKind::none;
  int window = 0, prefix = 0;
  int left = -1, right = -1;
  std::vector<int> doc_lengths;
  // Chapter 10's block mask given by the user (mod blocks, params.h): FlexAttention's BlockMask as its
  // lists (BlockMask.from_kv_blocks), blocks of block_q queries by block_kv keys: for Q block r,
  // kv_num_blocks[r] partial K/V blocks and full_kv_num_blocks[r] whole ones (the full lists may be
  // absent, as there), their indices the rows' listed entries end to end (FlexAttention's
  // kv_indices[r, :kv_num_blocks[r]] for r = 0, 1, ...: its rows without their padding). One set for
  // every (batch, head); its blocks' pairs are what a query sees (FlexAttention's noop_mask on the
  // partial ones).
  struct BlockLists {
    int block_q = 0, block_kv = 0;
    std::vector<int> kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices;
    // Their words (the mods column's and --block-mask's, FlexAttention's names): block_size= (Q,KV),
    // then list(1) to list(4) in the fields' order; the first three every block mask names, the full
    // pair both or neither.
    static constexpr const char* kWords[] = {"block_size", "kv_num_blocks", "kv_indices", "full_kv_num_blocks",
                                             "full_kv_indices"};
    std::vector<int>& list(int w) { return *std::array{&kv_num_blocks, &kv_indices, &full_kv_num_blocks, &full_kv_indices}[w - 1]; }
    const std::vector<int>& list(int w) const { return const_cast<BlockLists*>(this)->list(w); }
  };
  BlockLists blocks;
  // ceil(Lq / block_q), ceil(Lk / block_kv), without the sum that would pass an int; 0 without blocks.
  int q_blocks() const { return blocks.block_q > 0 ? Lq / blocks.block_q + (Lq % blocks.block_q != 0) : 0; }
  int kv_blocks() const { return blocks.block_kv > 0 ? Lk / blocks.block_kv + (Lk % blocks.block_kv != 0) : 0; }
  // Chapter 10's packed batch (mod varlen or varlen_window, params.h): each sequence's queries and keys, the
  // differences of flash_attn_varlen_func's cu_seqlens_q and cu_seqlens_k. Lq and Lk are their sums
  // and B is 1: the sequences are the batch.
  std::vector<int> seqlens_q, seqlens_k;
  // K and V's heads (grouped-query attention: torch's enable_gqa, flash_attn_varlen_func's), 0 for H:
  // a divisor of H, query head h reading K/V head h / (H / Hkv). Read by a packed batch's kernel.
  int Hkv = 0;
  // Chapter 10's score mods (params.h): FlashAttention-2's softcap (0: none) and ALiBi's biases, with
  // the user's slopes when given (FlashAttention-2's alibi_slopes: H of them, one per head, or
  // slope_batches() x H, batch-major; they set alibi), else params.h's alibi_slope(h, H).
  float softcap = 0.f;
  bool alibi = false;
  std::vector<float> alibi_slopes;
  uint64_t seed = 1;

  float scale() const;
  // Throws UsageError for sizes no chapter can run (non-positive; so large that byte counts would
  // overflow), causal with a mask (torch refuses it too), a scale that is not a finite number or
  // with which the scores would overflow fp32.
  void validate() const;
  void validate_packing() const;  // validate()'s rules of a packed batch (mod varlen, varlen_window)
  void validate_blocks() const;   // validate()'s rules of a given block mask (mod blocks)
  // Makes this a packed batch of these query and key lengths: mod varlen (varlen_window if it was
  // window: its sides then hold in each sequence), Lq and Lk their sums. Throws UsageError when a sum
  // passes an int or the problem has another mask_mod (its rule would be lost); validate() checks the
  // rest.
  void pack(std::vector<int> q, std::vector<int> k);
  bool packed() const { return is_packed(mod); }
  bool windowed() const { return mod == ModKind::window || mod == ModKind::varlen_window; }  // left, right hold
  bool reads_table() const { return reads_documents(mod) || packed() || mod == ModKind::blocks; }  // mod_table() is not empty
  // Documents with is_causal: FlexAttention's and_masks(causal_mask, document_mask), the rule
  // document_causal, whose diagonal is top-left (both indices are positions of one table). Folds
  // is_causal into the rule and returns true; false (nothing changed) for a bottom-right diagonal
  // where Lq != Lk, which no rule here has. Other problems: nothing to fold, true.
  bool fold_causal_documents();
  std::string describe() const;  // "B=1 H=2 Lq=128 Lk=128 d=64 fp16 causal(top-left)"
  // Chapter 10's settings, whole, as the results CSV's `mods` column names them (results/README.md):
  // "none", or space-separated key=value words ("mask_mod=window window=1024,0 softcap=50 alibi",
  // "mask_mod=varlen seqlens=100,37 seqlens_k=90,40 kv_heads=2", "alibi_slopes=0.5,0.25"): with B, H,
  // Lq, Lk, d, dtype, causal and mask, they make two rows the same problem.
  std::string mods() const;
  // The other way: sets chapter 10's settings from mods()'s words (a results CSV's column, the C API's
  // fs_problem::mods), so that mods() then gives them back; a packed batch's lengths set Lq and Lk
  // (pack()). Throws UsageError for a word it does not know, one given twice, a number that does not
  // parse, or an argument of another kind's (prefix= without mask_mod=prefix_lm); validate() checks
  // the rest.
  void apply_mods(const std::string& words);
  bool score_mod() const { return softcap > 0.f || alibi; }
  const char* score_name() const {  // "softcap", "alibi", "softcap+alibi"; null without one
    return softcap > 0.f ? (alibi ? "softcap+alibi" : "softcap") : alibi ? "alibi" : nullptr;
  }
  // The offset of query i's diagonal, aligned bottom-right as ALiBi's distance and FlashAttention's
  // window take it: key j is on it when j = i + offset. Lk - Lq, or in a packed batch i's sequence's
  // (its last query's diagonal through its last key).
  int diagonal_offset(int i) const;
  // The score of query i and key j of head h after the score mods, from the scaled score x (double,
  // the reference's; params.h's definitions); offset: diagonal_offset(i).
  double score_at(int b, int h, int i, int j, double x, int offset) const;
  // ALiBi's slope of head h of batch b (in a packed batch, of sequence b): the user's, or alibi_slope(h, H).
  float slope(int b, int h) const;
  // The batches ALiBi's slopes may be given per: B, or a packed batch's sequences (FlashAttention-2's
  // varlen alibi_slopes is (batch_size, nheads), its sequences the batch).
  int slope_batches() const { return packed() ? static_cast<int>(seqlens_q.size()) : B; }
  int sequence_of(int i) const;  // a packed batch's sequence of query i: the last that starts at or before it

  int kv_heads() const { return Hkv > 0 ? Hkv : H; }
  int kv_head(int h) const { return h / (H / kv_heads()); }
  size_t q_elems() const { return static_cast<size_t>(B) * H * Lq * d; }
  size_t kv_elems() const { return static_cast<size_t>(B) * kv_heads() * Lk * d; }
  // Where head (b, h)'s [Lq][d] of Q (and O) and its [Lk][d] of K and V start, in elements.
  size_t q_offset(int b, int h) const { return (static_cast<size_t>(b) * H + h) * Lq * d; }
  size_t kv_offset(int b, int h) const { return (static_cast<size_t>(b) * kv_heads() + kv_head(h)) * Lk * d; }
  size_t heads() const { return static_cast<size_t>(B) * H; }
  size_t mask_elems() const;
  size_t mask_bytes() const;
  // (query, key) pairs per head that is_causal or the mask_mod leaves visible (all Lq*Lk without).
  long long visible_pairs() const;
  // The keys query row i sees under is_causal or the mask_mod, as runs [lo, hi) in order (doc:
  // mod_table()). The same rules as mask_mod.h's, in closed form.
  void visible_runs(int i, const std::vector<int>& doc, std::vector<std::pair<int, int>>& runs) const;
  // A document pattern's document of each position, max(Lq, Lk) of them: doc_lengths's lengths,
  // else seeded lengths from 1 to a third of the sequence. Empty for other problems.
  std::vector<int> documents() const;
  // A packed batch's cu_seqlens_q then cu_seqlens_k (each n + 1 offsets from 0); empty for others.
  std::vector<int> cu_seqlens() const;
  // The table the mask_mod's rule reads (params.h: MaskMod::doc): documents(), or cu_seqlens() and
  // for varlen_window the window's sides after them, or the given block mask's classes (blocks).
  std::vector<int> mod_table() const;
  // What the kernels read from the device beside the tensors: mod_table(), then the user's ALiBi
  // slopes for every (batch, head), slope_batches() x H floats' bits (params.h: given_slopes). Empty
  // when there is neither; the C API's fs_mod_table gives it.
  std::vector<int> kernel_table() const;
  std::vector<int> kernel_table(std::vector<int> rule_table) const;  // the same after a mod_table() already built
  size_t mod_table_size() const;     // mod_table().size(), without building it
  size_t kernel_table_size() const;  // kernel_table().size(), without building it
  // The mask_mod's rule as the kernels see it (doc: mod_table()'s, or null).
  MaskMod mask_mod(const int* doc) const;
  // The convention of every peer: 4 * B * H * d * (visible pairs); softmax not counted.
  double flops() const;
  // Bytes of Q, K, V read and O written once: the least any variant moves.
  double qkvo_bytes() const;
  // FlashAttention-2's loop: Q read and O written once, K and V once per Q tile of Br rows.
  double fa2_bytes(int Br) const;
  // The same pass when it visits `pairs` (Q tile, K/V tile) pairs per head, K/V tiles of Bc keys
  // (chapter 06's skipping): Q read and O written once, a K and a V tile per pair.
  double fa2_bytes_visited(long long pairs, int Bc) const;
};

const char* causal_name(Causal c);
const char* mask_name(MaskKind m);
const char* mod_name(ModKind m);  // "sliding_window"
// Every kind of mask_mod named on the command line, none first: its names and the variants' lists.
// varlen and varlen_window are not among them: --seqlens gives them, with the sequences' lengths
// (and --mask-mod window its sides).
inline constexpr ModKind kModKinds[] = {ModKind::none,          ModKind::sliding_window,  ModKind::prefix_lm,
                                        ModKind::document,      ModKind::document_causal, ModKind::random_blocks,
                                        ModKind::window,        ModKind::blocks};

// Seeded values with mean 0 and variance 1, fast enough for GPU-sized inputs (hundreds of millions
// of elements): the sum of four uniform 16-bit draws from one splitmix64 output, centred and
// scaled (Irwin-Hall, a bell curve bounded by +-3.46 that serves here as well as a normal one).
struct Bell {
  uint64_t state;
  // The draws of one stream (Q, K, V: 1; decoding's: 3) of a problem's seed.
  static Bell of(uint64_t seed, uint64_t stream) { return Bell{seed * 0x2545F4914F6CDD1Dull + stream}; }
  float operator()() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float sum = static_cast<float>((z & 0xFFFF) + (z >> 16 & 0xFFFF) + (z >> 32 & 0xFFFF) + (z >> 48));
    return (sum / 65536.0f - 2.0f) * 1.7320508f;  // 4 uniforms: mean 2, variance 1/3; |x| <= kInputBound
  }
  // x as n draws, each rounded to the dtype: what a kernel of that dtype reads, as floats.
  void fill(std::vector<float>& x, size_t n, DType t) {
    x.resize(n);
    for (float& e : x) e = round_to(t, (*this)());
  }
};

// Seeded inputs. Q, K, V have mean 0 and variance 1 (Bell), rounded to
// the problem's dtype and kept as float: the reference then sees exactly what the kernel sees.
// No element is larger than kInputBound in magnitude.
constexpr double kInputBound = 3.4641017;  // 2 * sqrt(3)
// A UsageError for a scale that is not a finite number, or one that lets scores of such inputs at
// head dim d overflow fp32, in which every kernel computes them (the forward's and decoding's).
void check_scale(double scale, int d);
struct Inputs {
  std::vector<float> q, k, v;
  std::vector<uint8_t> mask_bool;   // boolean mask: some keys off, some rows wholly off
  std::vector<float> mask_add;      // additive mask: values in [-2, 2], some -inf, some rows all -inf
  std::vector<int> doc;             // the table a mask_mod's rule reads (Problem::mod_table)
  static Inputs generate(const Problem& p);
  // The mask entry of (b, h, i, j), as an addition to the score (-inf: masked), from attn_mask or
  // the mask_mod; 0 without either.
  float mask_at(const Problem& p, int b, int h, int i, int j) const;
};

}  // namespace attn
