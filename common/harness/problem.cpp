#include "problem.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "errors.h"
#include "kernels/mask_mod.h"

namespace attn {

float Problem::scale() const {
  return static_cast<float>(scale_override ? *scale_override : 1.0 / std::sqrt(static_cast<double>(d)));
}

void Problem::validate() const {
  auto positive = [](const char* what, long long v) {
    if (v < 1) throw UsageError(std::string(what) + " must be at least 1 (got " + std::to_string(v) + ")");
  };
  positive("batch (B)", B);
  positive("heads (H)", H);
  positive("query length (Lq)", Lq);
  positive("key length (Lk)", Lk);
  positive("head dim (d)", d);
  if (causal != Causal::none && mask != MaskKind::none)
    throw UsageError("is_causal and an attn_mask cannot be combined (torch refuses it too): choose one");
  if (Hkv < 0 || Hkv > H || H % kv_heads() != 0)
    throw UsageError("K and V's heads (Hkv = " + std::to_string(Hkv) + ") must divide the query heads (H = " +
                     std::to_string(H) + "): each K/V head serves H / Hkv query heads");
  if (H / kv_heads() > std::numeric_limits<uint16_t>::max())  // params.h: MaskMod::heads_per_kv
    throw UsageError("H / Hkv = " + std::to_string(H / kv_heads()) + " query heads per K/V head: at most " +
                     std::to_string(std::numeric_limits<uint16_t>::max()));
  if (kv_heads() != H && !packed())
    throw UsageError("K/V heads shared by query heads (Hkv = " + std::to_string(Hkv) + " < H = " + std::to_string(H) +
                     ") are read by chapter 10's packed batches only: give the sequences' lengths (--seqlens)");
  if (packed()) validate_packing();
  const BlockLists& bl = blocks;
  const bool listed = bl.block_q || bl.block_kv || !bl.kv_num_blocks.empty() || !bl.kv_indices.empty() ||
                      !bl.full_kv_num_blocks.empty() || !bl.full_kv_indices.empty();
  if (listed && mod != ModKind::blocks)
    throw UsageError(std::string("a block mask's lists are mask_mod blocks' (got mask_mod ") + mod_name(mod) + ")");
  if (mod == ModKind::blocks) validate_blocks();
  if (mod != ModKind::none && mod != ModKind::varlen && (causal != Causal::none || mask != MaskKind::none))
    throw UsageError(std::string("a mask_mod (") + mod_name(mod) + ") is the whole mask: it takes neither is_causal nor "
                     "an attn_mask (sliding_window, prefix_lm and document_causal are causal already)" +
                     (mod == ModKind::document && causal != Causal::none ? ": causal documents are --mask-mod document_causal, whose diagonal is top-left" : ""));
  if (mod == ModKind::sliding_window && window < 0)
    throw UsageError("the sliding window must be at least 0 keys before the query (got " + std::to_string(window) + ")");
  if (!(softcap >= 0.f) || !std::isfinite(softcap))
    throw UsageError("the softcap must be a finite number >= 0 (0: no cap; got " + std::to_string(softcap) + ")");
  if (!alibi_slopes.empty()) {
    // FlashAttention-2's alibi_slopes: (nheads,) or (batch, nheads), fp32.
    const size_t per_batch = static_cast<size_t>(slope_batches()) * H;
    if (alibi_slopes.size() != static_cast<size_t>(H) && alibi_slopes.size() != per_batch)
      throw UsageError("ALiBi's slopes are one per head, H = " + std::to_string(H) +
                       (per_batch != static_cast<size_t>(H) ? std::string(" (or ") + (packed() ? "sequences" : "B") + " x H = " + std::to_string(per_batch) + ")" : "") +
                       " of them, as FlashAttention-2's alibi_slopes: got " + std::to_string(alibi_slopes.size()));
    if (!alibi) throw UsageError("ALiBi's slopes are given without ALiBi");  // the command line and mods set both
    // The kernels compute slope * |distance| in fp32, the distance at most Lq + Lk, then * log2(e).
    const double largest = static_cast<double>(std::numeric_limits<float>::max()) / (1.4427 * (static_cast<double>(Lq) + Lk));
    for (float s : alibi_slopes)
      if (!std::isfinite(s) || std::fabs(s) > largest) {
        std::ostringstream m;
        m << "an ALiBi slope must be a finite number of magnitude at most " << largest << ", with which slope * distance "
          << "(up to Lq + Lk = " << static_cast<long long>(Lq) + Lk << ") stays in fp32 (got " << s << ")";
        throw UsageError(m.str());
      }
  }
  if (score_mod() && mask != MaskKind::none)
    throw UsageError("a score_mod (softcap, alibi) takes no attn_mask: chapter 10's kernels take the mask as a rule (--mask-mod)");
  if (windowed() && (left < -1 || right < -1))
    throw UsageError("a window's sides are keys before and after the diagonal, -1 for unbounded (got " +
                     std::to_string(left) + ", " + std::to_string(right) + ")");
  if (mod == ModKind::prefix_lm && prefix < 0)
    throw UsageError("the prefix must be at least 0 keys long (got " + std::to_string(prefix) + ")");
  if (!doc_lengths.empty()) {
    if (!reads_documents(mod))
      throw UsageError(std::string("documents' lengths are the document and document_causal mask_mods' (got mask_mod ") +
                       mod_name(mod) + ")");
    long long sum = 0;
    for (int n : doc_lengths) {
      if (n < 1) throw UsageError("a document is at least 1 position long (got " + std::to_string(n) + ")");
      sum += n;
    }
    if (sum != std::max(Lq, Lk))
      throw UsageError("the documents' lengths add up to " + std::to_string(sum) + ", not max(Lq, Lk) = " +
                       std::to_string(std::max(Lq, Lk)) + ": every position is in one document");
  }
  // Byte counts are size_t products and the cost models doubles: 2^56 elements (of 8 bytes at
  // most) keeps both exact. Far beyond any device: 2^56 pairs are hours of work at d = 64 for a
  // GPU that does 10^15 FLOP/s.
  const double pairs = static_cast<double>(B) * H * Lq * Lk, elems = static_cast<double>(B) * H * std::max(Lq, Lk) * d;
  const double most = std::ldexp(1.0, 56);
  if (pairs > most || elems > most) {
    std::ostringstream s;
    s << "the problem is too large: B*H*Lq*Lk = " << pairs << " (query, key) pairs and B*H*max(Lq, Lk)*d = " << elems
      << " elements; at most 2^56 = " << most << " of each keep every byte count exact (and no GPU runs that in minutes)";
    throw UsageError(s.str());
  }
  // The kernels number heads (and rows within a head) with 32-bit ints, as FlashAttention does.
  if (static_cast<long long>(B) * H > std::numeric_limits<int>::max())
    throw UsageError("B*H = " + std::to_string(static_cast<long long>(B) * H) + " heads: the kernels number them with "
                     "32-bit ints, so at most " + std::to_string(std::numeric_limits<int>::max()));
  if (scale_override) check_scale(*scale_override, d);
}

void check_scale(double s, int d) {
  if (!std::isfinite(s)) throw UsageError(std::string("the scale must be a finite number, not ") + (std::isnan(s) ? "nan" : "inf"));
  // |scale * q.k| <= |scale| * d * kInputBound^2, times log2(e) in the exp2 variants: in fp32.
  const double largest = static_cast<double>(std::numeric_limits<float>::max()) / (d * kInputBound * kInputBound * 1.4427);
  if (std::fabs(s) > largest) {
    std::ostringstream m;
    m << "the scale " << s << " would let scores (|scale| * q.k, up to |scale| * " << d * kInputBound * kInputBound
      << " at d = " << d << ") overflow fp32, in which every kernel computes them: |scale| must be at most " << largest;
    throw UsageError(m.str());
  }
}

// FlexAttention's BlockMask, as its lists: the shape (a count per Q block, as many indices as the
// counts add up to), each count and index within the K/V blocks, each block listed once in its row.
void Problem::validate_blocks() const {
  const BlockLists& m = blocks;
  if (m.block_q < 1 || m.block_kv < 1)
    throw UsageError("a block mask's blocks are at least 1 query by 1 key (block_size " + std::to_string(m.block_q) + "," +
                     std::to_string(m.block_kv) + "; FlexAttention's BLOCK_SIZE)");
  const long long qb = q_blocks(), kb = kv_blocks();
  if (qb * kb > (1LL << 24))
    throw UsageError("a block mask of " + std::to_string(qb) + " x " + std::to_string(kb) + " blocks: at most 2^24 (the kernels' "
                     "table holds 4 bytes a block): give larger blocks");
  // Each list: its shape, its counts and its indices in range.
  auto check = [&](const char* counts_name, const std::vector<int>& counts, const char* indices_name, const std::vector<int>& indices) {
    if (counts.size() != static_cast<size_t>(qb))
      throw UsageError(std::string("a block mask's ") + counts_name + " has " + std::to_string(counts.size()) +
                       " entries: one per Q block, ceil(Lq / block_q) = " + std::to_string(qb));
    long long listed = 0;
    for (long long r = 0; r < qb; ++r) {
      const int n = counts[static_cast<size_t>(r)];
      if (n < 0 || n > kb)
        throw UsageError(std::string("a block mask's ") + counts_name + "[" + std::to_string(r) + "] = " + std::to_string(n) +
                         ": a Q block lists 0 to ceil(Lk / block_kv) = " + std::to_string(kb) + " K/V blocks");
      listed += n;
    }
    if (indices.size() != static_cast<size_t>(listed))
      throw UsageError(std::string("a block mask's ") + indices_name + " has " + std::to_string(indices.size()) + " entries, not the " +
                       std::to_string(listed) + " its counts list (each Q block's listed K/V blocks, end to end)");
    size_t at = 0;
    for (long long r = 0; r < qb; ++r)
      for (int k = 0; k < counts[static_cast<size_t>(r)]; ++k, ++at)
        if (const int c = indices[at]; c < 0 || c >= kb)
          throw UsageError(std::string("a block mask's ") + indices_name + " lists K/V block " + std::to_string(c) + " for Q block " +
                           std::to_string(r) + ": out of range, the K/V blocks are 0 to " + std::to_string(kb - 1));
  };
  const bool full = !m.full_kv_num_blocks.empty() || !m.full_kv_indices.empty();
  check("kv_num_blocks", m.kv_num_blocks, "kv_indices", m.kv_indices);
  if (full) check("full_kv_num_blocks", m.full_kv_num_blocks, "full_kv_indices", m.full_kv_indices);
  // Each K/V block once in a Q block's two lists: FlexAttention would visit it twice.
  std::vector<long long> seen(static_cast<size_t>(kb), -1);  // the Q block that last listed it
  size_t at = 0, full_at = 0;
  for (long long r = 0; r < qb; ++r) {
    auto mark = [&](const std::vector<int>& indices, size_t& i, int n) {
      for (int k = 0; k < n; ++k, ++i) {
        const auto c = static_cast<size_t>(indices[i]);
        if (seen[c] == r)
          throw UsageError("a block mask lists K/V block " + std::to_string(c) + " twice for Q block " + std::to_string(r) +
                           " (kv_indices and full_kv_indices together list each block once)");
        seen[c] = r;
      }
    };
    if (full) mark(m.full_kv_indices, full_at, m.full_kv_num_blocks[static_cast<size_t>(r)]);
    mark(m.kv_indices, at, m.kv_num_blocks[static_cast<size_t>(r)]);
  }
}

// flash_attn_varlen_func's rules: cu_seqlens non-decreasing from 0 and ending at the total, as many
// of one as of the other; here as lengths, each at least 0 (an empty sequence is allowed, as there).
void Problem::validate_packing() const {
  if (seqlens_q.empty() || seqlens_q.size() != seqlens_k.size())
    throw UsageError("a packed batch needs as many key lengths as query lengths, at least one (got " +
                     std::to_string(seqlens_q.size()) + " and " + std::to_string(seqlens_k.size()) + ")");
  auto total = [](const std::vector<int>& lengths, const char* what) {
    long long sum = 0;
    for (int n : lengths) {
      if (n < 0)
        throw UsageError(std::string("a packed batch's ") + what + " lengths must be at least 0 (got " +
                         std::to_string(n) + "): cu_seqlens must not decrease");
      sum += n;
    }
    return sum;
  };
  const long long q = total(seqlens_q, "query"), k = total(seqlens_k, "key");
  if (q != Lq || k != Lk)
    throw UsageError("a packed batch's lengths add up to " + std::to_string(q) + " queries and " + std::to_string(k) +
                     " keys, not Lq = " + std::to_string(Lq) + " and Lk = " + std::to_string(Lk) +
                     ": cu_seqlens must end at the total");
  if (seqlens_q.size() + static_cast<size_t>(Lq) > (size_t{1} << 30))  // step e's slots per head: Lq / Br + n, rounded up
    throw UsageError("a packed batch of " + std::to_string(seqlens_q.size()) + " sequences and " + std::to_string(Lq) +
                     " queries: the sequences and queries together must number at most 2^30");
  if (B != 1)
    throw UsageError("a packed batch is one sequence of B = 1 (got B = " + std::to_string(B) + "): its sequences are the batch");
  if (mask != MaskKind::none) throw UsageError("a packed batch takes no attn_mask: its mask is its sequences (and is_causal)");
}

const char* causal_name(Causal c) {
  switch (c) {
    case Causal::none: return "none";
    case Causal::top_left: return "top-left";
    case Causal::bottom_right: return "bottom-right";
  }
  return "?";
}
const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::none: return "none";
    case MaskKind::boolean: return "bool";
    case MaskKind::additive: return "additive";
  }
  return "?";
}

const char* mod_name(ModKind m) {
  switch (m) {
    case ModKind::none: return "none";
    case ModKind::sliding_window: return "sliding_window";
    case ModKind::prefix_lm: return "prefix_lm";
    case ModKind::document: return "document";
    case ModKind::document_causal: return "document_causal";
    case ModKind::random_blocks: return "random_blocks";
    case ModKind::window: return "window";
    case ModKind::varlen: return "varlen";
    case ModKind::varlen_window: return "varlen_window";
    case ModKind::blocks: return "blocks";
  }
  return "?";
}

std::string Problem::describe() const {
  std::ostringstream s;
  s << "B=" << B << " H=" << H << (kv_heads() != H ? " Hkv=" + std::to_string(Hkv) : "") << " Lq=" << Lq << " Lk=" << Lk << " d=" << d << " " << dtype_name(dtype);
  if (causal != Causal::none) s << " causal(" << causal_name(causal) << ")";
  if (mask != MaskKind::none) s << " mask(" << mask_name(mask) << (mask_per_head ? ", per head" : "") << ")";
  if (mod == ModKind::sliding_window) s << " mask_mod(sliding_window " << window << ")";
  if (mod == ModKind::prefix_lm) s << " mask_mod(prefix_lm " << prefix << ")";
  if (windowed()) s << " mask_mod(window " << left << "," << right << ")";
  auto list = [&](const std::vector<int>& n) {  // the first lengths; the rest counted
    for (size_t i = 0; i < n.size() && i < 8; ++i) s << (i ? "," : "") << n[i];
    if (n.size() > 8) s << ",...";
  };
  if (mod == ModKind::random_blocks || (reads_documents(mod) && doc_lengths.empty())) s << " mask_mod(" << mod_name(mod) << ")";
  if (reads_documents(mod) && !doc_lengths.empty()) {
    s << " mask_mod(" << mod_name(mod) << " " << doc_lengths.size() << " documents: ";
    list(doc_lengths);
    s << ")";
  }
  if (mod == ModKind::blocks) {
    const auto sum = [](const std::vector<int>& n) { return std::accumulate(n.begin(), n.end(), 0LL); };
    s << " mask_mod(blocks " << blocks.block_q << "x" << blocks.block_kv << ": " << sum(blocks.kv_num_blocks) << " partial, "
      << sum(blocks.full_kv_num_blocks) << " full of " << static_cast<long long>(q_blocks()) * kv_blocks() << ")";
  }
  if (packed()) {
    s << " varlen(" << seqlens_q.size() << " sequences: q ";
    list(seqlens_q);
    if (seqlens_k != seqlens_q) s << " k ", list(seqlens_k);
    s << ")";
  }
  if (softcap > 0.f) s << " softcap(" << softcap << ")";
  if (alibi) s << (alibi_slopes.empty() ? " alibi" : " alibi(given slopes)");
  if (scale_override) s << " scale=" << *scale_override;
  return s.str();
}

std::string Problem::mods() const {
  std::ostringstream s;
  auto list = [&](const std::vector<int>& n) {
    for (size_t i = 0; i < n.size(); ++i) s << (i ? "," : "") << n[i];
  };
  if (mod != ModKind::none) s << " mask_mod=" << mod_name(mod);
  if (mod == ModKind::sliding_window) s << " window=" << window;
  if (mod == ModKind::prefix_lm) s << " prefix=" << prefix;
  if (windowed()) s << " window=" << left << "," << right;
  if (reads_documents(mod) && !doc_lengths.empty()) {
    s << " documents=";
    list(doc_lengths);
  } else if (reads_documents(mod) || mod == ModKind::random_blocks) {
    s << " seed=" << seed;  // the pattern's draw
  }
  if (mod == ModKind::blocks) {
    s << " " << BlockLists::kWords[0] << "=" << blocks.block_q << "," << blocks.block_kv;
    for (int w = 1; w < 5; ++w)
      if (w < 3 || !blocks.full_kv_num_blocks.empty()) s << " " << BlockLists::kWords[w] << "=", list(blocks.list(w));
  }
  if (packed()) {
    s << " seqlens=", list(seqlens_q);
    if (seqlens_k != seqlens_q) s << " seqlens_k=", list(seqlens_k);
  }
  if (kv_heads() != H) s << " kv_heads=" << kv_heads();
  if (softcap > 0.f) s << " softcap=" << softcap;
  if (alibi && alibi_slopes.empty()) s << " alibi";
  if (!alibi_slopes.empty()) {  // each the shortest text that reads back as the same float
    s << " alibi_slopes=";
    for (size_t i = 0; i < alibi_slopes.size(); ++i) {
      char text[32];
      *std::to_chars(text, text + sizeof text - 1, alibi_slopes[i]).ptr = '\0';
      s << (i ? "," : "") << text;
    }
  }
  const std::string words = s.str();
  return words.empty() ? "none" : words.substr(1);
}

void Problem::apply_mods(const std::string& words) {
  std::vector<std::string> list;
  std::istringstream in(words);
  for (std::string w; in >> w;) list.push_back(w);
  if (list.size() == 1 && list[0] == "none") list.clear();
  std::map<std::string, std::string> given;  // key -> value ("alibi" has none)
  static const char* const kKeys[] = {"mask_mod", "window", "prefix", "seed", "documents", "seqlens", "seqlens_k", "kv_heads", "softcap", "alibi_slopes"};
  const auto& block_words = BlockLists::kWords;
  for (const std::string& w : list) {
    const size_t eq = w.find('=');
    const std::string key = w.substr(0, eq), value = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (w != "alibi" && (eq == std::string::npos || (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys) &&
                                                     std::find(std::begin(block_words), std::end(block_words), key) == std::end(block_words))))
      throw UsageError("mods: unknown word '" + w + "' (results/README.md lists the mods column's words)");
    if (!given.emplace(key, value).second) throw UsageError("mods: " + key + " given twice");
  }
  auto taken = [&](const char* key) { return given.count(key) > 0; };
  auto whole = [&](const char* key, const std::string& text, long long lo, unsigned long long hi) {
    unsigned long long n = 0;
    const bool minus = !text.empty() && text[0] == '-';
    const char *begin = text.data() + minus, *end = text.data() + text.size();
    const auto [at, ec] = std::from_chars(begin, end, n);
    if (ec != std::errc() || at != end || begin == end || (minus ? n > static_cast<unsigned long long>(-lo) : n > hi))
      throw UsageError(std::string("mods: ") + key + "=" + given[key] + " is not a whole number in [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "]");
    return std::make_pair(minus, n);
  };
  auto number = [&](const char* key, const std::string& text) {
    const auto [minus, n] = whole(key, text, -1, std::numeric_limits<int>::max());  // -1: a window's unbounded side
    return minus ? -static_cast<int>(n) : static_cast<int>(n);
  };
  auto numbers = [&](const char* key) {
    std::vector<int> values;
    std::string item;
    for (std::istringstream items(given[key]); std::getline(items, item, ',');) values.push_back(number(key, item));
    if (!given[key].empty() && given[key].back() == ',') values.push_back(number(key, ""));  // "3,4,": an empty last item
    return values;
  };
  ModKind kind = ModKind::none;
  if (taken("mask_mod")) {
    bool known = false;
    for (ModKind m : kModKinds)  // the command line's kinds (none is no word), then the packed ones --seqlens makes
      if (m != ModKind::none && given["mask_mod"] == mod_name(m)) kind = m, known = true;
    for (ModKind m : {ModKind::varlen, ModKind::varlen_window})
      if (given["mask_mod"] == mod_name(m)) kind = m, known = true;
    if (!known) throw UsageError("mods: unknown mask_mod=" + given["mask_mod"]);
  }
  // Each argument with its kinds: refused with another kind, needed with its own (seed and seqlens_k have defaults).
  auto argument = [&](const char* key, bool its_kind, bool needed, const char* whose) {
    const std::string owner = std::string(whose) + (std::string(whose).back() == 's' ? "'" : "'s");
    if (taken(key) && !its_kind) throw UsageError(std::string("mods: ") + key + "= is " + owner + " argument");
    if (!taken(key) && its_kind && needed) throw UsageError(std::string("mods: mask_mod=") + mod_name(kind) + " needs " + key + "=");
  };
  const bool sides = kind == ModKind::window || kind == ModKind::varlen_window;
  argument("window", kind == ModKind::sliding_window || sides, true, "mask_mod=sliding_window, window or varlen_window");
  argument("prefix", kind == ModKind::prefix_lm, true, "mask_mod=prefix_lm");
  argument("seed", reads_documents(kind) || kind == ModKind::random_blocks, false,
           "mask_mod=document, document_causal or random_blocks");
  argument("documents", reads_documents(kind), false, "mask_mod=document or document_causal");
  if (taken("seed") && taken("documents"))
    throw UsageError("mods: documents= gives the documents' lengths, seed= draws them: one of the two");
  const bool listed = kind == ModKind::blocks;
  for (int w = 0; w < 5; ++w) argument(block_words[w], listed, w < 3, "mask_mod=blocks");
  if (taken(block_words[3]) != taken(block_words[4]))
    throw UsageError(std::string("mods: ") + block_words[3] + "= and " + block_words[4] +
                     "= come together (FlexAttention's full blocks)");
  argument("seqlens", is_packed(kind), true, "a packed batch (mask_mod=varlen or varlen_window)");
  argument("seqlens_k", is_packed(kind), false, "a packed batch (mask_mod=varlen or varlen_window)");
  // Every setting from the words alone: what they do not name is its default (mods() leaves defaults out).
  mod = sides ? ModKind::window : is_packed(kind) ? ModKind::none : kind;
  window = kind == ModKind::sliding_window ? number("window", given["window"]) : 0;
  left = right = -1;
  if (sides) {
    const std::vector<int> lr = numbers("window");
    if (lr.size() != 2) throw UsageError("mods: window=" + given["window"] + " must be the window's two sides, L,R");
    left = lr[0], right = lr[1];
  }
  prefix = kind == ModKind::prefix_lm ? number("prefix", given["prefix"]) : 0;
  doc_lengths = taken("documents") ? numbers("documents") : std::vector<int>{};
  if (taken("documents") && doc_lengths.empty()) throw UsageError("mods: documents= needs the documents' lengths");
  if (taken("seed")) seed = whole("seed", given["seed"], 0, std::numeric_limits<uint64_t>::max()).second;
  blocks = {};
  if (listed) {
    std::vector<int> size;  // no sign: validate() refuses 0
    std::string item;
    for (std::istringstream items(given[block_words[0]]); std::getline(items, item, ',');)
      size.push_back(static_cast<int>(whole(block_words[0], item, 0, std::numeric_limits<int>::max()).second));
    if (size.size() != 2)
      throw UsageError(std::string("mods: ") + block_words[0] + "=" + given[block_words[0]] + " must be a block's queries and keys, Q,KV");
    blocks.block_q = size[0], blocks.block_kv = size[1];
    // A list may be empty (no block listed anywhere): "kv_indices=" is none.
    for (int w = 1; w < 5; ++w)
      if (taken(block_words[w])) blocks.list(w) = given[block_words[w]].empty() ? std::vector<int>{} : numbers(block_words[w]);
  }
  Hkv = taken("kv_heads") ? number("kv_heads", given["kv_heads"]) : 0;
  // A number of the word key's value (text: the value, or one item of its list, what: "a number" or
  // "a list of numbers").
  auto real = [&](const char* key, const std::string& text, const char* what) {
    char* end = nullptr;
    const float x = std::strtof(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size())
      throw UsageError(std::string("mods: ") + key + "=" + given[key] + " is not " + what);
    return x;
  };
  softcap = taken("softcap") ? real("softcap", given["softcap"], "a number") : 0.f;
  alibi_slopes.clear();
  if (taken("alibi_slopes")) {
    const std::string& list = given["alibi_slopes"];
    std::string item;
    for (std::istringstream items(list); std::getline(items, item, ',');) alibi_slopes.push_back(real("alibi_slopes", item, "a list of numbers"));
    if (list.empty() || list.back() == ',') real("alibi_slopes", "", "a list of numbers");  // an empty item
  }
  alibi = taken("alibi") || taken("alibi_slopes");
  seqlens_q.clear(), seqlens_k.clear();
  if (is_packed(kind)) {
    const std::vector<int> q = numbers("seqlens");
    pack(q, taken("seqlens_k") ? numbers("seqlens_k") : q);
  }
}

int Problem::diagonal_offset(int i) const {
  if (!packed()) return Lk - Lq;
  const int n = sequence_of(i) + 1;  // the sequences up to i's, its own included
  return std::accumulate(seqlens_k.begin(), seqlens_k.begin() + n, 0) - std::accumulate(seqlens_q.begin(), seqlens_q.begin() + n, 0);
}
int Problem::sequence_of(int i) const {
  int s = 0;
  for (int end = seqlens_q.empty() ? 0 : seqlens_q[0]; s + 1 < static_cast<int>(seqlens_q.size()) && end <= i;)
    end += seqlens_q[static_cast<size_t>(++s)];
  return s;
}
double Problem::score_at(int b, int h, int i, int j, double x, int offset) const {
  if (softcap > 0.f) x = softcap * std::tanh(x / softcap);
  if (alibi) x -= static_cast<double>(slope(packed() ? sequence_of(i) : b, h)) * std::abs(static_cast<long long>(i) + offset - j);
  return x;
}
float Problem::slope(int b, int h) const {
  if (alibi_slopes.empty()) return alibi_slope(h, H);
  return alibi_slopes[alibi_slopes.size() == static_cast<size_t>(H) ? static_cast<size_t>(h) : static_cast<size_t>(b) * H + h];
}

size_t Problem::mask_elems() const {
  if (mask == MaskKind::none) return 0;
  return (mask_per_head ? heads() : 1) * static_cast<size_t>(Lq) * Lk;
}
size_t Problem::mask_bytes() const { return mask_elems() * (mask == MaskKind::boolean ? 1 : 4); }

bool Problem::fold_causal_documents() {
  if (mod != ModKind::document || causal == Causal::none) return true;
  if (causal == Causal::bottom_right && Lq != Lk) return false;
  mod = ModKind::document_causal, causal = Causal::none;
  return true;
}

std::vector<int> Problem::documents() const {
  if (!reads_documents(mod)) return {};
  std::vector<int> doc(static_cast<size_t>(std::max(Lq, Lk)));
  if (!doc_lengths.empty()) {  // validate() refuses lengths that do not add up to doc.size()
    size_t at = 0;
    for (size_t id = 0; id < doc_lengths.size(); ++id)
      for (int n = 0; n < doc_lengths[id] && at < doc.size(); ++n) doc[at++] = static_cast<int>(id);
    return doc;
  }
  std::mt19937_64 rng(seed + 29);
  std::uniform_int_distribution<int> length(1, std::max(1, static_cast<int>(doc.size()) / 3));
  for (size_t at = 0, id = 0; at < doc.size(); ++id)
    for (int n = length(rng); n > 0 && at < doc.size(); --n) doc[at++] = static_cast<int>(id);
  return doc;
}

void Problem::pack(std::vector<int> q, std::vector<int> k) {
  auto sum = [](const std::vector<int>& lengths) {
    long long n = 0;
    for (int l : lengths) n += l;
    if (n > std::numeric_limits<int>::max())
      throw UsageError("a packed batch's lengths add up to more than 2^31 - 1 queries or keys: the kernels number "
                       "positions with 32-bit ints");
    return static_cast<int>(n);
  };
  const bool window = windowed();  // its sides then hold in each sequence
  if (mod != ModKind::none && !window && mod != ModKind::varlen)
    throw UsageError(std::string("a packed batch's mask is its sequences (and is_causal, or a window in each): it takes "
                                 "no other mask_mod (got ") + mod_name(mod) + ")");
  const int q_sum = sum(q), k_sum = sum(k);
  Lq = q_sum, Lk = k_sum;
  mod = window ? ModKind::varlen_window : ModKind::varlen, seqlens_q = std::move(q), seqlens_k = std::move(k);
}

std::vector<int> Problem::cu_seqlens() const {
  if (!packed()) return {};
  std::vector<int> cu(1, 0);
  for (int n : seqlens_q) cu.push_back(cu.back() + n);
  cu.push_back(0);
  for (int n : seqlens_k) cu.push_back(cu.back() + n);
  return cu;
}

size_t Problem::mod_table_size() const {
  if (mod == ModKind::blocks) return 3 + static_cast<size_t>(q_blocks()) * kv_blocks();
  if (packed()) return 2 * (seqlens_q.size() + 1) + (mod == ModKind::varlen_window ? 2 : 0);
  return reads_documents(mod) ? static_cast<size_t>(std::max(Lq, Lk)) : 0;
}

size_t Problem::kernel_table_size() const {
  return mod_table_size() + (alibi_slopes.empty() ? 0 : static_cast<size_t>(slope_batches()) * H);
}

std::vector<int> Problem::mod_table() const {
  if (mod == ModKind::blocks) {  // params.h: GivenBlocks' table, the class of every block
    const int kb = kv_blocks();
    std::vector<int> t = {blocks.block_q, blocks.block_kv, kb};
    t.resize(3 + static_cast<size_t>(q_blocks()) * kb, 0);
    auto put = [&](const std::vector<int>& counts, const std::vector<int>& indices, int cls) {
      size_t at = 0;
      for (size_t r = 0; r < counts.size(); ++r)
        for (int k = 0; k < counts[r]; ++k) t[3 + r * static_cast<size_t>(kb) + static_cast<size_t>(indices[at++])] = cls;
    };
    put(blocks.kv_num_blocks, blocks.kv_indices, 1);
    put(blocks.full_kv_num_blocks, blocks.full_kv_indices, 2);
    return t;
  }
  if (!packed()) return documents();
  std::vector<int> t = cu_seqlens();
  if (mod == ModKind::varlen_window) t.push_back(left), t.push_back(right);  // params.h: window_sides
  return t;
}

std::vector<int> Problem::kernel_table(std::vector<int> rule_table) const {
  if (!alibi_slopes.empty())
    for (int b = 0; b < slope_batches(); ++b)
      for (int h = 0; h < H; ++h) rule_table.push_back(std::bit_cast<int>(slope(b, h)));
  return rule_table;
}

std::vector<int> Problem::kernel_table() const { return kernel_table(mod_table()); }

MaskMod Problem::mask_mod(const int* doc) const {
  switch (mod) {
    case ModKind::varlen:
    case ModKind::varlen_window:
      return {mod, alibi, static_cast<uint16_t>(H / kv_heads()), static_cast<int>(seqlens_q.size()), doc};
    case ModKind::sliding_window: return {mod, alibi, 0, window, doc};
    case ModKind::prefix_lm: return {mod, alibi, 0, prefix, doc};
    case ModKind::random_blocks: return {mod, alibi, 0, static_cast<int>(seed * 0x9E3779B97F4A7C15ull >> 33), doc};
    case ModKind::window: {
      MaskMod m{mod, alibi, 0, left, nullptr};
      m.right = right;
      return m;
    }
    default: return {mod, alibi, 0, 0, doc};
  }
}

void Problem::visible_runs(int i, const std::vector<int>& doc, std::vector<std::pair<int, int>>& runs) const {
  runs.clear();
  auto add = [&](long long lo, long long hi) {  // keys [lo, hi) within [0, Lk)
    lo = std::max(lo, 0LL), hi = std::min(hi, static_cast<long long>(Lk));
    if (lo < hi) runs.emplace_back(static_cast<int>(lo), static_cast<int>(hi));
  };
  switch (mod) {
    case ModKind::none:
      if (causal == Causal::none) add(0, Lk);
      else add(0, static_cast<long long>(i) + (causal == Causal::bottom_right ? Lk - Lq : 0) + 1);
      return;
    case ModKind::sliding_window: add(static_cast<long long>(i) - window, static_cast<long long>(i) + 1); return;
    case ModKind::prefix_lm: add(0, std::max<long long>(prefix, static_cast<long long>(i) + 1)); return;
    case ModKind::window: {
      const long long diagonal = static_cast<long long>(i) + Lk - Lq;
      add(left < 0 ? 0 : diagonal - left, right < 0 ? Lk : diagonal + right + 1);
      return;
    }
    case ModKind::document:
    case ModKind::document_causal: {  // documents are runs of positions, their ids in increasing order
      const auto [lo, hi] = std::equal_range(doc.begin(), doc.end(), doc[static_cast<size_t>(i)]);
      add(lo - doc.begin(), mod == ModKind::document ? hi - doc.begin() : std::min<long long>(hi - doc.begin(), i + 1LL));
      return;
    }
    case ModKind::varlen:
    case ModKind::varlen_window: {  // doc: mod_table(); the query's sequence, the last that starts at or before it
      const auto n = static_cast<std::ptrdiff_t>(seqlens_q.size());
      const auto s = std::upper_bound(doc.begin(), doc.begin() + n, i) - doc.begin() - 1;
      long long first = doc[static_cast<size_t>(n + 1 + s)], end = doc[static_cast<size_t>(n + 2 + s)];
      const long long bottom_right = end - doc[static_cast<size_t>(s + 1)];  // the sequence's Lk - Lq
      const long long diagonal = causal == Causal::bottom_right ? bottom_right : first - doc[static_cast<size_t>(s)];
      if (causal != Causal::none) end = std::min(end, i + diagonal + 1);
      if (mod == ModKind::varlen_window) {  // its sides (left, right) after the offsets, on the sequence's diagonal
        if (left >= 0) first = std::max(first, i + bottom_right - left);
        if (right >= 0) end = std::min(end, i + bottom_right + right + 1);
      }
      if (first < end) add(first, end);
      return;
    }
    case ModKind::blocks: {  // doc: mod_table(), the blocks' classes; a listed block's keys, adjacent ones merged
      const int bkv = doc[1], kb = doc[2];
      const int* row = doc.data() + 3 + static_cast<size_t>(i / doc[0]) * kb;
      for (int c = 0; c < kb; ++c)
        if (row[c] != 0) {
          if (!runs.empty() && runs.back().second == c * bkv) runs.back().second = static_cast<int>(std::min<long long>(Lk, (c + 1LL) * bkv));
          else add(static_cast<long long>(c) * bkv, (c + 1LL) * bkv);
        }
      return;
    }
    case ModKind::random_blocks: {
      const RandomBlocks rule{static_cast<uint32_t>(mask_mod(nullptr).arg)};
      for (int j = 0; j < Lk; j += RandomBlocks::kBlock)
        if (rule(0, 0, i, j)) {
          if (!runs.empty() && runs.back().second == j) runs.back().second = std::min(Lk, j + RandomBlocks::kBlock);
          else add(j, j + RandomBlocks::kBlock);
        }
      return;
    }
  }
}

long long Problem::visible_pairs() const {
  if (mod == ModKind::none && causal == Causal::none) return static_cast<long long>(Lq) * Lk;
  const std::vector<int> doc = mod_table();
  std::vector<std::pair<int, int>> runs;
  long long n = 0;
  for (int i = 0; i < Lq; ++i) {
    visible_runs(i, doc, runs);
    for (const auto& [lo, hi] : runs) n += hi - lo;
  }
  return n;
}
double Problem::flops() const { return 4.0 * static_cast<double>(heads()) * d * static_cast<double>(visible_pairs()); }
double Problem::fa2_bytes(int Br) const {
  const double t = dtype_size(dtype), Tr = (Lq + Br - 1) / Br;
  return static_cast<double>(heads()) * t * (2.0 * Lq * d + Tr * 2.0 * Lk * d);
}
double Problem::fa2_bytes_visited(long long pairs, int Bc) const {
  return static_cast<double>(heads()) * dtype_size(dtype) * d * (2.0 * Lq + 2.0 * Bc * static_cast<double>(pairs));
}
double Problem::qkvo_bytes() const {
  return static_cast<double>(dtype_size(dtype)) * (2.0 * static_cast<double>(q_elems()) + 2.0 * static_cast<double>(kv_elems()));
}


Inputs Inputs::generate(const Problem& p) {
  Inputs in;
  Bell bell = Bell::of(p.seed, 1);
  bell.fill(in.q, p.q_elems(), p.dtype);
  bell.fill(in.k, p.kv_elems(), p.dtype);
  bell.fill(in.v, p.kv_elems(), p.dtype);
  std::mt19937_64 rng(p.seed);
  // Masks: every 7th query row (from row 3) is wholly masked, to exercise the fully-masked-row
  // convention (its output is 0); elsewhere about 1 key in 5 is masked.
  const size_t planes = p.mask_elems() / (static_cast<size_t>(p.Lq) * p.Lk);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  if (p.mask == MaskKind::boolean) {
    in.mask_bool.resize(p.mask_elems());
    for (size_t pl = 0; pl < planes; ++pl)
      for (int i = 0; i < p.Lq; ++i)
        for (int j = 0; j < p.Lk; ++j)
          in.mask_bool[(pl * p.Lq + i) * p.Lk + j] = i % 7 == 3 ? 0 : u(rng) >= 0.2f;
  } else if (p.mask == MaskKind::additive) {
    in.mask_add.resize(p.mask_elems());
    for (size_t pl = 0; pl < planes; ++pl)
      for (int i = 0; i < p.Lq; ++i)
        for (int j = 0; j < p.Lk; ++j) {
          const float r = u(rng);
          in.mask_add[(pl * p.Lq + i) * p.Lk + j] = i % 7 == 3 || r < 0.1f ? -INFINITY : 4.f * u(rng) - 2.f;
        }
  }
  in.doc = p.mod_table();
  return in;
}

float Inputs::mask_at(const Problem& p, int b, int h, int i, int j) const {
  if (p.packed()) return Varlen::of(p.mask_mod(doc.data()), p.causal)(b, h, i, j) ? 0.f : -INFINITY;
  if (p.mod != ModKind::none) return BookMod{p.mask_mod(doc.data()), p.Lk - p.Lq, false}(b, h, i, j) ? 0.f : -INFINITY;
  if (p.mask == MaskKind::none) return 0.f;
  const size_t plane = p.mask_per_head ? static_cast<size_t>(b) * p.H + h : 0;
  const size_t at = (plane * p.Lq + i) * p.Lk + j;
  if (p.mask == MaskKind::boolean) return mask_bool[at] ? 0.f : -INFINITY;
  return mask_add[at];
}

}  // namespace attn
