// variants.cpp: chapter 08 in the decoding registry (harness/decode/decode.h): its nine steps, the kernels
// each launches, and their cost models.
//
// Bytes, with t the dtype's size, C the cache's K and V of every key attended once
// (DecodeProblem::cache_bytes), X = B Lq Hq d t (Q read, O written), A the append (the new K and V
// read and written once):
//   a  A + gather (Q, and g C read, as much written) + chapter 05's kernel (Q and g C read, O
//      written) + scatter (O read and written): A + 3 g C + 6 X
//   b  A + g C + 2 X            every query head reads its KV head's keys
//   c  b + the splits' partial O and lse written and read back: 2 S B Lq Hq (d + 1) 4
//   d  A + ceil(g Lq / R) C + 2 X + the partials   every block of R rows reads the keys once
//   e  d + each block's page numbers (4 bytes per page)
//   f  e's bytes: V is read at another point of the loop, not more of it
//   g to i  f's bytes (steps h and i with more splits, so more partials)
#include <cmath>
#include <string>
#include <utility>

#include "05_flash_v2/flash_v2.h"
#include "decoding.h"
#include "harness/decode/decode.h"

namespace {
using namespace attn;

double t_of(const DecodeProblem& p) { return static_cast<double>(dtype_size(p.dtype)); }
double qo_bytes(const DecodeProblem& p) { return 2.0 * p.B * p.Lq * p.Hq * p.d * t_of(p); }
double append_bytes(const DecodeProblem& p) { return p.append ? 4.0 * p.B * p.Lq * p.Hkv * p.d * t_of(p) : 0; }
int rows_per_block(const DecodeProblem& p) { return ch08::rows_per_block(p.group(), p.Lq); }
// Steps h and i: the blocks an SM holds of their kernel, to which it is held (decoding.h).
int occupancy_blocks(const DecodeProblem& p) { return ch08::occupancy_blocks(rows_per_block(p)); }
int chunks(const DecodeProblem& p) {
  const int rows = p.group() * p.Lq, R = rows_per_block(p);
  return (rows + R - 1) / R;
}
double partial_bytes(const DecodeProblem& p, int splits) {
  return splits > 1 ? 2.0 * splits * p.B * p.Lq * p.Hq * (p.d + 1) * 4.0 : 0;
}
// The block table's bytes: each chunk of a (sequence, KV head) reads each page's entry once, split
// or not (a split reads only its own pages).
double table_bytes(const DecodeProblem& p) {
  double pages = 0;
  for (int b = 0; b < p.B; ++b) pages += (p.keys(b) + p.page() - 1) / p.page();
  return 4.0 * pages * p.Hkv * chunks(p);
}

// The static shared memory of steps b to i's blocks: merge arrays for R rows.
size_t merge_smem(const DecodeProblem& p, int R) {
  return ch08::decode_smem_bytes(static_cast<int>(dtype_size(p.dtype)), p.d, R);
}
size_t packed_smem(const DecodeProblem& p) { return merge_smem(p, rows_per_block(p)); }
size_t row_smem(const DecodeProblem& p) { return merge_smem(p, 1); }

Variant info(const char* name, const char* description, bool best = false) {
  Variant v;
  v.chapter = "08_decoding";
  v.name = name;
  v.description = description;
  v.dtypes = {DType::fp16, DType::bf16};
  v.head_dims.list = as_vector(ch08::DecodeDims{});
  v.mask = false;
  v.best = best;
  v.cpu_flops_per_second = 1e8;
  return v;
}

std::string grid_plan(const DecodeProblem& p, int R, int splits) {
  const long long blocks = static_cast<long long>(p.B) * p.Hkv * ((p.group() * p.Lq + R - 1) / R) * splits;
  return std::to_string(R) + (R == 1 ? " row" : " rows") + " per block, " + std::to_string(splits) +
         (splits == 1 ? " split" : " splits") + ": " + std::to_string(blocks) + " blocks of " +
         std::to_string(ch08::kDecodeThreads) + " threads on " + std::to_string(decode_sms()) + " SMs";
}

// Step a appends in a stage of its own; steps b to i in their kernel (decode.cuh).
void append_stage(const DecodeParams& a, Stages& st) {
  st.run("append K, V", [&] { return ch08::append_kv(a); });
}

constexpr const char* kPerSequence = "gather, lean_loop, scatter (per sequence)";
const RegisterDecode prefill({
    .info = [] {
      Variant v = info("prefill_kernel", "chapter 05's best on each sequence, the cache copied to its layout with heads repeated");
      v.min_cc = 80;  // chapter 05's lean_loop: mma.sync m16n8k16, cp.async
      v.max_heads = 65535;  // lean_loop's grid has a row of blocks per head: Hq of them per sequence
      return v;
    }(),
    .paged = true,  // its copy reads through the block table
    .per_sequence_stage = kPerSequence,
    .workspace_bytes =
        [](const DecodeProblem& p, int) {
          return ch08::prefill_workspace(p.Hq, p.Lq, p.max_keys(), p.d, static_cast<int>(dtype_size(p.dtype)));
        },
    .hbm_bytes =
        [](const DecodeProblem& p, int) {
          return append_bytes(p) + 3.0 * p.group() * p.cache_bytes() + 3 * qo_bytes(p);
        },
    .plan = [](const DecodeProblem& p, int) { return std::to_string(p.B) + " x (gather, chapter 05's lean_loop on " +
                                                     std::to_string(p.Hq) + " heads, scatter)"; },
    .smem_bytes =
        [](const DecodeProblem& p) {
          return static_cast<size_t>(ch05::smem_bytes(ch05::Step::lean_loop, p.d, static_cast<int>(dtype_size(p.dtype))));
        },
    .run =
        [](const DecodeParams& a, Stages& st) {
          append_stage(a, st);
          st.run(kPerSequence, [&] { return ch08::prefill_kernel(a); });
        },
});

const RegisterDecode decode({
    .info = info("decode_kernel", "a block per query row streams its KV head's keys: 16-byte loads, softmax online"),
    .hbm_bytes = [](const DecodeProblem& p, int) { return append_bytes(p) + p.group() * p.cache_bytes() + qo_bytes(p); },
    .plan = [](const DecodeProblem& p, int) { return grid_plan(p, 1, 1); },
    .smem_bytes = row_smem,
    .run =
        [](const DecodeParams& a, Stages& st) {
          st.run("attention", [&] { return ch08::decode_kernel(a); });
        },
});

size_t split_bytes(const DecodeProblem& p, int splits) {
  return splits > 1 ? ch08::split_workspace(p.B, p.Lq, p.Hq, p.d, splits) : 0;
}

const RegisterDecode split({
    .info = info("split_kv", "Flash-Decoding: each sequence's keys split across blocks, the parts combined by their lse"),
    .splits = true,
    .workspace_bytes = split_bytes,
    .hbm_bytes =
        [](const DecodeProblem& p, int s) {
          return append_bytes(p) + p.group() * p.cache_bytes() + qo_bytes(p) + partial_bytes(p, s);
        },
    .plan = [](const DecodeProblem& p, int s) { return grid_plan(p, 1, s); },
    .smem_bytes = row_smem,
    .run =
        [](const DecodeParams& a, Stages& st) {
          st.run(a.splits > 1 ? "attention, per split" : "attention", [&] { return ch08::split_kv(a); });
          if (a.splits > 1) st.run("combine", [&] { return ch08::combine(a); });
        },
});

const RegisterDecode gqa({
    .info = info("gqa_packed", "the query rows of one KV head in one block: each K, V load serves all of them"),
    .splits = true,
    .rows_per_block = rows_per_block,
    .workspace_bytes = split_bytes,
    .hbm_bytes =
        [](const DecodeProblem& p, int s) {
          return append_bytes(p) + chunks(p) * p.cache_bytes() + qo_bytes(p) + partial_bytes(p, s);
        },
    .plan = [](const DecodeProblem& p, int s) { return grid_plan(p, rows_per_block(p), s); },
    .smem_bytes = packed_smem,
    .run =
        [](const DecodeParams& a, Stages& st) {
          st.run(a.splits > 1 ? "attention, per split" : "attention", [&] { return ch08::gqa_packed(a); });
          if (a.splits > 1) st.run("combine", [&] { return ch08::combine(a); });
        },
});

// Steps e to i: a paged cache, a KV head's rows packed, split; the kernel is the step's, and so are
// the blocks an SM holds of it, which the split heuristic fills (decode.h's default: two).
DecodeVariant paged_kernels(Variant v, cudaError_t (*kernel)(const DecodeParams&),
                            std::function<int(const DecodeProblem&)> blocks_per_sm = DecodeVariant{}.blocks_per_sm) {
  return {
      .info = std::move(v),
      .paged = true,
      .splits = true,
      .rows_per_block = rows_per_block,
      .blocks_per_sm = std::move(blocks_per_sm),
      .workspace_bytes = split_bytes,
      .hbm_bytes =
          [](const DecodeProblem& p, int s) {
            return append_bytes(p) + chunks(p) * p.cache_bytes() + qo_bytes(p) + partial_bytes(p, s) + table_bytes(p);
          },
      .plan = [](const DecodeProblem& p, int s) { return grid_plan(p, rows_per_block(p), s); },
      .smem_bytes = packed_smem,
      .run =
          [kernel](const DecodeParams& a, Stages& st) {
            st.run(a.splits > 1 ? "attention, per split" : "attention", [&] { return kernel(a); });
            if (a.splits > 1) st.run("combine", [&] { return ch08::combine(a); });
          },
  };
}
const RegisterDecode paged_step(paged_kernels(
    info("paged", "the cache in pages of any size, found through a block table per sequence"), ch08::paged));
const RegisterDecode kv_together_step(paged_kernels(
    info("kv_together", "each step's table entries, then its K and V rows, asked for before any is used: two waits per step"),
    ch08::kv_together));
const RegisterDecode rows_ahead_step(paged_kernels(
    info("rows_ahead", "the next step's K and V rows asked for before this step's arithmetic: the cache's wait hidden"),
    ch08::rows_ahead));
const RegisterDecode occupancy_step(paged_kernels(
    info("occupancy", "step g's kernel in the registers that let an SM hold more of its blocks (three at 4 rows), and the keys split to fill them"),
    ch08::occupancy, occupancy_blocks));
const RegisterDecode score_per_lane_step(paged_kernels(
    info("score_per_lane", "each score of a step summed, masked and exponentiated once, by one lane of its group, not by all of them", true),
    ch08::score_per_lane, occupancy_blocks));

}  // namespace
