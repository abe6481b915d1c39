// test_decode_model.cpp: chapter 08's targets, by the model of common/model at decoding's real
// sizes (Llama-3-8B's heads: Hq = 32, Hkv = 8, d = 128, fp16), from the emulator's counters:
//   - the best step's traffic and pipes allow it to stream the cache at 85 % or more of what a
//     copy reaches of the H100's DRAM bandwidth (gpus.h's [copy]: 0.90 of the datasheet's, the
//     model's DRAM rate) wherever the cache exceeds the L2 (the cache's bytes over the modelled time
//     without the latency floor, launches included), DRAM-bound, and its DRAM reads are the cache
//     once (GQA: each KV head read once). With the latency floor (model.h) the model has steps
//     b to h short of it, their warps waiting on their loads and their chains of arithmetic, as
//     the H200 measured step d (results/nvidia-h200/targets.md: 20 % of copy bandwidth at B = 1,
//     32k), and step i just at it (85.5 % at B = 1, 32k: decode_steps.txt). Both figures are
//     printed; the target is the kernel's to meet on a GPU;
//   - at B = 1 and a 32k context, splitting the keys makes it 4 times faster or more than the same
//     kernel unsplit (--splits 1).
// Of sequences of one length, KV head 0 of the first is emulated and its counts times Hkv x B stand
// for all (profile_decode).
// Every table is printed.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "harness/decode/decode.h"
#include "harness/profile.h"

using namespace attn;

namespace {

DecodeProblem llama(int B, int context, int splits = 0) {
  DecodeProblem p;
  p.B = B, p.Hq = 32, p.Hkv = 8, p.d = 128, p.Lq = 1, p.dtype = DType::fp16;
  p.cache_lens = {context - 1};  // with the new token: `context` keys
  p.paged = true, p.page_size = 16;
  p.splits = splits;
  return p;
}

const DecodeVariant& best() {
  const DecodeVariant* v = best_decode();
  if (v == nullptr) FAIL("no best decoding variant");
  return *v;
}

struct Outcome {
  double us = 0, dram_read = 0;
  std::string bound;
  double floors_us = 0;      // without the latency floor: what the traffic and the pipes allow
  std::string floors_bound;  // of the longest launch, without it
};
Outcome model(Profiler& profiler, const DecodeVariant& v, const DecodeProblem& p) {
  RunOptions checks;
  checks.sample = true;
  const Profile& pr = profile_decode(profiler, v, p, true, checks, false);
  INFO(v.info.name << " on " << p.describe() << ": " << pr.result.verdict.why);
  REQUIRE(pr.result.verdict.pass);
  Outcome m;
  m.us = pr.us, m.bound = pr.bound;
  for (const StageProfile& s : pr.stages) m.dram_read += s.counters.dram_read_sectors * 32.0;
  const Remodelled floors = remodel(pr, profiler.gpu(), false);
  m.floors_us = floors.us, m.floors_bound = floors.bound;
  return m;
}

}  // namespace

TEST_CASE("chapter 08's best streams the cache at 85 % of what a copy reaches of DRAM; splits pay at B = 1", "[decode_model]") {
  ProfileOptions o;
  Profiler profiler(o);
  const gpus::Gpu& gpu = profiler.gpu();
  const DecodeVariant& v = best();
  std::string table = "modelled on " + std::string(gpu.name) + " (" + v.info.name + "):\n";
  struct Shape {
    int B, context;
  };
  double split_us = 0;
  for (Shape s : {Shape{1, 32768}, Shape{8, 8192}, Shape{64, 1024}}) {
    const DecodeProblem p = llama(s.B, s.context);
    REQUIRE(p.cache_bytes() > gpu.l2_mb * 1e6);  // the shapes where the target applies
    const Outcome m = model(profiler, v, p);
    if (s.B == 1) split_us = m.us;
    // Shares of the datasheet's rate (published decoding figures quote it) and of what a copy
    // reaches (gpus.h's [copy]: the model's DRAM rate, and the target's).
    const double share = p.cache_bytes() / (m.floors_us * 1e-6) / (gpu.dram_tb_s * 1e12);
    const double of_copy = share / gpu.dram_copy_share;
    const double with_latency = p.cache_bytes() / (m.us * 1e-6) / (gpu.dram_tb_s * 1e12);
    char line[400];
    std::snprintf(line, sizeof line, "  B=%-3d context %6d: %9.2f us, %s-bound, cache %7.1f MB, DRAM read %7.1f MB, %5.1f %% of %.2f TB/s "
                  "(%5.1f %% of a copy's %.2f; %d splits); with the latency floor %9.2f us, %s-bound, %5.1f %% (%5.1f %%)\n",
                  s.B, s.context, m.floors_us, m.floors_bound.c_str(), p.cache_bytes() / 1e6, m.dram_read / 1e6, 100 * share,
                  gpu.dram_tb_s, 100 * of_copy, gpu.dram_copy_tb_s(), v.splits_for(p), m.us, m.bound.c_str(), 100 * with_latency,
                  100 * with_latency / gpu.dram_copy_share);
    table += line;
    INFO(table);
    CHECK(m.floors_bound == "DRAM");
    CHECK(of_copy >= 0.85);
    // The cache once, and little beside it (the queries, the page table, the splits' partials).
    CHECK(m.dram_read >= p.cache_bytes());
    CHECK(m.dram_read <= 1.03 * p.cache_bytes());
  }
  const Outcome unsplit = model(profiler, v, llama(1, 32768, 1));
  char line[160];
  std::snprintf(line, sizeof line, "  B=1 context 32768 unsplit: %9.2f us: the split is %.2fx faster\n", unsplit.us,
                unsplit.us / split_us);
  table += line;
  std::printf("%s", table.c_str());
  INFO(table);
  CHECK(unsplit.us >= 4 * split_us);
}

TEST_CASE("the counts of one KV head of one sequence times Hkv x B model the whole problem", "[decode_model]") {
  ProfileOptions o;
  Profiler profiler(o);
  RunOptions checks;
  // Every step's kernels: step a's append, gather, lean_loop and scatter; the others' attention
  // (b to d unpaged, e to i paged) and combine. One sequence and four.
  DecodeProblem ragged = llama(4, 600);
  ragged.cache_lens = {599, 340, 599, 77};
  CHECK_FALSE(decode_sampled(ragged));  // sequences of other lengths are emulated whole
  for (const DecodeVariant& v : decode_registry())
    for (int B : {1, 4}) {
      DecodeProblem p = llama(B, 600);
      p.Lq = 3, p.causal = true;
      p.paged = v.paged;
      const Profile whole = profile_decode(profiler, v, p, false, checks, false);
      const Profile part = profile_decode(profiler, v, p, true, checks, false);
      REQUIRE(whole.result.verdict.pass);
      REQUIRE(part.result.verdict.pass);
      double dram_whole = 0, dram_part = 0, blocks_whole = 0, blocks_part = 0;
      for (const StageProfile& s : whole.stages)
        dram_whole += s.counters.dram_read_sectors + s.counters.dram_write_sectors, blocks_whole += s.counters.blocks;
      for (const StageProfile& s : part.stages)
        dram_part += s.counters.dram_read_sectors + s.counters.dram_write_sectors, blocks_part += s.counters.blocks;
      const DecodeProblem e = decode_emulated(p, true);
      INFO(v.info.name << " on " << p.describe() << ": whole " << whole.us << " us, " << dram_whole << " sectors; "
                       << e.describe() << " x " << p.B / e.B * p.Hkv / e.Hkv << ": " << part.us << " us, " << dram_part
                       << " sectors");
      CHECK(e.Hkv == 1);
      CHECK(part.us == Approx(whole.us).epsilon(0.01));
      CHECK(dram_part == Approx(dram_whole).epsilon(0.01));
      CHECK(blocks_part == blocks_whole);
    }
}

TEST_CASE("chapter 08's merge: a warp's shared stores never conflict, whatever rows a block holds", "[decode_model]") {
  // merge_o's padding (decoding.h, merge_group_words): the key groups sharing a warp store to 32
  // different banks at R = 1 (one row per block) and at R = 2, 4 and 8 (a KV head's g query rows
  // packed), at every head dim of the chapter. Unpadded, R = 4 at d = 128 was 1.80 wavefronts per store.
  ProfileOptions o;
  Profiler profiler(o);
  RunOptions checks;
  for (int d : {32, 64, 128, 256})
    for (int g : {1, 2, 4, 8})
      for (const char* name : {"decode_kernel", "gqa_packed", "paged"}) {
        const DecodeVariant* v = find_decode(name);
        REQUIRE(v != nullptr);
        DecodeProblem p = llama(1, 300);
        p.d = d, p.Hkv = 32 / g, p.paged = v->paged;
        INFO(name << " on " << p.describe());
        const Profile pr = profile_decode(profiler, *v, p, false, checks, false);
        REQUIRE(pr.result.verdict.pass);
        double stores = 0;
        for (const StageProfile& s : pr.stages)
          for (int k = simt::kSharedStore32; k <= simt::kSharedStore128; ++k) {
            INFO(s.stage << ": " << simt::shared_kind_name(k));
            stores += s.counters.shared[k].requests;
            CHECK(s.counters.shared[k].conflicts() == 0);
          }
        CHECK(stores > 0);
      }
}
