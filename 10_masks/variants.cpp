// variants.cpp: chapter 10 in the registry. One kernel (chapter 05's lean_loop) for every mask
// pattern: the pattern as a tensor, as a rule evaluated per score, as a block mask of lists, a packed
// batch as one problem per sequence, and a window as a range of tiles in closed form.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>
#include <vector>

#include "05_flash_v2/flash_v2.h"
#include "harness/registry.h"
#include "06_causal/causal.h"
#include "masks.h"

namespace {
using namespace attn;

ch05::Tiles tiles(const Problem& p) { return ch05::fa2_tiles(p.d); }
// The lists' sizes at the kernel's tiles.
ch10::BlockMaskShape layout(const Problem& p) { return {p.Lq, p.Lk, tiles(p).Br, tiles(p).Bc}; }

// The (Q tile, K/V tile) pairs of one head the block mask lists (a visible key in the tile), and of
// those the partial ones (a hidden key too, within [0, Lq) x [0, Lk)): from the rows' runs of
// visible keys (Problem::visible_runs), the host's form of the kernels' rule.
struct Listed {
  long long pairs = 0, partial = 0;
};
Listed listed(const Problem& p) {
  const ch05::Tiles t = tiles(p);
  const int kt = layout(p).kv_tiles;
  const std::vector<int> doc = p.mod_table();
  std::vector<std::pair<int, int>> runs;
  std::vector<long long> seen(static_cast<size_t>(kt));  // visible keys per K/V tile, this Q tile
  Listed n;
  for (int q0 = 0; q0 < p.Lq; q0 += t.Br) {
    std::fill(seen.begin(), seen.end(), 0);
    const int rows = std::min(t.Br, p.Lq - q0);
    for (int i = q0; i < q0 + rows; ++i) {
      p.visible_runs(i, doc, runs);
      for (auto [lo, hi] : runs)
        for (int c = lo / t.Bc; c * t.Bc < hi; ++c) seen[static_cast<size_t>(c)] += std::min(hi, (c + 1) * t.Bc) - std::max(lo, c * t.Bc);
    }
    for (int c = 0; c < kt; ++c) {
      const long long all = static_cast<long long>(rows) * std::min(t.Bc, p.Lk - c * t.Bc);
      n.pairs += seen[static_cast<size_t>(c)] > 0;
      n.partial += seen[static_cast<size_t>(c)] > 0 && seen[static_cast<size_t>(c)] < all;
    }
  }
  return n;
}
size_t mask_bytes(const Problem& p) { return static_cast<size_t>(p.Lq) * p.Lk; }
size_t lists_bytes(const Problem& p) { return layout(p).bytes(); }

// What the steps share: chapter 05's dtypes, head dims and kernel; is_causal and every mask_mod
// named on the command line (no attn_mask: step a makes its own), lse written, the emulator's pace.
Variant masks_variant(const char* name, const char* description) {
  Variant v{.chapter = "10_masks", .name = name, .description = description};
  v.dtypes = {DType::fp16, DType::bf16};
  v.head_dims.list = as_vector(ch05::TensorCoreDims{});
  v.mask = false;
  v.mask_mods.assign(std::begin(kModKinds) + 1, std::end(kModKinds));
  v.min_cc = 80;  // chapter 05's lean_loop: mma.sync m16n8k16, cp.async
  v.smem_bytes = [](const Problem& p) {
    return static_cast<size_t>(ch05::smem_bytes(ch05::Step::lean_loop, p.d, dtype_size(p.dtype)));
  };
  v.writes_lse = true;
  v.max_heads = 65535;  // a grid row per head
  v.cpu_flops_per_second = 8e8;
  return v;
}

Variant mask_tensor_variant() {
  Variant v = masks_variant("mask_tensor", "the pattern written out as a bool attn_mask [Lq, Lk], read on every tile");
  v.workspace_bytes = mask_bytes;
  // The mask written once, then read by every head; K and V once per Q tile.
  v.hbm_bytes = [](const Problem& p) {
    return p.fa2_bytes(tiles(p).Br) + static_cast<double>(mask_bytes(p)) * (1.0 + static_cast<double>(p.heads()));
  };
  v.run = [](const AttentionParams& p, Stages& st) {
    auto* mask = static_cast<uint8_t*>(p.workspace);
    st.run("the mask written as a tensor", [&] { return ch10::write_mask(p, mask); }, 0, false);
    st.run("FlashAttention-2 with the tensor as attn_mask", [&] { return ch10::mask_tensor(p, mask); }, 0, true,
           MaskKind::boolean);
  };
  return v;
}

Variant mask_mod_variant() {
  Variant v = masks_variant("mask_mod", "the pattern as a rule evaluated per score: no mask bytes, every tile visited");
  v.hbm_bytes = [](const Problem& p) { return p.fa2_bytes(tiles(p).Br); };
  v.run = [](const AttentionParams& p, Stages& st) {
    st.run("FlashAttention-2, mask_mod per score", [&] { return ch10::mask_mod(p); });
  };
  return v;
}

// Steps c and d: the block mask's lists written, then the listed tiles visited.
Variant listed_variant(const char* name, const char* description, const char* stage,
                       cudaError_t (*kernel)(const AttentionParams&, const void*)) {
  Variant v = masks_variant(name, description);
  v.workspace_bytes = lists_bytes;
  v.hbm_bytes = [](const Problem& p) { return p.fa2_bytes_visited(listed(p).pairs, tiles(p).Bc) + 2.0 * lists_bytes(p); };
  v.plan = [](const Problem& p) {
    const Listed n = listed(p);
    char s[200];
    std::snprintf(s, sizeof s, "Br = %d, Bc = %d: %lld of %lld (Q tile, K/V tile) pairs listed per head, %lld partial",
                  tiles(p).Br, tiles(p).Bc, n.pairs, static_cast<long long>(layout(p).q_tiles) * layout(p).kv_tiles, n.partial);
    return std::string(s);
  };
  v.run = [stage, kernel](const AttentionParams& p, Stages& st) {
    st.run("the block mask (create_block_mask)", [&] { return ch10::write_block_mask(p, p.workspace); }, 0, false);
    st.run(stage, [&] { return kernel(p, p.workspace); });
  };
  return v;
}

Variant block_mask_variant() {
  Variant v = listed_variant("block_mask", "FlexAttention's BlockMask: only listed K/V tiles visited, the rule on partial ones only",
                             "FlashAttention-2 over the listed tiles", ch10::block_mask);
  v.best = true;
  return v;
}

Variant score_mod_variant() {
  Variant v = listed_variant("score_mod", "step c with a score_mod (softcap, ALiBi) on every visited score",
                             "FlashAttention-2 over the listed tiles, score_mod per score", ch10::score_mod);
  v.score_mod = true;
  return v;
}

// Steps e's and f's Q tiles of one head, their (Q tile, K/V tile) pairs, and of those the masked ones.
struct Visits {
  long long tiles = 0, pairs = 0, masked = 0;
};
// The counts over a problem's sequences, each a problem of its own (the kernels' part), or over the
// problem itself when it is not packed: tile(Lq, Lk, q0) gives one Q tile's pairs and masked pairs.
template <class Tile>
Visits each_q_tile(const Problem& p, Tile&& tile) {
  const int Br = tiles(p).Br;
  Visits n;
  const auto add = [&](int Lq, int Lk) {
    for (int q0 = 0; q0 < Lq; q0 += Br, ++n.tiles) {
      const auto [pairs, masked] = tile(Lq, Lk, q0);
      n.pairs += pairs, n.masked += masked;
    }
  };
  if (!p.packed()) add(p.Lq, p.Lk);
  for (size_t s = 0; s < p.seqlens_q.size(); ++s) add(p.seqlens_q[s], p.seqlens_k[s]);
  return n;
}

// Step e's: chapter 06's count per Q tile (tiles_to_visit, tile_needs_mask) in each sequence.
Visits packed_visits(const Problem& p) {
  const ch05::Tiles t = tiles(p);
  return each_q_tile(p, [&](int Lq, int Lk, int q0) {
    AttentionParams a{};
    a.Lq = Lq, a.Lk = Lk, a.causal = p.causal;
    const int visits = ch06::tiles_to_visit(a, q0, t.Br, t.Bc);
    long long masked = 0;
    for (int j = 0; j < visits; ++j) masked += ch06::tile_needs_mask(a, q0, j * t.Bc, t.Bc, a.causal != Causal::none);
    return std::pair<long long, long long>(visits, masked);
  });
}
size_t map_bytes(const Problem& p) {
  return sizeof(ch10::SeqTile) * ch10::tile_slots(p.Lq, static_cast<int>(p.seqlens_q.size()), tiles(p).Br);
}
constexpr const char* kTileMap = "the tile map (a prefix sum of cu_seqlens)";  // steps e's and f's first stage
// Their plan on a packed batch: its sequences, tiles and visits.
std::string packed_plan(const Problem& p, long long q_tiles, long long pairs, long long masked) {
  char s[240];
  std::snprintf(s, sizeof s, "Br = %d, Bc = %d: %zu sequences in %lld Q tiles (%zu slots per head), %lld "
                "(Q tile, K/V tile) pairs visited per head, %lld masked", tiles(p).Br, tiles(p).Bc, p.seqlens_q.size(),
                q_tiles, map_bytes(p) / sizeof(ch10::SeqTile), pairs, masked);
  return std::string(s);
}

// Step e: a packed batch, each block one Q tile of one sequence, the sequence a problem of its own.
Variant varlen_variant() {
  Variant v = masks_variant("varlen", "a packed batch (cu_seqlens): each block one Q tile of one sequence, no padding; "
                                      "GQA and score mods in each sequence");
  v.mask_mods = {ModKind::varlen};  // a window in each sequence (varlen_window): step f's
  v.needs_mask_mod = true;  // its Policy reads cu_seqlens
  v.score_mod = true;       // step d's, in each sequence
  v.max_heads = 0;          // heads on the grid's x
  v.workspace_bytes = map_bytes;
  v.hbm_bytes = [](const Problem& p) { return p.fa2_bytes_visited(packed_visits(p).pairs, tiles(p).Bc) + 2.0 * map_bytes(p); };
  v.plan = [](const Problem& p) {
    const Visits n = packed_visits(p);
    return packed_plan(p, n.tiles, n.pairs, n.masked);
  };
  v.run = [](const AttentionParams& p, Stages& st) {
    st.run(kTileMap, [&] { return ch10::write_tile_map(p, p.workspace); }, 0, false);
    st.run("FlashAttention-2 over each sequence's tiles", [&] { return ch10::varlen(p, p.workspace); });
  };
  return v;
}

// Step f's: the kernel's closed form (masks.h), which test_masks checks against the host's count of
// each tile's visible keys; in a packed batch each sequence with its own diagonal (the kernel's part).
AttentionParams window_of(const Problem& p) {
  AttentionParams a{};
  a.mod = MaskMod{ModKind::window, false, 0, p.left, nullptr};
  a.mod.right = p.right;
  a.Lq = p.Lq, a.Lk = p.Lk;
  return a;
}
Visits window_visits(const Problem& p) {
  const ch05::Tiles t = tiles(p);
  return each_q_tile(p, [&](int Lq, int Lk, int q0) {
    AttentionParams a = window_of(p);
    a.Lq = Lq, a.Lk = Lk;
    const ch10::TileRange r = ch10::window_tiles(a, q0, t.Br, t.Bc), full = ch10::window_full(a, q0, t.Br, t.Bc);
    return std::pair<long long, long long>(r.count, r.count - full.count);
  });
}

// Step f: the window's tiles in closed form (masks.h), no lists; windows only, alone or in each
// sequence of a packed batch (step e's map first).
Variant window_variant() {
  Variant v = masks_variant("window", "FlashAttention-2's window_size: each Q tile's K/V tiles a range in closed form, no lists; "
                                      "alone or in each sequence of a packed batch");
  v.mask_mods = {ModKind::window, ModKind::varlen_window};
  v.needs_mask_mod = true;  // its Policy reads the window's sides
  v.causal = false;  // is_causal is the window (-1, 0), which the command line makes of --causal with --window-size
  v.score_mod = true;  // step d's, on every visited tile
  v.max_heads = 0;   // heads on the grid's x
  v.workspace_bytes = [](const Problem& p) { return p.packed() ? map_bytes(p) : size_t{0}; };  // step e's map
  v.hbm_bytes = [map = v.workspace_bytes](const Problem& p) {
    return p.fa2_bytes_visited(window_visits(p).pairs, tiles(p).Bc) + 2.0 * static_cast<double>(map(p));
  };
  v.plan = [](const Problem& p) {
    const Visits n = window_visits(p);
    if (p.packed()) return packed_plan(p, n.tiles, n.pairs, n.masked);
    char s[200];
    std::snprintf(s, sizeof s, "Br = %d, Bc = %d: %lld of %lld (Q tile, K/V tile) pairs visited per head, %lld masked; "
                  "Q tiles launched from the %s", tiles(p).Br, tiles(p).Bc, n.pairs,
                  static_cast<long long>(layout(p).q_tiles) * layout(p).kv_tiles, n.masked, ch10::window_from_end(window_of(p)) ? "last" : "first");
    return std::string(s);
  };
  v.run = [](const AttentionParams& p, Stages& st) {
    if (p.mod.kind == ModKind::varlen_window) {
      st.run(kTileMap, [&] { return ch10::write_tile_map(p, p.workspace); }, 0, false);
      st.run("FlashAttention-2 over the window's tiles in each sequence", [&] { return ch10::packed_window(p, p.workspace); });
      return;
    }
    st.run("FlashAttention-2 over the window's tiles", [&] { return ch10::window(p); });
  };
  return v;
}

const Register mask_tensor(mask_tensor_variant());
const Register mask_mod(mask_mod_variant());
const Register block_mask(block_mask_variant());
const Register score_mod(score_mod_variant());
const Register varlen(varlen_variant());
const Register window(window_variant());

}  // namespace
