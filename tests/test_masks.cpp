// test_masks.cpp: chapter 10's block mask against the host's count of each tile's visible keys
// (Problem::visible_runs, the rules in closed form): the lists must hold exactly the tiles with a
// visible key, the wholly visible ones apart, in key order. The variant sweep checks the outputs;
// this checks that the kernel skips what it may and masks what it must.
#include <catch2/catch.hpp>
#include <cstdint>
#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "05_flash_v2/flash_v2.h"
#include "10_masks/masks.h"
#include "harness/runner.h"

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
                        {ModKind::random_blocks, 0, 800, 500, 64, Causal::none},
                        {ModKind::window, 100, 700, 500, 64, Causal::none, 30},
                        {ModKind::none, 0, 700, 300, 64, Causal::bottom_right},
                        {ModKind::none, 0, 300, 700, 128, Causal::top_left}};
  for (const Case& c : cases) {
    Problem p;
    p.B = 1, p.H = 1, p.Lq = c.Lq, p.Lk = c.Lk, p.d = c.d, p.causal = c.causal, p.mod = c.mod, p.seed = 11;
    p.window = p.prefix = p.left = c.arg, p.right = c.right;
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
          const ch10::TileRange range = ch10::window_tiles(a, r * t.Br, t.Br, t.Bc);
          std::vector<int> got(static_cast<size_t>(range.count));
          for (int j = 0; j < range.count; ++j) {
            got[static_cast<size_t>(j)] = range.first + j;
            if (!ch10::window_tile_full(a, r * t.Br, t.Br, (range.first + j) * t.Bc, t.Bc)) masked.push_back(range.first + j);
          }
          REQUIRE(got == all);
          // The partial tiles, and the last one where Lk leaves it ragged (its keys past Lk).
          std::vector<int> must = want.partial[static_cast<size_t>(r)];
          if (Lk % t.Bc && !all.empty() && all.back() == Lk / t.Bc && (must.empty() || must.back() != all.back()))
            must.push_back(all.back());
          CHECK(masked == must);
          counts.insert(range.count);
        }
        unequal += counts.size() > 1;
        // The launch order: from the first of the heaviest Q tiles (most visible pairs) on, the
        // tiles only get lighter, and fewer come before it than after.
        std::vector<long long> pairs;
        std::vector<std::pair<int, int>> runs;
        for (int q0 = 0; q0 < Lq; q0 += t.Br) {
          pairs.push_back(0);
          for (int i = q0; i < std::min(Lq, q0 + t.Br); ++i) {
            p.visible_runs(i, {}, runs);
            for (auto [lo, hi] : runs) pairs.back() += hi - lo;
          }
        }
        if (ch10::window_from_end(a)) std::reverse(pairs.begin(), pairs.end());
        const auto heaviest = std::max_element(pairs.begin(), pairs.end());
        CHECK(std::is_sorted(heaviest, pairs.end(), std::greater<>()));
        CHECK(heaviest - pairs.begin() <= pairs.end() - heaviest);
      }
  CHECK(unequal > 10);
}
