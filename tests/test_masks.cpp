// test_masks.cpp: chapter 10's block mask against the host's count of each tile's visible keys
// (Problem::visible_runs, the rules in closed form): the lists must hold exactly the tiles with a
// visible key, the wholly visible ones apart, in key order. The variant sweep checks the outputs;
// this checks that the kernel skips what it may and masks what it must.
#include <catch2/catch.hpp>
#include <cstdint>
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "05_flash_v2/flash_v2.h"
#include "10_masks/masks.h"
#include "harness/compare.h"
#include "harness/runner.h"
#include "user_mods.h"

using namespace attn;

// Per Q tile, from the host's rule in closed form: the K/V tiles with a visible key, each wholly
// visible (full) or not (partial), in key order.
struct Classes {
  std::vector<std::vector<int>> full, partial;
};
Classes classes(const Problem& p, const std::vector<int>& doc, const ch05::Tiles& t) {
  const ch10::BlockMaskShape shape(p.Lq, p.Lk, t.Br, t.Bc);
  Classes out;
  std::vector<std::pair<int, int>> runs;
  for (int r = 0; r < shape.q_tiles; ++r) {
    std::vector<long long> seen(static_cast<size_t>(shape.kv_tiles), 0);
    const int rows = std::min(t.Br, p.Lq - r * t.Br);
    for (int i = r * t.Br; i < r * t.Br + rows; ++i) {
      p.visible_runs(i, doc, runs);
      for (auto [lo, hi] : runs)
        for (int k = lo; k < hi; ++k) ++seen[static_cast<size_t>(k / t.Bc)];
    }
    out.full.emplace_back(), out.partial.emplace_back();
    for (int k = 0; k < shape.kv_tiles; ++k) {
      const long long all = static_cast<long long>(rows) * std::min(t.Bc, p.Lk - k * t.Bc);
      if (seen[static_cast<size_t>(k)] == all) out.full.back().push_back(k);
      else if (seen[static_cast<size_t>(k)] > 0) out.partial.back().push_back(k);
    }
  }
  return out;
}

TEST_CASE("the block mask lists exactly the tiles with a visible key, the partial ones apart", "[variants]") {
  struct Case {
    ModKind mod;
    int arg, Lq, Lk, d;
    Causal causal;
    int right = -1;  // a window's: arg is its left side
  };
  const Case cases[] = {{ModKind::sliding_window, 100, 700, 700, 64, Causal::none},
                        {ModKind::sliding_window, 0, 300, 130, 128, Causal::none},
                        {ModKind::sliding_window, 5000, 257, 300, 64, Causal::none},
                        {ModKind::prefix_lm, 200, 600, 600, 64, Causal::none},
                        {ModKind::document, 0, 900, 900, 64, Causal::none},
                        {ModKind::document, 0, 513, 513, 128, Causal::none},
                        {ModKind::document_causal, 0, 900, 900, 64, Causal::none},
                        {ModKind::document_causal, 0, 513, 300, 128, Causal::none},
                        {ModKind::random_blocks, 0, 800, 500, 64, Causal::none},
                        {ModKind::window, 100, 700, 500, 64, Causal::none, 30},
                        {ModKind::none, 0, 700, 300, 64, Causal::bottom_right},
                        {ModKind::none, 0, 300, 700, 128, Causal::top_left},
                        {ModKind::blocks, 128, 700, 500, 64, Causal::none},
                        {ModKind::blocks, 48, 300, 260, 128, Causal::none}};
  for (const Case& c : cases) {
    Problem p;
    p.B = 1, p.H = 1, p.Lq = c.Lq, p.Lk = c.Lk, p.d = c.d, p.causal = c.causal, p.mod = c.mod, p.seed = 11;
    p.window = p.prefix = p.left = c.arg, p.right = c.right;
    // Given block masks: FlexAttention's 128 x 128 blocks, two of the kernel's K/V tiles each, a Q block
    // with none listed; 48 x 80 blocks, which no tile edge meets, partial lists alone.
    if (c.mod == ModKind::blocks && c.arg == 128)
      p.blocks = {128, 128, {1, 0, 2, 0, 1, 1}, {3, 1, 2, 0, 2}, {1, 0, 0, 2, 0, 1}, {0, 3, 1, 0}};
    if (c.mod == ModKind::blocks && c.arg == 48) p.blocks = {48, 80, {1, 1, 1, 1, 1, 1, 1}, {0, 1, 2, 3, 3, 2, 1}, {}, {}};
    INFO(p.describe());
    const Inputs in = Inputs::generate(p);
    const DeviceInputs dev(p, in);
    const ch05::Tiles t = ch05::fa2_tiles(p.d);
    const ch10::BlockMaskShape shape(p.Lq, p.Lk, t.Br, t.Bc);
    DeviceBuffer lists(shape.bytes());
    REQUIRE(ch10::write_block_mask(attention_params(p, dev), lists.get()) == cudaSuccess);
    std::vector<int> got((shape.bytes() + sizeof(int) - 1) / sizeof(int));
    lists.download(got.data(), shape.bytes());
    const ch10::BlockMaskLists<const int> l(got.data(), p.Lq, p.Lk, t.Br, t.Bc);

    const Classes want = classes(p, in.doc, t);
    long long listed = 0, partial = 0;
    for (int r = 0; r < shape.q_tiles; ++r) {
      const std::vector<int>&want_full = want.full[static_cast<size_t>(r)], &want_partial = want.partial[static_cast<size_t>(r)];
      INFO("Q tile " << r);
      REQUIRE(l.kv_num_blocks[r] == static_cast<int>(want_partial.size()));
      REQUIRE(l.full_kv_num_blocks[r] == static_cast<int>(want_full.size()));
      CHECK(std::vector<int>(l.kv_indices(r), l.kv_indices(r) + l.kv_num_blocks[r]) == want_partial);
      CHECK(std::vector<int>(l.full_kv_indices(r), l.full_kv_indices(r) + l.full_kv_num_blocks[r]) == want_full);
      listed += static_cast<long long>(want_partial.size() + want_full.size());
      partial += static_cast<long long>(want_partial.size());
    }
    // Each case skips some tiles or has some full ones: the lists are not trivially everything.
    CHECK((listed < static_cast<long long>(shape.pairs()) || partial < listed));
  }
}

// Step f computes what step c lists: the tiles with a visible key as a range, and which need the
// rule. Windows narrower than a tile, wider than Lk, one-sided, and rows that see nothing (Lq > Lk).
// The visible (query, key) pairs of rows [first, first + rows), from the host's rule.
long long visible_pairs(const Problem& p, int first, int rows, const std::vector<int>& doc) {
  long long n = 0;
  std::vector<std::pair<int, int>> runs;
  for (int i = first; i < first + rows; ++i) {
    p.visible_runs(i, doc, runs);
    for (auto [lo, hi] : runs) n += hi - lo;
  }
  return n;
}
// A launch order's Q tiles by their work (visible pairs), in that order: from the first of the
// heaviest on they only get lighter, and fewer come before it than after (chapter 06's heaviest
// first, in either direction).
void check_heaviest_first(const std::vector<long long>& pairs) {
  const auto heaviest = std::max_element(pairs.begin(), pairs.end());
  CHECK(std::is_sorted(heaviest, pairs.end(), std::greater<>()));
  CHECK(heaviest - pairs.begin() <= pairs.end() - heaviest);
}

// Chapter 09's step g launches under is_causal in sections of heads (ch06::heaviest_first_grid with
// a section): every (head, Q tile) once, no grid dimension past its limit, the sections one after
// the other in launch order, each with its heaviest Q tiles (the highest) first; where the Q tiles
// need z, one section (the order of chapter 06's balanced).
TEST_CASE("a heaviest-first grid in sections launches every head's Q tiles once, a section at a time", "[variants]") {
  int sectioned = 0;
  for (unsigned heads : {1u, 3u, 7u, 64u, 1000u})
    for (unsigned q_tiles : {1u, 5u, 33u, 70000u})
      for (unsigned section : {1u, 2u, 3u, 48u, heads, heads + 5}) {
        if (q_tiles > 65535 && heads > 7) continue;  // tens of millions of blocks: the small heads show it
        INFO("heads " << heads << ", Q tiles " << q_tiles << ", section " << section);
        const dim3 g = ch06::heaviest_first_grid(heads, q_tiles, section);
        REQUIRE(g.y <= 65535u);
        REQUIRE(g.z <= 65535u);
        const unsigned sections = (heads + g.x - 1) / g.x;
        CHECK(g.x == (q_tiles > 65535 || section > heads ? heads : section));
        sectioned += sections > 1;
        std::vector<int> seen(static_cast<size_t>(heads) * q_tiles, 0);
        int current = -1, previous_tile = 0, past_heads = 0;
        for (unsigned z = 0; z < g.z; ++z)
          for (unsigned y = 0; y < g.y; ++y)
            for (unsigned x = 0; x < g.x; ++x) {
              const ch06::HeadTile at = ch06::heaviest_first_block(uint3{x, y, z}, g, heads);
              REQUIRE(at.head >= 0);
              REQUIRE(at.tile >= 0);
              const int s = at.head / static_cast<int>(g.x);
              if (s != current) {
                REQUIRE(s == current + 1);  // the sections in order, each whole before the next
                current = s;
              } else {
                REQUIRE(at.tile <= previous_tile);  // and within one, the heaviest Q tiles first
              }
              previous_tile = at.tile;
              if (at.head >= static_cast<int>(heads)) {
                ++past_heads;
                continue;
              }
              if (at.tile < static_cast<int>(q_tiles)) ++seen[static_cast<size_t>(at.head) * q_tiles + static_cast<size_t>(at.tile)];
            }
        CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
        CHECK(past_heads == static_cast<int>((sections * g.x - heads) * g.y * (g.z / sections)));
        CHECK(current == static_cast<int>(sections) - 1);
        const dim3 balanced = ch06::heaviest_first_grid(heads, q_tiles);  // chapter 06's: one section
        CHECK((balanced.x == heads && balanced.y == g.y && balanced.z * sections == g.z));
      }
  CHECK(sectioned > 20);
}

TEST_CASE("a window's tiles in closed form are those with a visible key, the partial ones masked", "[variants]") {
  const std::pair<int, int> windows[] = {{0, 0}, {5, 3}, {-1, 0}, {0, -1}, {100, 30}, {300, -1}, {-1, -1}, {1000, 2000}};
  int unequal = 0;  // problems whose Q tiles do not all visit as many tiles (the launch order matters)
  for (auto [left, right] : windows)
    for (auto [Lq, Lk] : {std::pair{1, 1}, std::pair{700, 700}, std::pair{300, 1000}, std::pair{1000, 300}, std::pair{130, 97}})
      for (int d : {64, 128}) {
        Problem p;
        p.Lq = Lq, p.Lk = Lk, p.d = d, p.mod = ModKind::window, p.left = left, p.right = right;
        INFO(p.describe());
        const ch05::Tiles t = ch05::fa2_tiles(d);
        AttentionParams a{};
        a.Lq = Lq, a.Lk = Lk, a.mod = p.mask_mod(nullptr);
        const Classes want = classes(p, {}, t);
        std::set<int> counts;
        for (int r = 0; r * t.Br < Lq; ++r) {
          INFO("Q tile " << r);
          std::vector<int> all = want.full[static_cast<size_t>(r)], masked;
          all.insert(all.end(), want.partial[static_cast<size_t>(r)].begin(), want.partial[static_cast<size_t>(r)].end());
          std::sort(all.begin(), all.end());
          const ch10::TileRange range = ch10::window_tiles(a, r * t.Br, t.Br, t.Bc), full = ch10::window_full(a, r * t.Br, t.Br, t.Bc);
          std::vector<int> got(static_cast<size_t>(range.count));
          for (int j = 0; j < range.count; ++j) {
            got[static_cast<size_t>(j)] = range.first + j;
            if (j < full.first || j >= full.first + full.count) masked.push_back(range.first + j);
          }
          CHECK(full.count >= 0);
          CHECK((full.count == 0 || (full.first >= 0 && full.first + full.count <= range.count)));
          REQUIRE(got == all);
          // The partial tiles, and the last one where Lk leaves it ragged (its keys past Lk).
          std::vector<int> must = want.partial[static_cast<size_t>(r)];
          if (Lk % t.Bc && !all.empty() && all.back() == Lk / t.Bc && (must.empty() || must.back() != all.back()))
            must.push_back(all.back());
          CHECK(masked == must);
          counts.insert(range.count);
        }
        unequal += counts.size() > 1;
        // The launch order: the Q tiles from the end window_from_end names.
        std::vector<long long> pairs;
        for (int q0 = 0; q0 < Lq; q0 += t.Br) pairs.push_back(visible_pairs(p, q0, std::min(t.Br, Lq - q0), {}));
        if (ch10::window_from_end(a)) std::reverse(pairs.begin(), pairs.end());
        check_heaviest_first(pairs);
      }
  CHECK(unequal > 10);
}

// A packed batch's tile map (step e's, which step f's windows share) lists each sequence's Q tiles
// once, and in the order a window alone launches them: from the first of its heaviest tiles on, they
// only get lighter (the visible pairs of each, from Problem::visible_runs), whichever side the window
// is open to and wherever each sequence's own diagonal falls (four of the six have Lq != Lk).
TEST_CASE("a packed batch's tile map launches each sequence's heaviest Q tiles first", "[variants]") {
  const std::pair<int, int> windows[] = {{-1, 0}, {200, 0}, {0, 200}, {-1, 150}, {100, 300}, {300, 100}, {-1, -1}};
  const std::vector<int> seq_q = {1, 300, 64, 700, 129, 0}, seq_k = {5, 300, 500, 200, 129, 40};
  int reversed = 0, forward = 0;  // sequences of unequal tiles listed from their last, from their first
  for (auto [left, right] : windows)
    for (bool packed_window : {true, false}) {
      if (!packed_window && (left != -1 || right != -1)) continue;  // step e: no window, equal tiles
      Problem p;
      p.d = 64, p.mod = packed_window ? ModKind::window : ModKind::none, p.left = left, p.right = right;
      if (!packed_window) p.causal = Causal::bottom_right;  // step e's unequal tiles
      p.pack(seq_q, seq_k);
      INFO(p.describe());
      const ch05::Tiles t = ch05::fa2_tiles(p.d);
      const std::vector<int> table = p.mod_table();
      AttentionParams a{};
      a.dtype = DType::fp16, a.B = 1, a.H = 1, a.Lq = p.Lq, a.Lk = p.Lk, a.d = p.d, a.mod = p.mask_mod(table.data());
      a.causal = p.causal;
      std::vector<ch10::SeqTile> map(ch10::tile_slots(p.Lq, static_cast<int>(seq_q.size()), t.Br), ch10::SeqTile{-2, -2});
      REQUIRE(ch10::write_tile_map(a, map.data()) == cudaSuccess);
      std::vector<std::vector<int>> order(seq_q.size());
      for (const ch10::SeqTile& e : map) {
        REQUIRE(e.seq >= -1);
        if (e.seq >= 0) order[static_cast<size_t>(e.seq)].push_back(e.tile);
      }
      for (size_t s = 0, q_start = 0; s < seq_q.size(); q_start += static_cast<size_t>(seq_q[s]), ++s) {
        INFO("sequence " << s);
        const int tiles = (seq_q[s] + t.Br - 1) / t.Br;
        std::vector<int> sorted = order[s];
        std::sort(sorted.begin(), sorted.end());
        std::vector<int> each(static_cast<size_t>(tiles));
        for (int r = 0; r < tiles; ++r) each[static_cast<size_t>(r)] = r;
        REQUIRE(sorted == each);  // every tile once
        std::vector<long long> pairs;  // in launch order
        for (int r : order[s])
          pairs.push_back(visible_pairs(p, static_cast<int>(q_start) + r * t.Br, std::min(t.Br, seq_q[s] - r * t.Br), table));
        check_heaviest_first(pairs);
        if (std::set<long long>(pairs.begin(), pairs.end()).size() > 1) (order[s].front() == 0 ? forward : reversed) += 1;
      }
    }
  CHECK(reversed > 3);
  CHECK(forward > 3);  // windows open to the right: the first tiles see the most keys
}

// Any mask_mod and score_mod make a kernel: a user's own pair (user_mods.h), which no part of
// common/ knows, through lean_loop's Policy, against a double-precision loop written here.
TEST_CASE("a kernel of a user's own mask_mod and score_mod matches its definition", "[variants]") {
  Problem p;
  p.B = 1, p.H = 3, p.Lq = 150, p.Lk = 170, p.d = user_mods::kD, p.dtype = DType::fp16, p.seed = 5;
  const Inputs in = Inputs::generate(p);
  const DeviceInputs dev(p, in);
  DeviceBuffer out(p.q_elems() * dtype_size(p.dtype)), lse(p.heads() * p.Lq * sizeof(float));
  AttentionParams a = attention_params(p, dev);
  a.o = out.get(), a.lse = static_cast<float*>(lse.get());
  REQUIRE(user_mods::run(a) == cudaSuccess);
  AttentionParams other = a;
  other.d = 32;
  CHECK(user_mods::run(other) == cudaErrorInvalidValue);

  const Selection sel = Selection::all(p);
  Expected want;
  const user_mods::Dilated rule;
  const user_mods::RelativeBias bias;
  for (int h = 0; h < p.H; ++h)
    for (int i = 0; i < p.Lq; ++i) {
      const size_t qi = (static_cast<size_t>(h) * p.Lq + i) * p.d;
      std::vector<double> s(static_cast<size_t>(p.Lk), -INFINITY);
      double m = -INFINITY, norm_q = 0, norm_k = 0;
      for (int c = 0; c < p.d; ++c) norm_q += static_cast<double>(in.q[qi + c]) * in.q[qi + c];
      for (int j = 0; j < p.Lk; ++j) {
        const size_t kj = (static_cast<size_t>(h) * p.Lk + j) * p.d;
        double dot = 0, nk = 0;
        for (int c = 0; c < p.d; ++c) dot += static_cast<double>(in.q[qi + c]) * in.k[kj + c], nk += static_cast<double>(in.k[kj + c]) * in.k[kj + c];
        norm_k = std::max(norm_k, nk);
        if (!rule(0, h, i, j)) continue;
        const double x = dot * p.scale();
        s[static_cast<size_t>(j)] = x - static_cast<double>(i - j) / (8.0 * (h + 1));  // RelativeBias, in double
        m = std::max(m, s[static_cast<size_t>(j)]);
      }
      double l = 0;
      std::vector<double> o(static_cast<size_t>(p.d), 0.0);
      for (int j = 0; j < p.Lk; ++j) {
        if (s[static_cast<size_t>(j)] == -INFINITY) continue;
        const double e = std::exp(s[static_cast<size_t>(j)] - m);
        l += e;
        for (int c = 0; c < p.d; ++c) o[static_cast<size_t>(c)] += e * in.v[(static_cast<size_t>(h) * p.Lk + j) * p.d + c];
      }
      for (double x : o) want.o.push_back(x / l);
      want.lse.push_back(m + std::log(l));
      // The scores' bound (the lse's rounding grows with it): the raw ones', and the bias's, |q - kv| / 8 at most.
      want.score_bound.push_back(std::fabs(p.scale()) * std::sqrt(norm_q * norm_k) + p.Lq / 8.0);
    }
  CHECK(bias(1.f, 0, 1, 9, 5) == 1.f - 4.f / 16.f);  // the functor is the formula above
  const std::vector<float> o = download_as(p.dtype, out, p.q_elems());
  std::vector<float> l(p.heads() * p.Lq);
  lse.download(l.data(), l.size() * sizeof(float));
  const Verdict v = compare(p, sel, o, want, nullptr, &l);
  INFO(v.why);
  CHECK(v.pass);
  CHECK(v.nonfinite == 0);
  // The pair changes the output: plain attention's is another (the comparison is not vacuous).
  Problem plain = p;
  plain.mod = ModKind::none;
  double moved = 0;
  const Expected unbiased = reference(plain, in, sel);
  for (size_t k = 0; k < o.size(); ++k) moved = std::max(moved, std::fabs(unbiased.o[k] - want.o[k]));
  CHECK(moved > 10 * tolerance(p.dtype));
}

TEST_CASE("steps a to d refuse a packed batch, which their rules cannot mask; steps e and f refuse what they do not take", "[variants]") {
  const int cu[] = {0, 5, 9, 0, 4, 9, 3, 0};  // the offsets, then a window's sides (varlen_window)
  AttentionParams a{};
  a.dtype = DType::fp16, a.B = 1, a.H = 1, a.Lq = 9, a.Lk = 9, a.d = 64, a.scale = 0.125f;
  a.mod = MaskMod{ModKind::varlen, false, 1, 2, cu};
  uint8_t mask[81];
  int lists[64];
  CHECK(ch10::write_mask(a, mask) == cudaErrorInvalidValue);
  CHECK(ch10::mask_mod(a) == cudaErrorInvalidValue);
  CHECK(ch10::write_block_mask(a, lists) == cudaErrorInvalidValue);
  CHECK(ch10::block_mask(a, lists) == cudaErrorInvalidValue);
  CHECK(ch10::score_mod(a, lists) == cudaErrorInvalidValue);
  ch10::SeqTile map[8];
  for (auto change : {+[](AttentionParams& p) { p.B = 2; }, +[](AttentionParams& p) { p.mask_kind = MaskKind::boolean; },
                      +[](AttentionParams& p) { p.mod.kind = ModKind::document; }}) {
    AttentionParams b = a;
    change(b);
    CHECK(ch10::write_tile_map(b, map) == cudaErrorInvalidValue);
    CHECK(ch10::varlen(b, map) == cudaErrorInvalidValue);
    b.mod.kind = b.mod.kind == ModKind::varlen ? ModKind::varlen_window : b.mod.kind;
    CHECK(ch10::packed_window(b, map) == cudaErrorInvalidValue);
  }
  // A window in each sequence: steps a to d and e refuse it, and step f's plain window (which would
  // read the offsets' pointer as its sides); step f's packed one refuses a batch without the window
  // and is_causal beside it (the window holds it).
  AttentionParams w = a;
  w.mod.kind = ModKind::varlen_window;
  CHECK(ch10::write_mask(w, mask) == cudaErrorInvalidValue);
  CHECK(ch10::mask_mod(w) == cudaErrorInvalidValue);
  CHECK(ch10::write_block_mask(w, lists) == cudaErrorInvalidValue);
  CHECK(ch10::block_mask(w, lists) == cudaErrorInvalidValue);
  CHECK(ch10::score_mod(w, lists) == cudaErrorInvalidValue);
  CHECK(ch10::varlen(w, map) == cudaErrorInvalidValue);
  CHECK(ch10::window(w) == cudaErrorInvalidValue);
  CHECK(ch10::packed_window(a, map) == cudaErrorInvalidValue);
  w.causal = Causal::bottom_right;
  CHECK(ch10::packed_window(w, map) == cudaErrorInvalidValue);
  // Step f's plain launch masks by the window alone: it refuses is_causal and an attn_mask beside it.
  AttentionParams alone = a;
  alone.mod = MaskMod{ModKind::window, false, 0, 4, nullptr};
  alone.mod.right = 0;
  alone.causal = Causal::bottom_right;
  CHECK(ch10::window(alone) == cudaErrorInvalidValue);
  alone.causal = Causal::none, alone.mask_kind = MaskKind::boolean;
  CHECK(ch10::window(alone) == cudaErrorInvalidValue);
}
