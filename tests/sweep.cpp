#include "sweep.h"

#include <iterator>
#include <utility>

namespace attn {

// is_causal varies fastest (none, top-left, bottom-right): test_variants.cpp's reverse and shuffled
// orders take one problem of each three.
std::vector<Problem> shape_sweep() {
  struct Lengths {
    int Lq, Lk;
  };
  std::vector<Problem> out;
  for (Lengths l : {Lengths{1, 1}, Lengths{17, 17}, Lengths{97, 97}, Lengths{257, 257}, Lengths{17, 97},
                    Lengths{97, 17}, Lengths{1, 257}, Lengths{200, 1}})
    for (int d : {32, 64, 80, 128})
      for (DType t : {DType::fp32, DType::fp16, DType::bf16})
        for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
          Problem p;
          const bool big = l.Lq >= 97 || l.Lk >= 97;  // keeps the emulated sweep within minutes
          p.B = big ? 1 : 2;
          p.H = big ? 2 : 3;
          p.Lq = l.Lq, p.Lk = l.Lk, p.d = d, p.dtype = t, p.causal = c;
          p.seed = static_cast<uint64_t>(l.Lq * 1000 + l.Lk + d);
          out.push_back(p);
        }
  // A long K: 9 tiles of 128 keys (the last ragged) turn every stage of a ring over several times,
  // so that a pipeline's barrier phases and refills are exercised beyond their first uses
  // (chapter 09's rings of 2 and 3 stages; chapter 05's cp.async).
  for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
    Problem p;
    p.B = 1, p.H = 1, p.Lq = 130, p.Lk = 1100, p.d = 64, p.dtype = DType::fp16, p.causal = c;
    p.seed = 1100;
    out.push_back(p);
  }
  // The other head dims the tensor-core chapters state: 96 and 256.
  for (Lengths l : {Lengths{17, 97}, Lengths{97, 17}, Lengths{130, 130}})
    for (int d : {96, 256})
      for (DType t : {DType::fp16, DType::bf16})
        for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
          Problem p;
          p.B = 1, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk, p.d = d, p.dtype = t, p.causal = c;
          out.push_back(p);
        }
  return out;
}

std::vector<Problem> mask_sweep() {
  struct Lengths {
    int Lq, Lk;
  };
  std::vector<Problem> out;
  for (Lengths l : {Lengths{17, 97}, Lengths{97, 17}, Lengths{130, 130}})
    for (MaskKind m : {MaskKind::boolean, MaskKind::additive})
      for (bool per_head : {false, true})
        for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
          Problem p;
          p.B = 2, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk, p.d = 64, p.dtype = t;
          p.mask = m, p.mask_per_head = per_head;
          out.push_back(p);
        }
  for (DType t : {DType::fp32, DType::fp16}) {  // rows too long to keep on chip (chapter 02's long-row path)
    Problem p;
    p.B = 1, p.H = 1, p.Lq = 3, p.Lk = 60001, p.d = 32, p.dtype = t, p.mask = MaskKind::additive;
    out.push_back(p);
  }
  Problem scaled;  // an explicit scale, as torch's scale= argument
  scaled.Lq = 40, scaled.Lk = 70, scaled.d = 64, scaled.dtype = DType::fp16, scaled.scale_override = 0.05;
  out.push_back(scaled);
  return out;
}

namespace {
// A packed batch (chapter 10's step e) of these query and key lengths: Lq and Lk their sums, B = 1.
Problem packed(std::vector<int> q, std::vector<int> k) {
  Problem p;
  p.pack(std::move(q), std::move(k));
  return p;
}
// The same with FlashAttention-2's window (left, right) in each sequence (step f's).
Problem packed_window(std::vector<int> q, std::vector<int> k, int left, int right) {
  Problem p;
  p.mod = ModKind::window, p.left = left, p.right = right;
  p.pack(std::move(q), std::move(k));
  return p;
}
}  // namespace

namespace {
// A block mask of bq x bkv blocks (mask_mod blocks), each block unlisted, partial or full by a hash of
// (seed, its row, its column), a third each, listed from the last column (FlexAttention's lists keep
// no order); without full lists, every listed block partial.
Problem::BlockLists drawn_blocks(int Lq, int Lk, int bq, int bkv, uint32_t seed, bool full) {
  Problem::BlockLists b;
  b.block_q = bq, b.block_kv = bkv;
  const int qb = (Lq + bq - 1) / bq, kb = (Lk + bkv - 1) / bkv;
  b.kv_num_blocks.assign(static_cast<size_t>(qb), 0);
  if (full) b.full_kv_num_blocks.assign(static_cast<size_t>(qb), 0);
  for (int r = 0; r < qb; ++r)
    for (int c = kb - 1; c >= 0; --c) {
      uint32_t x = seed * 0x9E3779B1u ^ static_cast<uint32_t>(r) * 0x85EBCA77u ^ static_cast<uint32_t>(c) * 0xC2B2AE3Du;
      x ^= x >> 15, x *= 0x2C1B3C6Du, x ^= x >> 12;
      const uint32_t cls = x % 3;
      if (cls == 2 && full) b.full_kv_num_blocks[static_cast<size_t>(r)]++, b.full_kv_indices.push_back(c);
      else if (cls != 0) b.kv_num_blocks[static_cast<size_t>(r)]++, b.kv_indices.push_back(c);
    }
  // The lists end to end by Q block: the loop above appended each row after the last.
  return b;
}
}  // namespace

std::vector<Problem> mask_mod_sweep() {
  struct Mod {
    ModKind kind;
    int window, prefix;
  };
  const Mod mods[] = {{ModKind::sliding_window, 0, 0}, {ModKind::sliding_window, 5, 0},  {ModKind::sliding_window, 300, 0},
                      {ModKind::prefix_lm, 0, 0},      {ModKind::prefix_lm, 0, 70},      {ModKind::prefix_lm, 0, 500},
                      {ModKind::document, 0, 0},       {ModKind::document_causal, 0, 0}, {ModKind::random_blocks, 0, 0}};
  struct Lengths {
    int Lq, Lk;
  };
  const int dims[] = {32, 64, 96, 128, 256};
  std::vector<Problem> out;
  // Each pattern in both dtypes at each length; its 8 problems walk the 5 head dims from an offset
  // of its own, so that every pattern meets every head dim.
  for (size_t m = 0; m < std::size(mods); ++m) {
    size_t k = m;
    for (Lengths l : {Lengths{1, 1}, Lengths{130, 130}, Lengths{97, 200}, Lengths{200, 97}})
      for (DType t : {DType::fp16, DType::bf16}) {
        Problem p;
        p.B = l.Lq == 1 ? 2 : 1, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk;
        p.d = dims[k++ % std::size(dims)], p.dtype = t;
        p.mod = mods[m].kind, p.window = mods[m].window, p.prefix = mods[m].prefix;
        p.seed = k * 31 + m;
        out.push_back(p);
      }
  }
  // FlashAttention-2's windows (left, right), bottom-right: the diagonal alone, narrower than a tile,
  // causal (right 0), wider than Lk, two-sided; each at every length (rows that see nothing where
  // Lq > Lk), walking the dtypes and head dims.
  const std::pair<int, int> windows[] = {{0, 0}, {5, 3}, {-1, 0}, {300, -1}, {40, 70}};
  for (size_t w = 0; w < std::size(windows); ++w)
    for (Lengths l : {Lengths{1, 1}, Lengths{130, 130}, Lengths{97, 200}, Lengths{200, 97}}) {
      Problem p;
      p.B = l.Lq == 1 ? 2 : 1, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk;
      p.d = dims[(w + static_cast<size_t>(l.Lq)) % std::size(dims)], p.dtype = (w + l.Lk) % 2 ? DType::bf16 : DType::fp16;
      p.mod = ModKind::window, p.left = windows[w].first, p.right = windows[w].second;
      p.seed = 97 + w * 5 + static_cast<size_t>(l.Lq);
      out.push_back(p);
    }
  // Documents of given lengths (--documents), causal in two of them: one of a single position,
  // boundaries on and off a tile's edge (Bc = 64 at d = 64, 32 at d = 128), one document for every key.
  const std::vector<int> given[] = {{1}, {64, 1, 65}, {37, 100, 63}, {200}, {1, 63, 64, 72}};
  const Lengths given_at[] = {{1, 1}, {130, 130}, {97, 200}, {200, 97}, {200, 130}};
  for (size_t i = 0; i < std::size(given); ++i) {
    Problem p;
    p.B = 1, p.H = 2, p.Lq = given_at[i].Lq, p.Lk = given_at[i].Lk;
    p.d = i % 2 ? 128 : 64, p.dtype = i % 2 ? DType::bf16 : DType::fp16;
    p.mod = i % 3 == 1 ? ModKind::document_causal : ModKind::document, p.doc_lengths = given[i];
    p.seed = 211 + i;
    out.push_back(p);
  }
  // Block masks given as lists (mask_mod blocks): blocks of one tile, of none (48 x 80, 7 keys, single
  // queries), larger than the problem; with and without full lists; a Q block with nothing listed
  // (rows that see no key), walking the head dims and dtypes.
  struct Given {
    int Lq, Lk, bq, bkv;
    bool full;
  };
  const Given lists[] = {{1, 1, 16, 16, true}, {130, 130, 64, 64, true}, {97, 200, 48, 80, false}, {200, 97, 128, 128, true},
                         {200, 130, 1, 7, true}, {130, 200, 256, 64, false}};
  for (size_t i = 0; i < std::size(lists); ++i) {
    const Given g = lists[i];
    Problem p;
    p.B = 1, p.H = 2, p.Lq = g.Lq, p.Lk = g.Lk, p.d = dims[(i + 2) % std::size(dims)], p.dtype = i % 2 ? DType::bf16 : DType::fp16;
    p.mod = ModKind::blocks, p.blocks = drawn_blocks(g.Lq, g.Lk, g.bq, g.bkv, static_cast<uint32_t>(5 + i), g.full);
    if (i == 0) p.blocks.kv_num_blocks = {1}, p.blocks.kv_indices = {0}, p.blocks.full_kv_num_blocks = {0}, p.blocks.full_kv_indices = {};
    if (i == 3) {  // Q block 1 lists nothing
      p.blocks.kv_indices.resize(static_cast<size_t>(p.blocks.kv_num_blocks[0]));
      p.blocks.full_kv_indices.resize(static_cast<size_t>(p.blocks.full_kv_num_blocks[0]));
      p.blocks.kv_num_blocks[1] = p.blocks.full_kv_num_blocks[1] = 0;
    }
    p.seed = 301 + i;
    out.push_back(p);
  }
  for (double scale : {-0.5, 0.05}) {  // a negative scale: every tile masked, the full ones too
    Problem p;
    p.H = 2, p.Lq = 150, p.Lk = 170, p.d = 64, p.dtype = DType::fp16, p.mod = ModKind::document, p.scale_override = scale;
    out.push_back(p);
  }
  // Packed batches in each alignment of is_causal: one sequence of one query; sequences of 0, 1 and
  // ragged lengths, one of two Q tiles; in each sequence Lq > Lk (rows that see no key bottom-right)
  // and Lq < Lk, a sequence with queries and no key; many short ones, several to a tile of 64 keys.
  // Each packing walks the head dims and dtypes.
  const std::vector<int> short_ones = {1, 2, 3, 5, 8, 13, 21, 34, 55, 7, 9, 11};
  const std::pair<std::vector<int>, std::vector<int>> packings[] = {{{1}, {1}},
                                                                    {{100, 0, 37, 129, 1}, {100, 0, 37, 129, 1}},
                                                                    {{200, 5, 64, 9}, {3, 250, 0, 70}},
                                                                    {short_ones, short_ones}};
  size_t k = 0;
  for (const auto& [q, kv] : packings)
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
      Problem p = packed(q, kv);
      p.H = q.size() == 1 ? 3 : 2, p.causal = c, p.d = dims[k % std::size(dims)], p.dtype = k % 2 ? DType::bf16 : DType::fp16;
      p.seed = 300 + k++;
      out.push_back(p);
    }
  // Grouped-query attention over packed batches: 4 query heads on 2 K/V heads, and 3 on 1 (multi-query),
  // at every head dim.
  for (int d : dims)
    for (auto [H, Hkv] : {std::pair{4, 2}, std::pair{3, 1}}) {
      Problem p = H == 4 ? packed({100, 0, 37, 129, 1}, {100, 0, 37, 129, 1}) : packed({200, 5, 64, 9}, {3, 250, 0, 70});
      p.H = H, p.Hkv = Hkv, p.d = d, p.dtype = k % 2 ? DType::bf16 : DType::fp16;
      p.causal = k % 3 == 0 ? Causal::none : k % 3 == 1 ? Causal::top_left : Causal::bottom_right;
      p.seed = 300 + k++;
      out.push_back(p);
    }
  // Windows in each sequence of a packed batch (step f's; flash_attn_varlen_func's window_size): the
  // diagonal alone, causal (right 0) and narrower than a tile, one-sided and wider than a sequence,
  // two-sided, unbounded; on the packings above, walking the head dims and dtypes, every other one
  // with grouped K/V heads.
  const std::pair<int, int> packed_windows[] = {{0, 0}, {5, 0}, {-1, 3}, {300, -1}, {40, 70}, {-1, -1}};
  for (size_t w = 0; w < std::size(packed_windows); ++w) {
    const auto& [q, kv] = packings[1 + w % 3];
    Problem p = packed_window(q, kv, packed_windows[w].first, packed_windows[w].second);
    p.H = w % 2 ? 4 : 2, p.Hkv = w % 2 ? 2 : 0, p.d = dims[k % std::size(dims)], p.dtype = k % 2 ? DType::bf16 : DType::fp16;
    p.seed = 300 + k++;
    out.push_back(p);
  }
  // 300 sequences of 0 to 3 queries and keys: the tile map's scan takes two rounds of 256, the second
  // carrying the first's count.
  std::vector<int> many_q, many_k;
  for (int s = 0; s < 300; ++s) many_q.push_back(s % 4), many_k.push_back((s + 1) % 4);
  Problem many = packed(many_q, many_k);
  many.H = 1, many.d = 32, many.causal = Causal::bottom_right, many.seed = 350;
  out.push_back(many);
  return out;
}

std::vector<Problem> score_mod_sweep() {
  struct Mods {
    float softcap;
    bool alibi;
  };
  struct Mask {
    Causal causal;
    ModKind mod;
    int window;
  };
  const Mods mods[] = {{0.5f, false}, {8.f, false}, {0.f, true}, {2.f, true}};
  const Mask masks[] = {{Causal::none, ModKind::none, 0}, {Causal::top_left, ModKind::none, 0},
                        {Causal::bottom_right, ModKind::none, 0}, {Causal::none, ModKind::sliding_window, 5},
                        {Causal::none, ModKind::document, 0}, {Causal::none, ModKind::document_causal, 0},
                        {Causal::none, ModKind::random_blocks, 0}};
  struct Lengths {
    int Lq, Lk;
  };
  const Lengths lengths[] = {{1, 1}, {130, 130}, {97, 200}, {200, 97}};
  const int dims[] = {32, 64, 96, 128, 256};
  std::vector<Problem> out;
  size_t k = 0;  // walks lengths, dims, dtypes and head counts so that each mod meets each of them
  for (Mods s : mods)
    for (Mask m : masks) {
      Problem p;
      const Lengths l = lengths[k % std::size(lengths)];
      p.B = l.Lq == 1 ? 2 : 1, p.H = k % 3 == 0 ? 3 : 2, p.Lq = l.Lq, p.Lk = l.Lk;
      p.d = dims[k % std::size(dims)], p.dtype = k % 2 ? DType::bf16 : DType::fp16;
      p.softcap = s.softcap, p.alibi = s.alibi;
      p.causal = m.causal, p.mod = m.mod, p.window = m.window;
      p.seed = 7 * k + 3;
      ++k;
      out.push_back(p);
    }
  Problem negative;  // a negative scale: every tile through the mask
  negative.H = 2, negative.Lq = 150, negative.Lk = 170, negative.d = 64, negative.dtype = DType::fp16;
  negative.softcap = 3.f, negative.alibi = true, negative.scale_override = -0.5;
  out.push_back(negative);
  // Packed batches (step e's): each mod in each sequence, Lq > Lk and Lq < Lk in a sequence (ALiBi's
  // diagonal each sequence's), walking the head dims, every other one with grouped K/V heads.
  for (Mods s : mods)
    for (Causal c : {Causal::none, Causal::bottom_right}) {
      Problem p = packed({100, 0, 37, 129, 1}, {60, 7, 37, 200, 1});
      p.H = k % 2 ? 4 : 3, p.Hkv = k % 2 ? 2 : 0, p.causal = c;
      p.d = dims[k % std::size(dims)], p.dtype = k % 2 ? DType::bf16 : DType::fp16;
      p.softcap = s.softcap, p.alibi = s.alibi;
      p.seed = 7 * k + 3;
      ++k;
      out.push_back(p);
    }
  // Windows (step f's) with each mod, alone (Lq != Lk: ALiBi's diagonal bottom-right) and in each
  // sequence of a packed batch (Gemma 2's softcap in a sliding window; ALiBi on each sequence's own
  // diagonal), walking the head dims, every other packed one with grouped K/V heads.
  for (Mods s : mods) {
    Problem alone;
    alone.H = k % 3 == 0 ? 3 : 2, alone.Lq = 97, alone.Lk = 200, alone.mod = ModKind::window, alone.left = 40, alone.right = 0;
    Problem in_each = packed_window({100, 0, 37, 129, 1}, {60, 7, 37, 200, 1}, 30, k % 2 ? 0 : 20);
    in_each.H = k % 2 ? 4 : 3, in_each.Hkv = k % 2 ? 2 : 0;
    for (Problem* p : {&alone, &in_each}) {
      p->d = dims[k % std::size(dims)], p->dtype = k % 2 ? DType::bf16 : DType::fp16;
      p->softcap = s.softcap, p->alibi = s.alibi;
      p->seed = 7 * k + 3;
      ++k;
      out.push_back(*p);
    }
  }
  // The user's ALiBi slopes (FlashAttention-2's alibi_slopes), a negative and a zero one among them:
  // per (batch, head) on step d's lists, per (sequence, head) in a packed batch (step e, grouped K/V
  // heads) and per head beside a cap in a window (step f).
  Problem lists;
  lists.B = 2, lists.H = 3, lists.Lq = 97, lists.Lk = 200, lists.mod = ModKind::document, lists.alibi = true;
  lists.alibi_slopes = {0.7f, -0.05f, 0.f, 0.3f, 1.5f, 0.01f};
  Problem each = packed({100, 0, 37, 129, 1}, {60, 7, 37, 200, 1});
  each.H = 4, each.Hkv = 2, each.causal = Causal::bottom_right, each.alibi = true;
  for (int s = 0; s < 5; ++s)  // one per (sequence, head), FlashAttention-2's varlen (batch_size, nheads)
    for (float x : {0.02f, 0.9f, -0.01f, 0.f}) each.alibi_slopes.push_back(x * static_cast<float>(s + 1));
  Problem window;
  window.H = 2, window.Lq = 150, window.Lk = 150, window.mod = ModKind::window, window.left = 60, window.right = 20;
  window.softcap = 8.f, window.alibi = true, window.alibi_slopes = {0.4f, 0.003f};
  for (Problem* p : {&lists, &each, &window}) {
    p->d = dims[k % std::size(dims)], p->dtype = k % 2 ? DType::bf16 : DType::fp16;
    p->seed = 7 * k + 3;
    ++k;
    out.push_back(*p);
  }
  return out;
}

std::vector<Problem> scale_sweep() {
  std::vector<Problem> out;
  for (double scale : {1e4, 1e-4, -1.0})
    for (DType t : {DType::fp32, DType::fp16})
      for (Causal c : {Causal::none, Causal::top_left}) {
        Problem p;
        p.Lq = 70, p.Lk = 200, p.d = 64, p.dtype = t, p.causal = c, p.scale_override = scale;
        out.push_back(p);
      }
  for (double scale : {1e4, 1e-4, -1.0}) {  // chapter 10's steps with a window, step f's only problems
    Problem p;
    p.Lq = 70, p.Lk = 200, p.d = 64, p.dtype = DType::fp16, p.mod = ModKind::window, p.left = 20, p.right = 5;
    p.scale_override = scale;
    out.push_back(p);
    Problem q = packed({30, 0, 40}, {150, 10, 40});  // step e's only problems: a packed batch
    q.d = 64, q.dtype = DType::fp16, q.causal = Causal::bottom_right, q.scale_override = scale;
    out.push_back(q);
    Problem w = packed_window({30, 0, 40}, {150, 10, 40}, 20, 5);  // and step f's in a packed batch
    w.d = 64, w.dtype = DType::fp16, w.scale_override = scale;
    out.push_back(w);
  }
  return out;
}

std::vector<Problem> backward_sweep() {
  struct Lengths {
    int Lq, Lk;
  };
  struct Kind {
    int d;
    DType t;
  };
  std::vector<Problem> out;
  // Lengths crossing the tiles of 32 (step b) and 64 (steps c, d) rows; Lq > Lk under bottom-right
  // alignment leaves rows that see no key, Lq < Lk under top-left keys that no row sees. Each
  // (lengths, alignment) meets three of the (head dim, dtype) pairs in turn: every head dim of
  // every step, in every dtype it takes.
  const Lengths lengths[] = {{1, 1}, {1, 70}, {70, 1}, {33, 33}, {37, 100}, {100, 37}, {130, 97}, {200, 200}, {97, 257}};
  const Kind kinds[] = {{32, DType::fp16}, {64, DType::bf16}, {80, DType::fp32}, {96, DType::fp16}, {128, DType::bf16},
                        {64, DType::fp32}, {128, DType::fp16}, {32, DType::bf16}, {96, DType::bf16}, {128, DType::fp32},
                        {64, DType::fp16}, {32, DType::fp32}};
  size_t k = 0;
  for (Lengths l : lengths)
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (int rep = 0; rep < 3; ++rep, ++k) {
        Problem p;
        const bool big = l.Lq * l.Lk > 10000;
        p.B = big ? 1 : 2, p.H = big ? 2 : 3;
        p.Lq = l.Lq, p.Lk = l.Lk, p.causal = c;
        p.d = kinds[k % std::size(kinds)].d;
        p.dtype = kinds[k % std::size(kinds)].t;
        p.seed = static_cast<uint64_t>(k + 1);
        out.push_back(p);
      }
  struct Masked {
    Lengths l;
    Kind kind;
    bool per_head;
  };
  for (MaskKind m : {MaskKind::boolean, MaskKind::additive})  // every 7th row (from row 3) fully masked
    for (Masked x : {Masked{{45, 77}, {64, DType::fp16}, false}, Masked{{130, 97}, {128, DType::bf16}, true},
                     Masked{{45, 77}, {80, DType::fp32}, true}}) {
      Problem p;
      p.B = 2, p.H = 1, p.Lq = x.l.Lq, p.Lk = x.l.Lk, p.d = x.kind.d, p.dtype = x.kind.t;
      p.mask = m, p.mask_per_head = x.per_head;
      out.push_back(p);
    }
  for (double scale : {0.05, -0.3}) {  // an explicit scale, as torch's scale= argument
    Problem p;
    p.B = 1, p.H = 1, p.Lq = 40, p.Lk = 70, p.d = 128, p.dtype = scale > 0 ? DType::fp16 : DType::bf16;
    p.causal = scale > 0 ? Causal::none : Causal::bottom_right;
    p.scale_override = scale;
    out.push_back(p);
  }
  return out;
}

}  // namespace attn
