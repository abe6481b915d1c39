// test_reference.cpp: the Eigen reference against an independent plain loop, and the checker
// against outputs that must fail.
#include <catch2/catch.hpp>
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/compare.h"
#include "harness/reference.h"
#include "harness/softmax_row.h"
#include "kernels/mask_mod.h"
#include "sweep.h"

using namespace attn;

namespace {
// SDPA written out with loops, straight from its definition: one row at a time.
std::vector<double> plain_sdpa(const Problem& p, const Inputs& in, std::vector<double>& lse) {
  std::vector<double> o(p.q_elems(), 0.0);
  lse.assign(p.heads() * p.Lq, 0.0);
  // The scale the kernels receive: 1/sqrt(d) (or the given one) as a float.
  const double scale = static_cast<float>(p.scale_override ? *p.scale_override : 1.0 / std::sqrt(static_cast<double>(p.d)));
  const int kv_heads = p.Hkv > 0 ? p.Hkv : p.H;  // grouped-query attention: query head h reads K/V head hk
  for (int b = 0; b < p.B; ++b)
    for (int h = 0; h < p.H; ++h)
      for (int i = 0; i < p.Lq; ++i) {
        const size_t hk = static_cast<size_t>(b) * kv_heads + static_cast<size_t>(h / (p.H / kv_heads));
        std::vector<double> s(static_cast<size_t>(p.Lk));
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < p.Lk; ++j) {
          double dot = 0;
          for (int c = 0; c < p.d; ++c)
            dot += static_cast<double>(in.q[((static_cast<size_t>(b) * p.H + h) * p.Lq + i) * p.d + c]) *
                   in.k[(hk * p.Lk + j) * p.d + c];
          bool visible = true;
          int distance = i + p.Lk - p.Lq - j;  // from the bottom-right diagonal (ALiBi's)
          int batch = b;                       // whose slopes, when given per batch
          if (p.causal == Causal::top_left) visible = j <= i;
          if (p.causal == Causal::bottom_right) visible = j <= i + p.Lk - p.Lq;
          // The mask_mods as params.h defines them (a document's positions from the inputs).
          if (p.mod == ModKind::sliding_window) visible = j <= i && i - j <= p.window;
          if (p.mod == ModKind::prefix_lm) visible = j < p.prefix || j <= i;
          if (p.mod == ModKind::document) visible = in.doc[static_cast<size_t>(i)] == in.doc[static_cast<size_t>(j)];
          if (p.mod == ModKind::document_causal) visible = j <= i && in.doc[static_cast<size_t>(i)] == in.doc[static_cast<size_t>(j)];
          if (p.mod == ModKind::random_blocks) visible = RandomBlocks{static_cast<uint32_t>(p.mask_mod(nullptr).arg)}(b, h, i, j);
          if (p.mod == ModKind::blocks) {  // the pair's block in i's row of either list (rows end to end)
            const Problem::BlockLists& bl = p.blocks;
            const int r = i / bl.block_q, c = j / bl.block_kv;
            auto listed = [&](const std::vector<int>& counts, const std::vector<int>& indices) {
              if (counts.empty()) return false;
              const auto from = std::accumulate(counts.begin(), counts.begin() + r, 0);
              return std::find(indices.begin() + from, indices.begin() + from + counts[static_cast<size_t>(r)], c) !=
                     indices.begin() + from + counts[static_cast<size_t>(r)];
            };
            visible = listed(bl.kv_num_blocks, bl.kv_indices) || listed(bl.full_kv_num_blocks, bl.full_kv_indices);
          }
          if (p.mod == ModKind::window)  // FlashAttention-2's: from the bottom-right diagonal i + Lk - Lq
            visible = (p.left < 0 || j >= i + p.Lk - p.Lq - p.left) && (p.right < 0 || j <= i + p.Lk - p.Lq + p.right);
          if (p.packed()) {  // a packed batch: i's sequence by walking the lengths, is_causal or a window in it
            size_t s = 0;
            int q_first = 0, k_first = 0;
            for (; i >= q_first + p.seqlens_q[s]; ++s) q_first += p.seqlens_q[s], k_first += p.seqlens_k[s];
            const int qi = i - q_first, kj = j - k_first, lq = p.seqlens_q[s], lk = p.seqlens_k[s];
            visible = kj >= 0 && kj < lk;
            if (p.causal == Causal::top_left) visible = visible && kj <= qi;
            if (p.causal == Causal::bottom_right) visible = visible && kj <= qi + lk - lq;
            if (p.mod == ModKind::varlen_window)  // FlashAttention-2's window on the sequence's diagonal qi + lk - lq
              visible = visible && (p.left < 0 || kj >= qi + lk - lq - p.left) && (p.right < 0 || kj <= qi + lk - lq + p.right);
            distance = qi + lk - lq - kj;  // the sequence's own
            batch = static_cast<int>(s);     // ALiBi's slopes given per (sequence, head)
          }
          double add = 0;
          if (p.mask != MaskKind::none) {
            const size_t plane = p.mask_per_head ? static_cast<size_t>(b) * p.H + h : 0;
            const size_t at = (plane * p.Lq + i) * p.Lk + j;
            if (p.mask == MaskKind::boolean) visible = visible && in.mask_bool[at] != 0;
            if (p.mask == MaskKind::additive) add = in.mask_add[at];
          }
          double x = dot * scale;  // the score mods as params.h defines them, the cap first
          if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
          if (p.alibi) {  // the user's slopes, one per head or per (batch, head); else the paper's
            const size_t n = p.alibi_slopes.size(), at = n == static_cast<size_t>(p.H) ? static_cast<size_t>(h) : static_cast<size_t>(batch) * p.H + h;
            x -= (n ? p.alibi_slopes[at] : alibi_slope(h, p.H)) * std::fabs(static_cast<double>(distance));
          }
          s[static_cast<size_t>(j)] = visible ? x + add : -std::numeric_limits<double>::infinity();
          m = std::max(m, s[static_cast<size_t>(j)]);
        }
        const size_t row = (static_cast<size_t>(b) * p.H + h) * p.Lq + i;
        if (std::isinf(m)) {
          lse[row] = m;
          continue;  // no visible key: the output row stays 0
        }
        double l = 0;
        for (double& x : s) l += x = std::exp(x - m);
        lse[row] = m + std::log(l);
        for (int j = 0; j < p.Lk; ++j)
          for (int c = 0; c < p.d; ++c)
            o[row * p.d + c] += s[static_cast<size_t>(j)] / l * in.v[(hk * p.Lk + j) * p.d + c];
      }
  return o;
}

// The reference's O and lse on every row equal the plain loop's.
void require_plain(const Problem& p) {
  INFO(p.describe());
  const Inputs in = Inputs::generate(p);
  std::vector<double> lse;
  const std::vector<double> want = plain_sdpa(p, in, lse);
  const Expected got = reference(p, in, Selection::all(p));
  REQUIRE(got.o.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) REQUIRE(std::fabs(got.o[i] - want[i]) <= 1e-12);
  for (size_t i = 0; i < lse.size(); ++i)
    REQUIRE((std::isinf(lse[i]) ? got.lse[i] == lse[i] : std::fabs(got.lse[i] - lse[i]) <= 1e-12));
}
}  // namespace

TEST_CASE("the Eigen reference equals a plain loop over SDPA's definition", "[reference]") {
  struct Shape {
    int B, H, Lq, Lk, d;
  };
  for (Shape s : {Shape{1, 1, 1, 1, 8}, Shape{2, 3, 17, 17, 16}, Shape{1, 2, 9, 31, 32}, Shape{2, 1, 31, 9, 24}})
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (MaskKind m : {MaskKind::none, MaskKind::boolean, MaskKind::additive})
        for (bool per_head : {false, true}) {
          if ((c != Causal::none && m != MaskKind::none) || (m == MaskKind::none && per_head)) continue;
          Problem p;
          p.B = s.B, p.H = s.H, p.Lq = s.Lq, p.Lk = s.Lk, p.d = s.d;
          p.dtype = DType::fp32, p.causal = c, p.mask = m, p.mask_per_head = per_head;
          if (s.d == 24) p.scale_override = 0.3;
          INFO(p.describe());
          const Inputs in = Inputs::generate(p);
          std::vector<double> lse;
          const std::vector<double> want = plain_sdpa(p, in, lse);
          const Selection all = Selection::all(p);
          const Expected got = reference(p, in, all);
          REQUIRE(got.o.size() == want.size());
          for (size_t i = 0; i < want.size(); ++i) REQUIRE(std::fabs(got.o[i] - want[i]) <= 1e-12);
          for (size_t i = 0; i < lse.size(); ++i)
            REQUIRE((std::isinf(lse[i]) ? got.lse[i] == lse[i] : std::fabs(got.lse[i] - lse[i]) <= 1e-12));
        }
}

namespace {
// A given block mask of 16 x 24 blocks (mask_mod blocks) for any size: in Q block r, K/V block c
// listed partial when (r + c) % 3 == 1, full when it is 2, unlisted when 0.
Problem::BlockLists some_blocks(int Lq, int Lk) {
  Problem::BlockLists b{16, 24, {}, {}, {}, {}};
  for (int r = 0; r < (Lq + 15) / 16; ++r) {
    b.kv_num_blocks.push_back(0), b.full_kv_num_blocks.push_back(0);
    for (int c = 0; c < (Lk + 23) / 24; ++c) {
      if ((r + c) % 3 == 1) b.kv_num_blocks.back()++, b.kv_indices.push_back(c);
      if ((r + c) % 3 == 2) b.full_kv_num_blocks.back()++, b.full_kv_indices.push_back(c);
    }
  }
  return b;
}
}  // namespace

TEST_CASE("the reference applies every mask_mod as params.h defines it", "[reference]") {
  struct Mod {
    ModKind kind;
    int window, prefix, left = -1, right = -1;
  };
  for (Mod m : {Mod{ModKind::sliding_window, 0, 0}, Mod{ModKind::sliding_window, 5, 0}, Mod{ModKind::prefix_lm, 0, 7},
                Mod{ModKind::document, 0, 0}, Mod{ModKind::random_blocks, 0, 0}, Mod{ModKind::window, 0, 0, 4, 2},
                Mod{ModKind::window, 0, 0, -1, 0}, Mod{ModKind::window, 0, 0, 0, -1}, Mod{ModKind::blocks, 0, 0}})
    for (auto [Lq, Lk] : {std::pair{1, 1}, std::pair{31, 70}, std::pair{140, 33}}) {
      Problem p;
      p.B = 1, p.H = 2, p.Lq = Lq, p.Lk = Lk, p.d = 8, p.dtype = DType::fp32;
      p.mod = m.kind, p.window = m.window, p.prefix = m.prefix, p.left = m.left, p.right = m.right;
      if (m.kind == ModKind::blocks) p.blocks = some_blocks(Lq, Lk);
      require_plain(p);
    }
}

TEST_CASE("the reference applies a packed batch as flash_attn_varlen_func defines it", "[reference]") {
  struct Packing {
    std::vector<int> q, k;
  };
  // One sequence of one query; lengths 0, 1 and ragged; in each sequence Lq > Lk (rows that see no key
  // bottom-right) and Lq < Lk; a last sequence with queries and no key.
  for (const Packing& pk : {Packing{{1}, {1}}, Packing{{5, 0, 9, 1}, {5, 0, 9, 1}}, Packing{{9, 3, 0, 7}, {4, 8, 2, 0}}})
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
      Problem p;
      p.B = 1, p.H = 2, p.d = 8, p.dtype = DType::fp32, p.causal = c;
      p.pack(pk.q, pk.k);
      p.validate();
      require_plain(p);
    }
  // Score mods in each sequence: ALiBi's distance from the sequence's own bottom-right diagonal.
  for (auto [softcap, alibi] : {std::pair{0.f, true}, std::pair{3.f, false}, std::pair{3.f, true}})
    for (Causal c : {Causal::none, Causal::top_left}) {
      Problem p;
      p.B = 1, p.H = 3, p.d = 8, p.dtype = DType::fp32, p.causal = c, p.softcap = softcap, p.alibi = alibi;
      p.pack({9, 3, 0, 7}, {4, 8, 2, 0});
      p.validate();
      require_plain(p);
    }
  // A window in each sequence (flash_attn_varlen_func's window_size): sides smaller than the
  // sequences, unbounded on either side, and wider than every sequence; with a score mod and GQA.
  for (auto [left, right] : {std::pair{2, 0}, std::pair{-1, 1}, std::pair{3, -1}, std::pair{0, 0}, std::pair{50, 50}})
    for (bool scored : {false, true}) {
      Problem p;
      p.B = 1, p.H = 4, p.Hkv = scored ? 2 : 0, p.d = 8, p.dtype = DType::fp32, p.alibi = scored;
      p.mod = ModKind::window, p.left = left, p.right = right;
      p.pack({9, 3, 0, 7, 1}, {4, 8, 2, 0, 6});
      REQUIRE(p.mod == ModKind::varlen_window);
      p.validate();
      require_plain(p);
    }
  // Grouped-query attention: 6 query heads on 3 K/V heads (2 each), and on 1 (multi-query).
  for (int Hkv : {3, 1})
    for (Causal c : {Causal::none, Causal::bottom_right}) {
      Problem p;
      p.B = 1, p.H = 6, p.Hkv = Hkv, p.d = 8, p.dtype = DType::fp32, p.causal = c;
      p.pack({9, 3, 0, 7}, {4, 8, 2, 0});
      p.validate();
      require_plain(p);
    }
}

TEST_CASE("a packed batch keeps a window and refuses another mask_mod, changing nothing", "[reference]") {
  Problem w;
  w.mod = ModKind::window, w.left = 5, w.right = 0;
  w.pack({3, 4}, {3, 4});
  CHECK(w.mod == ModKind::varlen_window);
  w.pack({2, 2}, {2, 2});  // packed again: still windowed
  CHECK(w.mod == ModKind::varlen_window);
  const std::vector<int> table = w.mod_table();  // the offsets, then the sides (params.h: window_sides)
  CHECK(table == std::vector<int>({0, 2, 4, 0, 2, 4, 5, 0}));
  CHECK(window_sides(w.mask_mod(table.data()))[0] == 5);
  for (ModKind other : {ModKind::sliding_window, ModKind::prefix_lm, ModKind::document, ModKind::random_blocks}) {
    Problem p;
    p.mod = other, p.Lq = 7;
    INFO(mod_name(other));
    CHECK_THROWS_WITH(p.pack({3, 4}, {3, 4}), Catch::Matchers::Contains("it takes no other mask_mod"));
    CHECK((p.mod == other && p.Lq == 7 && p.seqlens_q.empty()));
  }
}

// The results CSV's mods column and the C API (capi.h) describe chapter 10's settings in words;
// apply_mods reads them back: the same words, the same rule, the same table, the same score mods.
TEST_CASE("a problem's mods words read back into the same problem", "[reference]") {
  std::vector<Problem> all = mask_mod_sweep(), scored = score_mod_sweep(), scales = scale_sweep();
  all.insert(all.end(), scored.begin(), scored.end());
  all.insert(all.end(), scales.begin(), scales.end());
  int with_mods = 0;
  for (const Problem& p : all) {
    INFO(p.describe() << " [" << p.mods() << "]");
    Problem r;  // the words alone, on the sizes a caller gives
    r.B = p.B, r.H = p.H, r.Lq = p.Lq, r.Lk = p.Lk, r.d = p.d, r.dtype = p.dtype, r.causal = p.causal, r.mask = p.mask;
    r.scale_override = p.scale_override, r.mask_per_head = p.mask_per_head;
    // Stale settings: the words replace every one (the seed too, where they name it: a pattern's draw).
    r.softcap = 7.f, r.alibi = true, r.alibi_slopes = {1.f}, r.window = 3, r.prefix = 5, r.left = 2, r.right = 9, r.Hkv = 1, r.doc_lengths = {4, 4};
    r.seed = reads_documents(p.mod) || p.mod == ModKind::random_blocks ? p.seed + 7 : p.seed;
    r.apply_mods(p.mods());
    CHECK(r.mods() == p.mods());
    CHECK(r.describe() == p.describe());
    CHECK(r.mod_table() == p.mod_table());
    CHECK(r.kernel_table() == p.kernel_table());
    CHECK(r.seqlens_k == p.seqlens_k);
    CHECK_NOTHROW(r.validate());
    with_mods += p.mods() != "none";
  }
  CHECK(with_mods > 100);  // the sweeps' chapter 10 problems, not only plain ones
  CHECK(std::count_if(all.begin(), all.end(), [](const Problem& p) { return !p.doc_lengths.empty(); }) > 0);
}

TEST_CASE("mods words that are not a problem's are refused, naming the word", "[reference]") {
  const std::pair<const char*, const char*> bad[] = {
      {"mask_mod=circle", "unknown mask_mod=circle"},
      {"softcap", "unknown word 'softcap'"},
      {"colour=red", "unknown word 'colour=red'"},
      {"alibi alibi", "alibi given twice"},
      {"mask_mod=window", "needs window="},
      {"mask_mod=window window=5", "two sides"},
      {"mask_mod=sliding_window window=x", "not a whole number"},
      {"mask_mod=sliding_window window=99999999999", "not a whole number"},
      {"prefix=3", "prefix= is mask_mod=prefix_lm's argument"},
      {"window=3", "window= is mask_mod=sliding_window, window or varlen_window's argument"},
      {"mask_mod=document seqlens=3,4", "seqlens= is a packed batch"},
      {"mask_mod=varlen", "needs seqlens="},
      {"mask_mod=varlen seqlens=3,4,", "seqlens=3,4, is not a whole number"},
      {"mask_mod=window window=5,", "window=5, is not a whole number"},
      {"softcap=fifty", "softcap=fifty is not a number"},
      {"none alibi", "unknown word 'none'"},
      {"documents=4,4", "documents= is mask_mod=document or document_causal's argument"},
      {"mask_mod=document seed=3 documents=4,4", "one of the two"},
      {"mask_mod=document documents=4,x", "documents=4,x is not a whole number"},
      {"mask_mod=document documents=", "documents= needs the documents' lengths"},
      {"block_size=64,64", "block_size= is mask_mod=blocks' argument"},
      {"mask_mod=blocks kv_num_blocks=1 kv_indices=0", "mask_mod=blocks needs block_size="},
      {"mask_mod=blocks block_size=64 kv_num_blocks=1 kv_indices=0", "must be a block's queries and keys"},
      {"mask_mod=blocks block_size=64,64 kv_num_blocks=1 kv_indices=0 full_kv_num_blocks=0", "come together"},
      {"mask_mod=blocks block_size=64,64 kv_num_blocks=1 kv_indices=x", "kv_indices=x is not a whole number"},
      {"alibi_slopes=0.5,x", "alibi_slopes=0.5,x is not a list of numbers"},
      {"alibi_slopes=0.5,", "alibi_slopes=0.5, is not a list of numbers"},
      {"alibi_slopes=", "alibi_slopes= is not a list of numbers"},
  };
  for (const auto& [words, why] : bad) {
    INFO(words);
    Problem p;
    CHECK_THROWS_WITH(p.apply_mods(words), Catch::Matchers::Contains(why));
  }
  Problem p;  // a packed batch's lengths set Lq and Lk
  p.apply_mods("mask_mod=varlen_window window=16,-1 seqlens=3,0,9 seqlens_k=5,2,9 kv_heads=1");
  CHECK((p.mod == ModKind::varlen_window && p.Lq == 12 && p.Lk == 16 && p.left == 16 && p.right == -1 && p.Hkv == 1));
  p.apply_mods("none");
  CHECK((p.mods() == "none" && p.mod == ModKind::none && p.seqlens_q.empty()));
}

TEST_CASE("a packed batch's sampled rows hold each sequence's first and last row", "[reference]") {
  Problem p;
  p.H = 8, p.d = 128;
  p.pack({3000, 1, 0, 4097}, {3000, 1, 0, 4097});
  REQUIRE(p.Lq == 7098);
  p.validate();
  const Selection s = Selection::sample(p);
  REQUIRE(s.rows.size() < static_cast<size_t>(p.Lq));  // sampled, not every row
  for (int row : {0, 2999, 3000, 3001, 7097}) {
    INFO("row " << row);
    CHECK(std::find(s.rows.begin(), s.rows.end(), row) != s.rows.end());
  }
}

TEST_CASE("the reference applies softcap and ALiBi as params.h defines them, with and without a mask", "[reference]") {
  for (float cap : {0.f, 0.3f, 4.f})
    for (bool alibi : {false, true})
      for (auto [Lq, Lk, H] : {std::tuple{1, 1, 1}, std::tuple{31, 70, 3}, std::tuple{40, 13, 6}}) {
        if (cap == 0.f && !alibi) continue;
        Problem p;
        p.B = 1, p.H = H, p.Lq = Lq, p.Lk = Lk, p.d = 8, p.dtype = DType::fp32, p.softcap = cap, p.alibi = alibi;
        p.scale_override = 1.5;  // scores past the caps
        if (Lq == 40) p.causal = Causal::bottom_right;
        if (Lq == 31) p.mod = ModKind::sliding_window, p.window = 9;
        require_plain(p);
      }
  // The user's slopes (FlashAttention-2's alibi_slopes): one per head, and one per (batch, head).
  for (bool per_batch : {false, true}) {
    Problem p;
    p.B = 2, p.H = 3, p.Lq = 31, p.Lk = 70, p.d = 8, p.dtype = DType::fp32, p.alibi = true, p.causal = Causal::bottom_right;
    p.alibi_slopes = per_batch ? std::vector<float>{0.7f, -0.05f, 0.f, 0.3f, 1.5f, 0.01f} : std::vector<float>{0.7f, -0.05f, 0.f};
    require_plain(p);
  }
}

// FlexAttention's BlockMask as lists (mask_mod blocks): its shape and its indices are checked, each
// refusal naming the list and what it should be.
TEST_CASE("a given block mask of the wrong shape, or with an index out of range, is refused", "[reference]") {
  Problem p;
  p.Lq = 130, p.Lk = 200, p.mod = ModKind::blocks;  // 64 x 64 blocks: 3 Q blocks, 4 K/V blocks
  const Problem::BlockLists good{64, 64, {1, 0, 2}, {3, 0, 1}, {1, 0, 0}, {0}};
  p.blocks = good;
  CHECK_NOTHROW(p.validate());
  CHECK((p.mod_table() == std::vector<int>{64, 64, 4, 2, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0}));
  std::vector<std::pair<int, int>> runs;
  p.visible_runs(129, p.mod_table(), runs);  // Q block 2: K/V blocks 0 and 1, one run
  CHECK((runs == std::vector<std::pair<int, int>>{{0, 128}}));
  p.visible_runs(0, p.mod_table(), runs);  // Q block 0: blocks 0 (full) and 3 (partial, its 8 keys)
  CHECK((runs == std::vector<std::pair<int, int>>{{0, 64}, {192, 200}}));
  const std::pair<std::function<void(Problem::BlockLists&)>, const char*> bad[] = {
      {[](auto& b) { b.block_q = 0; }, "at least 1 query by 1 key"},
      {[](auto& b) { b.kv_num_blocks = {1, 0}; }, "kv_num_blocks has 2 entries: one per Q block, ceil(Lq / block_q) = 3"},
      {[](auto& b) { b.full_kv_num_blocks = {1, 0, 0, 0}; }, "full_kv_num_blocks has 4 entries"},
      {[](auto& b) { b.kv_num_blocks = {1, 0, 5}; }, "kv_num_blocks[2] = 5: a Q block lists 0 to ceil(Lk / block_kv) = 4"},
      {[](auto& b) { b.kv_num_blocks = {1, -1, 2}; }, "kv_num_blocks[1] = -1"},
      {[](auto& b) { b.kv_indices = {3, 0}; }, "kv_indices has 2 entries, not the 3 its counts list"},
      {[](auto& b) { b.kv_indices = {3, 4, 1}; }, "lists K/V block 4 for Q block 2: out of range, the K/V blocks are 0 to 3"},
      {[](auto& b) { b.full_kv_indices = {-1}; }, "full_kv_indices lists K/V block -1 for Q block 0: out of range"},
      {[](auto& b) { b.kv_indices = {3, 1, 1}; }, "lists K/V block 1 twice for Q block 2"},
      {[](auto& b) { b.kv_indices = {0, 0, 1}; }, "lists K/V block 0 twice for Q block 0"},  // in both lists
      {[](auto& b) { b.full_kv_indices = {}; }, "full_kv_indices has 0 entries, not the 1"},
  };
  for (const auto& [change, why] : bad) {
    INFO(why);
    p.blocks = good;
    change(p.blocks);
    CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains(why));
  }
  p.blocks = good, p.mod = ModKind::document;
  CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains("a block mask's lists are mask_mod blocks' (got mask_mod document)"));
  p.blocks = {}, p.mod = ModKind::blocks;
  CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains("at least 1 query by 1 key"));
  p.blocks = {1, 1, {}, {}, {}, {}}, p.Lq = p.Lk = 8192;
  CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains("at most 2^24"));
  // Blocks as large as an int: one of each, whose count ceil(L / block) must not pass an int on the way.
  const int most = std::numeric_limits<int>::max();
  p.blocks = {most, most, {}, {}, {}, {}};
  CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains("kv_num_blocks has 0 entries: one per Q block, ceil(Lq / block_q) = 1"));
  p.blocks = {most, most, {1}, {0}, {}, {}};
  CHECK_NOTHROW(p.validate());
  CHECK((p.mod_table() == std::vector<int>{most, most, 1, 1} && p.mod_table_size() == 4 && p.kernel_table_size() == 4));
}

TEST_CASE("ALiBi's slopes given are one per head or per (batch, head), finite in fp32, and ALiBi's", "[reference]") {
  Problem p;
  p.B = 2, p.H = 3, p.alibi = true;
  const std::pair<std::vector<float>, const char*> bad[] = {
      {{0.5f}, "one per head, H = 3 (or B x H = 6) of them"},
      {{0.5f, 0.25f, 0.125f, 1.f}, "got 4"},
      {{0.5f, NAN, 0.1f}, "a finite number"},
      {{0.5f, INFINITY, 0.1f}, "a finite number"},
      {{0.5f, 1e37f, 0.1f}, "stays in fp32"},
  };
  for (const auto& [slopes, why] : bad) {
    p.alibi_slopes = slopes;
    INFO(slopes.size() << " slopes");
    CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains(why));
  }
  Problem packed;  // a packed batch's slopes: per head, or per (sequence, head) (FlashAttention-2's varlen)
  packed.H = 2, packed.alibi = true;
  packed.pack({3, 5, 1}, {3, 5, 1});
  packed.alibi_slopes = {1.f, 2.f, 3.f, 4.f};
  CHECK_THROWS_WITH(packed.validate(), Catch::Matchers::Contains("H = 2 (or sequences x H = 6) of them"));
  packed.alibi_slopes = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  CHECK_NOTHROW(packed.validate());
  CHECK((packed.sequence_of(0) == 0 && packed.sequence_of(3) == 1 && packed.sequence_of(8) == 2 && packed.slope(2, 1) == 6.f));
  CHECK((packed.kernel_table_size() == packed.kernel_table().size() && packed.kernel_table().size() == 8 + 6));
  p.alibi_slopes = {0.5f, -0.25f, 0.f}, p.alibi = false;
  CHECK_THROWS_WITH(p.validate(), Catch::Matchers::Contains("without ALiBi"));
  p.alibi = true;
  CHECK_NOTHROW(p.validate());
  CHECK(p.slope(1, 1) == -0.25f);
  p.alibi_slopes = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  CHECK((p.slope(0, 2) == 3.f && p.slope(1, 0) == 4.f));
  // The kernels' table: B x H slopes' bits after the rule's table, whichever form was given.
  p.mod = ModKind::document, p.Lq = p.Lk = 5, p.doc_lengths = {2, 3};
  std::vector<int> want = p.mod_table();
  for (float x : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) want.push_back(std::bit_cast<int>(x));
  CHECK(p.kernel_table() == want);
}

TEST_CASE("ALiBi's slopes: the paper's geometric sequences, by hand", "[reference]") {
  // H = 8: 2^-1 ... 2^-8. H = 6: the sequence for 4 (2^-2, 2^-4, 2^-6, 2^-8), then every other one
  // of the sequence for 8 from the first (2^-1, 2^-3). H = 1: 2^-8.
  for (int h = 0; h < 8; ++h) CHECK(alibi_slope(h, 8) == std::ldexp(1.f, -(h + 1)));
  const int six[] = {-2, -4, -6, -8, -1, -3};
  for (int h = 0; h < 6; ++h) CHECK(alibi_slope(h, 6) == std::ldexp(1.f, six[h]));
  CHECK(alibi_slope(0, 1) == std::ldexp(1.f, -8));
}

TEST_CASE("mask_mod rules: the definitions by hand, the host's runs and the kernels' functor agree", "[reference]") {
  // Hand-checked verdicts, (query, key) -> visible.
  CHECK(SlidingWindow{2}(0, 0, 5, 3));
  CHECK(SlidingWindow{2}(0, 0, 5, 5));
  CHECK_FALSE(SlidingWindow{2}(0, 0, 5, 2));
  CHECK_FALSE(SlidingWindow{2}(0, 0, 5, 6));
  CHECK(SlidingWindow{0}(0, 0, 4, 4));
  // A window (left 2, right 1) on the diagonal q + 3 (Lk - Lq = 3): query 5 sees keys 6 to 9.
  for (int kv = 0; kv < 12; ++kv) CHECK(Window{2, 1, 3}(0, 0, 5, kv) == (kv >= 6 && kv <= 9));
  CHECK(Window{-1, 0, 0}(0, 0, 7, 0));          // unbounded on the left: causal
  CHECK_FALSE(Window{-1, 0, 0}(0, 0, 7, 8));
  CHECK(Window{0, -1, -5}(0, 0, 5, 100));       // unbounded on the right, Lq > Lk
  CHECK_FALSE(Window{0, -1, -5}(0, 0, 5, -1));
  CHECK(PrefixLM{3}(0, 0, 0, 2));
  CHECK_FALSE(PrefixLM{3}(0, 0, 0, 3));
  CHECK(PrefixLM{3}(0, 0, 4, 4));
  CHECK_FALSE(PrefixLM{3}(0, 0, 4, 5));
  const int doc[] = {0, 0, 1, 1, 1, 2};
  CHECK(Document{doc}(0, 0, 1, 0));
  CHECK_FALSE(Document{doc}(0, 0, 2, 1));
  CHECK(Document{doc}(0, 0, 4, 2));
  CHECK_FALSE(Document{doc}(0, 0, 5, 4));
  CHECK(DocumentCausal{doc}(0, 0, 4, 2));
  CHECK(DocumentCausal{doc}(0, 0, 4, 4));
  CHECK_FALSE(DocumentCausal{doc}(0, 0, 2, 4));  // its document's, but after it
  CHECK_FALSE(DocumentCausal{doc}(0, 0, 2, 1));
  // A packed batch of queries {2, 0, 3} and keys {1, 2, 4}: cu_q 0 2 2 5, cu_k 0 1 3 7. Query 1 is
  // sequence 0's (key 0 only); query 3 is sequence 2's (keys 3 to 6), not the empty sequence 1's;
  // bottom-right, its second query sees keys 3 to 5 (kv <= q + cu_k[3] - cu_q[3] = 3 + 2); top-left,
  // keys 3 and 4.
  const int cu[] = {0, 2, 2, 5, 0, 1, 3, 7};
  const MaskMod packed{ModKind::varlen, false, 1, 3, cu};
  for (int kv = 0; kv < 7; ++kv) {
    INFO("key " << kv);
    CHECK(Varlen::of(packed, Causal::none)(0, 0, 1, kv) == (kv == 0));
    CHECK(Varlen::of(packed, Causal::none)(0, 0, 3, kv) == (kv >= 3));
    CHECK(Varlen::of(packed, Causal::bottom_right)(0, 0, 3, kv) == (kv >= 3 && kv <= 5));
    CHECK(Varlen::of(packed, Causal::top_left)(0, 0, 3, kv) == (kv >= 3 && kv <= 4));
  }
  // The same batch with the window (1, 0) in each sequence, its sides after the offsets: query 3's
  // diagonal is key 5 (as bottom-right above), so it sees keys 4 and 5; query 1's is key 0 (its
  // sequence's last query on its last key), so it sees key 0 alone.
  const int cu_window[] = {0, 2, 2, 5, 0, 1, 3, 7, 1, 0};
  const MaskMod windowed{ModKind::varlen_window, false, 1, 3, cu_window};
  for (int kv = 0; kv < 7; ++kv) {
    INFO("key " << kv);
    CHECK(Varlen::of(windowed, Causal::none)(0, 0, 3, kv) == (kv == 4 || kv == 5));
    CHECK(Varlen::of(windowed, Causal::none)(0, 0, 1, kv) == (kv == 0));
    CHECK(Varlen::of(windowed, Causal::none)(0, 0, 0, kv) == false);  // its diagonal is key -1
  }
  CHECK(CausalMod{0}(0, 0, 3, 3));
  CHECK_FALSE(CausalMod{0}(0, 0, 3, 4));
  CHECK(CausalMod{2}(0, 0, 3, 5));
  // Random blocks: one verdict per 64 x 64 block, about half of them visible.
  const RandomBlocks rb{12345};
  int visible = 0;
  for (int qb = 0; qb < 32; ++qb)
    for (int kb = 0; kb < 32; ++kb) {
      visible += rb(0, 0, qb * 64, kb * 64);
      REQUIRE(rb(0, 0, qb * 64, kb * 64) == rb(0, 0, qb * 64 + 63, kb * 64 + 37));
    }
  CHECK(visible > 1024 * 35 / 100);
  CHECK(visible < 1024 * 65 / 100);
  // Documents: runs of positions from 0 up, lengths 1 to a third of the sequence.
  Problem d;
  d.Lq = 300, d.Lk = 200, d.mod = ModKind::document;
  const std::vector<int> docs = d.documents();
  REQUIRE(docs.size() == 300);
  CHECK(docs.front() == 0);
  for (size_t i = 1; i < docs.size(); ++i) REQUIRE((docs[i] == docs[i - 1] || docs[i] == docs[i - 1] + 1));
  CHECK(docs.back() >= 2);
  // Given lengths (--documents): their ids in order, whatever the seed; refused unless they cover
  // max(Lq, Lk) in documents of 1 position at least, and with another mask_mod.
  d.doc_lengths = {1, 2, 297};
  const std::vector<int> given = d.documents();
  REQUIRE(given.size() == 300);
  CHECK((given[0] == 0 && given[1] == 1 && given[2] == 1 && given[3] == 2 && given[299] == 2));
  d.seed = 99;
  CHECK(d.documents() == given);
  CHECK_NOTHROW(d.validate());
  for (const std::vector<int>& bad : {std::vector<int>{1, 2, 296}, std::vector<int>{1, 2, 298}, std::vector<int>{0, 300}}) {
    d.doc_lengths = bad;
    CHECK_THROWS_WITH(d.validate(), Catch::Matchers::Contains("document"));
  }
  d.doc_lengths = {300}, d.mod = ModKind::random_blocks;
  CHECK_THROWS_WITH(d.validate(), Catch::Matchers::Contains("documents' lengths are the document and document_causal mask_mods'"));
  // Problem::visible_runs (closed forms) against the functor, pair by pair, and visible_pairs.
  struct Case {
    ModKind kind;
    int window, prefix;
    Causal causal;
    int left = -1, right = -1;
  };
  for (Case c : {Case{ModKind::sliding_window, 0, 0, Causal::none}, Case{ModKind::sliding_window, 9, 0, Causal::none},
                 Case{ModKind::sliding_window, 500, 0, Causal::none}, Case{ModKind::prefix_lm, 0, 0, Causal::none},
                 Case{ModKind::prefix_lm, 0, 50, Causal::none}, Case{ModKind::prefix_lm, 0, 999, Causal::none},
                 Case{ModKind::document, 0, 0, Causal::none}, Case{ModKind::document_causal, 0, 0, Causal::none},
                 Case{ModKind::random_blocks, 0, 0, Causal::none},
                 Case{ModKind::none, 0, 0, Causal::none}, Case{ModKind::none, 0, 0, Causal::top_left},
                 Case{ModKind::none, 0, 0, Causal::bottom_right}, Case{ModKind::window, 0, 0, Causal::none, 9, 3},
                 Case{ModKind::window, 0, 0, Causal::none, -1, 0}, Case{ModKind::window, 0, 0, Causal::none, 0, -1},
                 Case{ModKind::window, 0, 0, Causal::none, 500, 0}, Case{ModKind::blocks, 0, 0, Causal::none}})
    for (auto [Lq, Lk] : {std::pair{1, 1}, std::pair{130, 130}, std::pair{70, 200}, std::pair{200, 70}}) {
      Problem p;
      p.Lq = Lq, p.Lk = Lk, p.mod = c.kind, p.window = c.window, p.prefix = c.prefix, p.causal = c.causal, p.seed = 7;
      p.left = c.left, p.right = c.right;
      if (c.kind == ModKind::blocks) p.blocks = some_blocks(Lq, Lk);
      INFO(p.describe());
      const std::vector<int> dc = p.mod_table();
      AttentionParams a{};
      a.Lq = Lq, a.Lk = Lk, a.causal = c.causal, a.mod = p.mask_mod(dc.data());
      const BookMod rule = BookMod::of(a);
      std::vector<std::pair<int, int>> runs;
      long long n = 0;
      for (int i = 0; i < Lq; ++i) {
        p.visible_runs(i, dc, runs);
        std::vector<bool> from_runs(static_cast<size_t>(Lk), false);
        for (auto [lo, hi] : runs)
          for (int j = lo; j < hi; ++j) from_runs[static_cast<size_t>(j)] = true;
        for (int j = 0; j < Lk; ++j) {
          INFO("row " << i << ", key " << j);
          REQUIRE(from_runs[static_cast<size_t>(j)] == rule(0, 0, i, j));
          n += rule(0, 0, i, j);
        }
      }
      CHECK(p.visible_pairs() == n);
    }
  // A packed batch's runs against its rule, with empty sequences; and with windows in its sequences
  // (is_causal none: the window holds it).
  struct Packed {
    Causal causal;
    int left = -1, right = -1;
  };
  for (Packed c : {Packed{Causal::none}, Packed{Causal::top_left}, Packed{Causal::bottom_right}, Packed{Causal::none, 9, 0},
                   Packed{Causal::none, -1, 3}, Packed{Causal::none, 40, -1}, Packed{Causal::none, 0, 0}}) {
    Problem p;
    p.causal = c.causal;
    if (c.left >= 0 || c.right >= 0) p.mod = ModKind::window, p.left = c.left, p.right = c.right;
    p.pack({70, 0, 1, 129, 30}, {20, 5, 0, 200, 30});
    REQUIRE((p.Lq == 230 && p.Lk == 255));
    p.validate();
    INFO(p.describe());
    const std::vector<int> cu = p.mod_table();
    const Varlen rule = Varlen::of(p.mask_mod(cu.data()), c.causal);
    std::vector<std::pair<int, int>> runs;
    long long n = 0;
    for (int i = 0; i < p.Lq; ++i) {
      p.visible_runs(i, cu, runs);
      std::vector<bool> from_runs(static_cast<size_t>(p.Lk), false);
      for (auto [lo, hi] : runs)
        for (int j = lo; j < hi; ++j) from_runs[static_cast<size_t>(j)] = true;
      for (int j = 0; j < p.Lk; ++j) {
        INFO("row " << i << ", key " << j);
        REQUIRE(from_runs[static_cast<size_t>(j)] == rule(0, 0, i, j));
        n += rule(0, 0, i, j);
      }
    }
    CHECK(p.visible_pairs() == n);
  }
}

TEST_CASE("a row with every key masked gives zeros and lse -inf", "[reference]") {
  Problem p;
  p.Lq = 10, p.Lk = 12, p.d = 8, p.dtype = DType::fp32, p.mask = MaskKind::boolean;
  const Inputs in = Inputs::generate(p);  // row 3 of every plane is wholly masked
  const Expected e = reference(p, in, Selection::all(p));
  for (int c = 0; c < p.d; ++c) REQUIRE(e.o[static_cast<size_t>(3 * p.d + c)] == 0.0);
  REQUIRE(std::isinf(e.lse[3]));
  // Bottom-right alignment with Lq > Lk leaves the first Lq - Lk rows without any key.
  Problem q;
  q.Lq = 9, q.Lk = 4, q.d = 8, q.dtype = DType::fp32, q.causal = Causal::bottom_right;
  const Expected f = reference(q, Inputs::generate(q), Selection::all(q));
  for (int i = 0; i < q.Lq; ++i) REQUIRE(std::isinf(f.lse[static_cast<size_t>(i)]) == (i < q.Lq - q.Lk));
}

TEST_CASE("causal FLOPs count the visible pairs only", "[reference]") {
  Problem p;
  p.B = 2, p.H = 3, p.Lq = 100, p.Lk = 100, p.d = 64;
  REQUIRE(p.flops() == 4.0 * 6 * 64 * 100 * 100);
  p.causal = Causal::top_left;
  REQUIRE(p.visible_pairs() == 100 * 101 / 2);
  p.Lq = 30, p.Lk = 100;
  REQUIRE(p.visible_pairs() == 30 * 31 / 2);  // top-left: row i sees i + 1 keys
  p.causal = Causal::bottom_right;
  long long n = 0;
  for (int i = 0; i < 30; ++i) n += i + 70 + 1;
  REQUIRE(p.visible_pairs() == n);
  p.Lq = 100, p.Lk = 30;
  n = 0;
  for (int i = 0; i < 100; ++i) n += std::max(0, std::min(i - 70 + 1, 30));
  REQUIRE(p.visible_pairs() == n);
}

TEST_CASE("the sample of a large problem keeps its edges", "[reference]") {
  Problem p;
  p.B = 8, p.H = 16, p.Lq = 4096, p.Lk = 4096, p.d = 128;
  const Selection s = Selection::sample(p);
  REQUIRE(s.heads.size() == 4);
  REQUIRE(s.rows.front() == 0);
  REQUIRE(s.rows.back() == 4095);
  REQUIRE(std::find(s.rows.begin(), s.rows.end(), 63) != s.rows.end());
  REQUIRE(std::find(s.rows.begin(), s.rows.end(), 64) != s.rows.end());
  REQUIRE(std::is_sorted(s.rows.begin(), s.rows.end()));
  for (const auto& [b, h] : s.heads) REQUIRE((b < p.B && h < p.H));
  Problem small;
  REQUIRE(Selection::sample(small).rows.size() == static_cast<size_t>(small.Lq));
}

TEST_CASE("the checker fails wrong outputs: an error, a NaN, a missed row", "[reference]") {
  for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
    Problem p;
    p.B = 1, p.H = 2, p.Lq = 20, p.Lk = 33, p.d = 16, p.dtype = t;
    INFO(p.describe());
    const Inputs in = Inputs::generate(p);
    const Selection all = Selection::all(p);
    const Expected e = reference(p, in, all);
    const std::vector<double> naive = naive_same_dtype(p, in, all);
    std::vector<float> out(e.o.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = round_to(t, static_cast<float>(e.o[i]));
    const std::vector<double>* nv = t == DType::fp32 ? nullptr : &naive;
    REQUIRE(compare(p, all, out, e, nv, nullptr).pass);  // the reference, rounded, passes

    auto wrong = out;
    wrong[37] += 8 * static_cast<float>(tolerance(t));
    const Verdict w = compare(p, all, wrong, e, nv, nullptr);
    REQUIRE_FALSE(w.pass);
    REQUIRE(w.max_abs > tolerance(t));

    auto nan = out;
    nan[5] = std::numeric_limits<float>::quiet_NaN();
    const Verdict n = compare(p, all, nan, e, nv, nullptr);
    REQUIRE_FALSE(n.pass);
    REQUIRE(n.nonfinite == 1);

    auto inf = out;
    inf.back() = std::numeric_limits<float>::infinity();
    REQUIRE_FALSE(compare(p, all, inf, e, nv, nullptr).pass);

    auto unwritten = out;  // a row left as the poison the harness fills outputs with
    for (int c = 0; c < p.d; ++c) unwritten[static_cast<size_t>(7 * p.d + c)] = std::numeric_limits<float>::quiet_NaN();
    REQUIRE_FALSE(compare(p, all, unwritten, e, nv, nullptr).pass);

    std::vector<float> lse(p.heads() * p.Lq);
    for (size_t i = 0; i < lse.size(); ++i) lse[i] = static_cast<float>(e.lse[i]);
    REQUIRE(compare(p, all, out, e, nv, &lse).pass);
    lse[3] += 0.01f;
    REQUIRE_FALSE(compare(p, all, out, e, nv, &lse).pass);
  }
}

TEST_CASE("FlashAttention's rule: twice the naive same-dtype error is the bound", "[reference]") {
  Problem p;
  p.Lq = 64, p.Lk = 300, p.d = 64, p.dtype = DType::fp16;
  const Inputs in = Inputs::generate(p);
  const Selection all = Selection::all(p);
  const Expected e = reference(p, in, all);
  const std::vector<double> naive = naive_same_dtype(p, in, all);
  double naive_err = 0;
  for (size_t i = 0; i < naive.size(); ++i) naive_err = std::max(naive_err, std::fabs(naive[i] - e.o[i]));
  REQUIRE(naive_err > 0);
  REQUIRE(naive_err < tolerance(p.dtype));
  // An output off by three times the naive error everywhere fails the rule.
  std::vector<float> out(e.o.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(e.o[i] + 3 * naive_err);
  const Verdict v = compare(p, all, out, e, &naive, nullptr);
  REQUIRE(v.bound >= 2 * naive_err);
  REQUIRE_FALSE(v.pass);
  REQUIRE_THAT(v.why, Catch::Matchers::Contains("twice the same-dtype naive error"));
}

TEST_CASE("the log-sum-exp's tolerance grows with the scores, and still catches a wrong one", "[reference]") {
  for (double scale : {0.125, 1e4}) {
    Problem p;
    p.Lq = 16, p.Lk = 50, p.d = 64, p.dtype = DType::fp16, p.scale_override = scale;
    INFO(p.describe());
    const Inputs in = Inputs::generate(p);
    const Selection all = Selection::all(p);
    const Expected e = reference(p, in, all);
    std::vector<float> out(e.o.size()), lse(e.lse.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = round_to(p.dtype, static_cast<float>(e.o[i]));
    for (size_t i = 0; i < lse.size(); ++i) lse[i] = static_cast<float>(e.lse[i]);
    REQUIRE(compare(p, all, out, e, nullptr, &lse).pass);
    const double big = std::fabs(e.lse[5]);
    // What fp32 scores can cost at this scale: fine at 1e4 (scores ~1e5), a failure at 0.125.
    auto rounded = lse;
    rounded[5] += scale > 1 ? 0.25f : 2e-3f;
    CHECK(compare(p, all, out, e, nullptr, &rounded).pass == (scale > 1));
    // One part in 10^4 of the lse is no rounding at any scale.
    auto wrong = lse;
    wrong[5] += static_cast<float>(std::max(1e-2, 1e-4 * big));
    const Verdict w = compare(p, all, out, e, nullptr, &wrong);
    CHECK_FALSE(w.pass);
    CHECK_THAT(w.why, Catch::Matchers::Contains("log-sum-exp off by"));
  }
}

TEST_CASE("the same-dtype naive yardstick exists for a negative scale, and is dropped when it overflows", "[reference]") {
  Problem p;
  p.Lq = 16, p.Lk = 50, p.d = 64, p.dtype = DType::fp16, p.scale_override = -0.5;
  const Inputs in = Inputs::generate(p);
  const Selection all = Selection::all(p);
  const Expected e = reference(p, in, all);
  const std::vector<double> naive = naive_same_dtype(p, in, all);
  for (double x : naive) REQUIRE(std::isfinite(x));
  std::vector<float> out(e.o.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = round_to(p.dtype, static_cast<float>(e.o[i]));
  const Verdict v = compare(p, all, out, e, &naive, nullptr);
  CHECK(v.pass);
  CHECK(v.naive_err > 0);
  // At scale 1e4 fp16 scores overflow in the naive computation: no bound from it, and the
  // element-wise tolerance alone judges (the rounded reference passes, an error fails).
  p.scale_override = 1e4;
  const Expected big = reference(p, in, all);
  const std::vector<double> overflowed = naive_same_dtype(p, in, all);
  REQUIRE_FALSE(std::all_of(overflowed.begin(), overflowed.end(), [](double x) { return std::isfinite(x); }));
  for (size_t i = 0; i < out.size(); ++i) out[i] = round_to(p.dtype, static_cast<float>(big.o[i]));
  const Verdict o = compare(p, all, out, big, &overflowed, nullptr);
  CHECK(o.pass);
  CHECK(o.bound < 0);
  out[3] += 0.1f;
  CHECK_FALSE(compare(p, all, out, big, &overflowed, nullptr).pass);
}

TEST_CASE("a reference row's softmax: every hidden key exactly 0, a row that sees none all 0", "[reference]") {
  constexpr double inf = std::numeric_limits<double>::infinity();
  // Eigen's vectorized exp gives 5.6e-309 for a hidden key, not 0 (softmax_row.h).
  Eigen::RowVectorXd s(5);
  s << 1.0, -inf, 0.5, -inf, -inf;
  const double lse = softmax_row(s);
  CHECK(s(1) == 0.0);
  CHECK(s(3) == 0.0);
  CHECK(s(4) == 0.0);
  CHECK(s(0) == Approx(1 / (1 + std::exp(-0.5))).epsilon(1e-15));
  CHECK(s(0) + s(2) == Approx(1.0).epsilon(1e-15));
  CHECK(lse == Approx(1.0 + std::log1p(std::exp(-0.5))).epsilon(1e-15));
  s.setConstant(-inf);
  CHECK(softmax_row(s) == -inf);
  CHECK(s.isZero(0));
}
