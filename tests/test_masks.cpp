// test_masks.cpp: chapter 10's block mask against the host's count of each tile's visible keys
// (Problem::visible_runs, the rules in closed form): the lists must hold exactly the tiles with a
// visible key, the wholly visible ones apart, in key order. The variant sweep checks the outputs;
// this checks that the kernel skips what it may and masks what it must.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "05_flash_v2/flash_v2.h"
#include "10_masks/masks.h"
#include "harness/runner.h"

using namespace attn;

TEST_CASE("the block mask lists exactly the tiles with a visible key, the partial ones apart", "[variants]") {
  struct Case {
    ModKind mod;
    int arg, Lq, Lk, d;
    Causal causal;
  };
  const Case cases[] = {{ModKind::sliding_window, 100, 700, 700, 64, Causal::none},
                        {ModKind::sliding_window, 0, 300, 130, 128, Causal::none},
                        {ModKind::sliding_window, 5000, 257, 300, 64, Causal::none},
                        {ModKind::prefix_lm, 200, 600, 600, 64, Causal::none},
                        {ModKind::document, 0, 900, 900, 64, Causal::none},
                        {ModKind::document, 0, 513, 513, 128, Causal::none},
                        {ModKind::random_blocks, 0, 800, 500, 64, Causal::none},
                        {ModKind::none, 0, 700, 300, 64, Causal::bottom_right},
                        {ModKind::none, 0, 300, 700, 128, Causal::top_left}};
  for (const Case& c : cases) {
    Problem p;
    p.B = 1, p.H = 1, p.Lq = c.Lq, p.Lk = c.Lk, p.d = c.d, p.causal = c.causal, p.mod = c.mod, p.seed = 11;
    p.window = p.prefix = c.arg;
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

    std::vector<std::pair<int, int>> runs;
    long long listed = 0, partial = 0;
    for (int r = 0; r < shape.q_tiles; ++r) {
      std::vector<long long> seen(static_cast<size_t>(shape.kv_tiles), 0);
      const int rows = std::min(t.Br, p.Lq - r * t.Br);
      for (int i = r * t.Br; i < r * t.Br + rows; ++i) {
        p.visible_runs(i, in.doc, runs);
        for (auto [lo, hi] : runs)
          for (int k = lo; k < hi; ++k) ++seen[static_cast<size_t>(k / t.Bc)];
      }
      std::vector<int> want_partial, want_full;
      for (int k = 0; k < shape.kv_tiles; ++k) {
        const long long all = static_cast<long long>(rows) * std::min(t.Bc, p.Lk - k * t.Bc);
        if (seen[static_cast<size_t>(k)] == all) want_full.push_back(k);
        else if (seen[static_cast<size_t>(k)] > 0) want_partial.push_back(k);
      }
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
