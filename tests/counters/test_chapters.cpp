// test_chapters.cpp: what the counters say about the chapters' kernels, against what each
// chapter's note claims: coalescing, a single read of S, conflict-free swizzled tiles, as many
// mma.sync as the FLOP formula, the causal tiles skipped, and the modelled ranking of the chapters
// on the default problem (at GPU sizes: test_promise.cpp).
// Expectations come from formulas (sizes, tile counts), never from a previous run.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "counters_support.h"
#include "model/model.h"
#include "harness/runner.h"

using namespace attn;

namespace {

struct Profiled {
  std::vector<simt::Counters> stages;  // summed over each stage's launches
  std::vector<std::vector<simt::LaunchCounters>> launches;
  simt::Counters total;
  double modelled_us = 0;  // on the H100 of model/gpu.h
};

Problem problem(DType t, int n, int d, Causal c = Causal::none, int lk = 0) {
  Problem p;
  p.B = 1, p.H = 2, p.Lq = n, p.Lk = lk ? lk : n, p.d = d, p.dtype = t, p.causal = c;
  return p;
}

Profiled profile(const std::string& variant, const Problem& p, int sample_blocks = 1) {
  const Variant* v = find_variant(variant);
  REQUIRE(v != nullptr);
  REQUIRE(v->unsupported(p).empty());
  RunOptions o;
  o.reps = 1, o.warmup = 0, o.sample = false;
  const Inputs in = Inputs::generate(p);
  const Checker checker(p, in, o);
  const DeviceInputs dev(p, in);
  simt::counters::start({sample_blocks});
  const Result r = run_variant(*v, p, dev, checker, o);
  simt::counters::stop();
  INFO(variant << " on " << p.describe() << ": " << r.verdict.why);
  REQUIRE(r.verdict.pass);  // counting changes nothing in what the kernels compute
  Profiled out;
  for (const Stages::Time& t : r.timing.stages) {
    simt::Counters s;
    for (const simt::LaunchCounters& l : t.counters) {
      s += l.counters;
      out.modelled_us += model(l.counters, gpus::kGpus[0], find_sass(l.kernel)).total();
    }
    out.stages.push_back(s);
    out.launches.push_back(t.counters);
    out.total += s;
  }
  return out;
}

double sectors_of(double bytes) { return bytes / 32; }
double S_bytes(const Problem& p) { return 4.0 * p.B * p.H * p.Lq * p.Lk; }

}  // namespace

TEST_CASE("chapter 01's softmax reads 32 sectors per request, chapter 02's warp per row 4", "[counters]") {
  const Problem p = problem(DType::fp32, 128, 64);
  // One thread per row: the 32 lanes of a warp read 32 rows, Lk floats apart.
  const simt::GlobalOps naive = profile("naive", p).stages.at(1).global[simt::kGlobalLoad];
  CHECK(naive.sectors / naive.requests == 32);
  CHECK(naive.lanes / naive.requests == 32);
  // A warp per row: 32 consecutive floats, 128 bytes.
  const simt::GlobalOps warp = profile("warp_per_row", p).stages.at(1).global[simt::kGlobalLoad];
  CHECK(warp.sectors / warp.requests == 4);
  CHECK(warp.lanes / warp.requests == 32);
}

TEST_CASE("chapter 01's tiled GEMMs: coalesced loads, no bank conflicts; step c 16 shared loads per 256 FMA", "[counters]") {
  // d = 64 and N = 256: every row of Q, K, V (128 bytes of fp16) and of S, P (1 KB of fp32) starts
  // on a sector, so a coalesced request touches exactly bytes / 32 sectors.
  const Problem p = problem(DType::fp16, 256, 64);
  for (const char* v : {"smem_tiles", "register_blocked"}) {
    const Profiled prof = profile(v, p);
    for (int stage : {0, 2}) {  // S = scale*QK^T, O = PV
      INFO(v << ", stage " << stage);
      const simt::Counters& c = prof.stages.at(stage);
      const simt::GlobalOps& ld = c.global[simt::kGlobalLoad];
      CHECK(ld.requests > 0);
      CHECK(ld.sectors == ld.bytes / 32);
      for (int k = 0; k < simt::kSharedKinds; ++k) {
        INFO("shared kind " << k);
        CHECK(c.shared[k].wavefronts == c.shared[k].ideal);
      }
    }
    // S, the N x N write: each request 32 lanes x 4 bytes in whole sectors.
    const simt::GlobalOps& st = prof.stages.at(0).global[simt::kGlobalStore];
    CHECK(st.sectors == st.bytes / 32);
  }
  // Register blocking: per 4 values of k, 8 + 8 128-bit loads feed 8 x 8 x 4 FMAs per thread; the
  // FMAs of a product are B*H*M*N*K, so a warp issues M*N*K / (32 * 256 / 16) 128-bit loads.
  const Profiled blocked = profile("register_blocked", p);
  const double mnk = 1.0 * p.B * p.H * p.Lq * p.Lk * p.d;
  for (int stage : {0, 2}) {
    INFO("stage " << stage);
    CHECK(blocked.stages.at(stage).shared[simt::kSharedLoad128].requests == mnk / (32 * 16));
    CHECK(blocked.stages.at(stage).shared[simt::kSharedLoad32].requests == 0);
  }
}

TEST_CASE("chapter 02: the single-pass softmax reads S once, the warp per row three times", "[counters]") {
  const Problem p = problem(DType::fp16, 128, 64);
  const double S = sectors_of(S_bytes(p));
  for (const char* v : {"block_per_row", "vectorized", "exp2"}) {
    INFO(v);
    const simt::Counters softmax = profile(v, p).stages.at(1);
    CHECK(softmax.dram_read_sectors == S);                       // what the stage reads: S, once
    CHECK(softmax.global[simt::kGlobalLoad].sectors == S);      // and no sector requested twice
    CHECK(softmax.dram_write_sectors == S);                      // P
  }
  const simt::Counters warp = profile("warp_per_row", p).stages.at(1);
  CHECK(warp.dram_read_sectors == S);
  CHECK(warp.global[simt::kGlobalLoad].sectors == 3 * S);  // max, sum, normalize: three passes
}

TEST_CASE("chapter 05's swizzled tiles: ldmatrix and cp.async without bank conflicts", "[counters]") {
  for (int d : {64, 128}) {
    INFO("d = " << d);
    const simt::Counters c = profile("pipelined", problem(DType::fp16, 256, d)).total;
    double ldmatrix = 0;
    for (int k = simt::kLdmatrixX1; k <= simt::kCpAsyncDestination; ++k) {
      INFO(simt::shared_kind_name(k));
      if (k != simt::kCpAsyncDestination) ldmatrix += c.shared[k].requests;
      CHECK(c.shared[k].wavefronts == c.shared[k].ideal);  // one per 8 rows of 16 bytes
      CHECK(c.shared[k].conflicts() == 0);
    }
    CHECK(ldmatrix > 0);
    CHECK(c.shared[simt::kCpAsyncDestination].requests > 0);
  }
  // The same K tile stored row after row (rule_kernels.cu): 32 wavefronts per ldmatrix.x4 is
  // checked in test_rules.cpp, "a K tile stored row after row".
}

TEST_CASE("chapter 05: mma.sync does 4 B H Lq Lk d FLOP, the FLOP formula, when the tiles divide", "[counters]") {
  for (const char* v : {"tensor_cores", "pipelined"})
    for (int d : {64, 128})
      for (DType t : {DType::fp16, DType::bf16}) {
        if (t == DType::bf16 && d == 128) continue;  // one bf16 case is enough
        const Problem p = problem(t, 256, d);
        INFO(v << " on " << p.describe());
        const simt::Counters c = profile(v, p).total;
        // S = Q K^T and O = P V: 2 Lq Lk d multiply-adds each, m16n8k16 = 2 * 16 * 8 * 16 FLOP.
        CHECK(c.mma_flop == p.flops());
        CHECK(c.mma == p.flops() / (2 * 16 * 8 * 16));
      }
}

TEST_CASE("chapter 06: skipping tiles does the mma.sync of the visited tiles only", "[counters]") {
  for (Causal align : {Causal::top_left, Causal::bottom_right}) {
    const Problem p = problem(DType::fp16, 256, 64, align, 384);
    INFO(p.describe());
    // The tiles the chapter says it visits, from its own plan line ("... 6 of 8 (Q tile, K/V
    // tile) pairs visited per head"), computed by ch06::tiles_to_visit.
    const Variant* skipping = find_variant("skip_tiles");
    REQUIRE((skipping && skipping->plan));
    const std::string plan = skipping->plan(p);
    INFO(plan);
    double visited = 0, all = 0;
    REQUIRE(std::sscanf(plan.substr(plan.find(": ") + 2).c_str(), "%lf of %lf", &visited, &all) == 2);
    const double every = profile("mask_every_tile", p).total.mma;
    const double skip = profile("skip_tiles", p).total.mma;
    CHECK(visited < all);
    CHECK(skip / every == Approx(visited / all).epsilon(1e-12));
    CHECK(profile("balanced", p).total.mma == skip);
  }
}

TEST_CASE("chapter 06: each block's work grows down the diagonal; balanced starts the heaviest", "[counters]") {
  // N = 512: several Q tiles per head, each visiting the K/V tiles up to the diagonal.
  const Problem causal = problem(DType::fp16, 512, 64, Causal::top_left), none = problem(DType::fp16, 512, 64);
  std::vector<float> sorted[2];
  for (int b = 0; b < 2; ++b) {
    const bool balanced = b == 1;
    const simt::LaunchCounters l = profile(balanced ? "balanced" : "skip_tiles", causal).launches.at(0).at(0);
    const std::vector<float>& w = l.block_work;
    INFO((balanced ? "balanced" : "skip_tiles") << ": grid " << l.counters.grid_x << " x " << l.counters.grid_y);
    REQUIRE(w.size() == static_cast<size_t>(l.counters.blocks));
    // The blocks' operations, per warp, hold the launch's exponentials (over 32) and more: its loads,
    // products, barriers and shuffles. Every block did some.
    double sum = 0;
    for (float x : w) sum += x;
    CHECK(sum > l.counters.mufu / 32);
    CHECK(*std::min_element(w.begin(), w.end()) > 0);
    // skip_tiles' grid is (Q tiles, heads), a head's Q tiles light to heavy; balanced's (heads, Q
    // tiles), every head's last Q tile first: the work falls along y, the same for every head.
    const int gx = static_cast<int>(l.counters.grid_x), gy = static_cast<int>(l.counters.grid_y);
    const int tiles = balanced ? gy : gx, heads = balanced ? gx : gy;
    REQUIRE(tiles > 2);
    REQUIRE(heads == causal.H);
    for (int h = 0; h < heads; ++h)
      for (int t = 1; t < tiles; ++t) {
        const auto at = [&](int tile) { return w[balanced ? h + gx * tile : tile + gx * h]; };
        CHECK((balanced ? at(t - 1) > at(t) : at(t - 1) < at(t)));
        CHECK(at(t) == (balanced ? w[gx * t] : w[t]));  // every head's blocks alike
      }
    sorted[b] = w;
    std::sort(sorted[b].begin(), sorted[b].end());
  }
  CHECK(sorted[0] == sorted[1]);  // the same blocks, started in another order
  // Without is_causal every block visits every K/V tile.
  const std::vector<float> w = profile("skip_tiles", none).launches.at(0).at(0).block_work;
  REQUIRE(!w.empty());
  CHECK(std::count(w.begin(), w.end(), w.front()) == static_cast<long>(w.size()));
}

TEST_CASE("chapter 09: the ring's stages, the tile a consumer holds back, its refills", "[counters]") {
  // N = 512, d = 64: 4 K/V tiles of 128 keys, a stage 2 x 128 x 64 x 2 bytes (K and V); Q tiles of 64
  // rows in step c, 128 (two consumers) from step d on; 2 heads. Q's copy, once per block, is no stage.
  const Problem p = problem(DType::fp16, 512, 64);
  const double heads = 2, tiles = 4, stage_bytes = 2 * 128 * 64 * 2;
  // name, Q rows per block, lag, stages: steps c to e give tile j back in its own iteration, in a ring
  // of 2 stages; f and g while on j + 1, in a ring of 3 (hopper.h's kRotatedStages).
  const std::tuple<const char*, int, double, double> steps[] = {{"tma_ring", 64, 0, 2},
                                                                {"warp_specialized", 128, 0, 2},
                                                                {"ping_pong", 128, 0, 2},
                                                                {"intra_overlap", 128, 1, 3},
                                                                {"causal_skip", 128, 1, 3}};
  for (const auto& [name, rows, lag, stages] : steps) {
    INFO(name);
    const simt::Counters c = profile(name, p).total;
    const double blocks = heads * 512 / rows;
    CHECK(c.ring_stages == stages);
    CHECK(c.ring_lag == lag);
    CHECK(c.ring_stage_bytes == stage_bytes);
    CHECK(c.ring_tiles == blocks * tiles);
    CHECK(c.ring_refills == blocks * (tiles - stages));  // every tile after a stage's first
  }
  // Step h at d = 64: three consumers, Q tiles of 192 rows (hopper.h's consumers_for), 3 per head
  // (the last of 128 rows), each visiting the 4 tiles; 512 threads.
  const simt::Counters h = profile("head_dim_tiles", p).total;
  CHECK(h.threads_per_block == 512);
  CHECK(h.ring_stages == 3);
  CHECK(h.ring_tiles == heads * 3 * tiles);
  CHECK(h.ring_refills == heads * 3 * (tiles - 3));
  // Under is_causal its Q tiles of 192 rows visit 2, 3 and 4 tiles: 9 per head, refills only in
  // the last.
  const simt::Counters h_causal = profile("head_dim_tiles", problem(DType::fp16, 512, 64, Causal::top_left)).total;
  CHECK(h_causal.ring_tiles == heads * 9);
  CHECK(h_causal.ring_refills == heads * 1);
  // Under is_causal step g's Q tile b visits b + 1 tiles: 1 + 2 + 3 + 4 per head, refills only in
  // the block with more tiles than its 3 stages (the last).
  const simt::Counters causal = profile("causal_skip", problem(DType::fp16, 512, 64, Causal::top_left)).total;
  CHECK(causal.ring_tiles == heads * 10);
  CHECK(causal.ring_refills == heads * 1);
  // Each consumer multiplies the tiles its own 64 rows see (causal_skip.cuh's let_go): step g's
  // Q tile b gives both consumers b + 1, 20 (consumer, tile) pairs a head; step h's consumers of
  // its Q tiles at rows 0, 192 and 384 see 1, 1, 2 / 2, 3, 3 / 4, 4 and none (past Lq): 20 as
  // well, where walking the block's tiles made 27. A pair is S and P V: 2 x 2 x 64 x 128 x 64 FLOP.
  const double pair_flop = 4.0 * 64 * 128 * 64;
  CHECK(causal.wgmma_flop == heads * 20 * pair_flop);
  CHECK(h_causal.wgmma_flop == heads * 20 * pair_flop);
  // Without is_causal the last Q tile's third consumer (rows 512 to 575) multiplies nothing.
  CHECK(h.wgmma_flop == heads * 8 * tiles * pair_flop);
  // Chapter 05's cp.async ring is no TMA ring.
  CHECK(profile("lean_loop", p).total.ring_stages == 0);
}

TEST_CASE("chapter 09's step i: one block per SM walks step h's Q tiles, its ring and Q's copies go on", "[counters]") {
  // N = 512, d = 64, 50 heads: step h's 150 Q tiles of 192 rows (3 a head, each visiting the 4 K/V
  // tiles), 150 blocks; step i, counted, sees the H100's 132 SMs (the runtime's while the counters
  // count): 132 blocks, 18 of which walk 2 Q tiles. The same products, copies and stores; Q's
  // mbarrier, refilled once per Q tile by those 18, is no stage; a block's stages are refilled by
  // every tile but their first, across its Q tiles: 8 tiles in 3 stages, 5 refills, where step h's
  // blocks of 4 tiles refill 1.
  Problem p = problem(DType::fp16, 512, 64);
  p.H = 50;
  const simt::Counters h = profile("head_dim_tiles", p).total, i = profile("persistent", p).total;
  CHECK(h.blocks == 150);
  CHECK(i.blocks == gpus::kGpus[0].sms);
  REQUIRE(gpus::kGpus[0].sms == 132);
  CHECK(i.wgmma_flop == h.wgmma_flop);
  CHECK(i.global[simt::kTmaLoad].sectors == h.global[simt::kTmaLoad].sectors);
  CHECK(i.global[simt::kGlobalStore].sectors == h.global[simt::kGlobalStore].sectors);
  CHECK(i.ring_stages == 3);
  CHECK(i.ring_lag == 1);
  CHECK(i.ring_tiles == h.ring_tiles);
  CHECK(h.ring_tiles == 150 * 4);
  CHECK(h.ring_refills == 150 * 1);
  CHECK(i.ring_refills == 114 * 1 + 18 * 5);
  // A block fills once: Q and its first K/V tile, its first Q tile's, in each of its 132.
  CHECK(i.fill_sectors == Approx(h.fill_sectors / 150 * 132));
  // Where there are fewer Q tiles than SMs, a block each: step h's grid, its counts.
  const simt::Counters few_h = profile("head_dim_tiles", problem(DType::fp16, 512, 64)).total;
  const simt::Counters few_i = profile("persistent", problem(DType::fp16, 512, 64)).total;
  CHECK(few_i.blocks == few_h.blocks);
  CHECK(few_i.ring_refills == few_h.ring_refills);
  CHECK(few_i.fill_sectors == few_h.fill_sectors);
}

TEST_CASE("the counters do not depend on the schedule order or the number of workers", "[counters]") {
  // A tail (Lk = 200) and is_causal make lanes diverge: the grouping's slow path runs too.
  const std::vector<std::pair<std::string, Problem>> cases = {
      {"exp2", problem(DType::fp16, 64, 64, Causal::none, 100)},
      {"fused_softmax_pv", problem(DType::fp16, 48, 64, Causal::top_left, 100)},
      {"split_k", problem(DType::fp16, 40, 64, Causal::none, 100)},
      {"pipelined", problem(DType::bf16, 96, 64, Causal::bottom_right, 200)},
      {"balanced", problem(DType::fp16, 192, 64, Causal::top_left)},
  };
  for (const auto& [variant, p] : cases) {
    INFO(variant << " on " << p.describe());
    counters_test::same_in_every_schedule([&] { return profile(variant, p).total; });
  }
}

TEST_CASE("every variant's counted stores cover its output", "[counters]") {
  // A store the instrumentation missed would leave sectors of O unwritten. 16-bit outputs are
  // the ones at risk (a conversion's struct result stored straight to memory: notes/emulator.md).
  for (DType t : {DType::fp16, DType::bf16}) {
    const Problem p = problem(t, 64, 64);
    const double O = p.q_elems() * dtype_size(t);
    for (const Variant& v : registry()) {
      if (!v.unsupported(p).empty()) continue;
      INFO(v.name << " on " << p.describe());
      const Profiled r = profile(v.name, p);
      double written = 0;  // the most sectors written of any O-sized allocation: the output
      for (const auto& stage : r.launches)
        for (const simt::LaunchCounters& l : stage)
          for (const simt::AllocationSectors& a : l.allocations)
            if (a.bytes == O) written = std::max(written, a.written_sectors);
      CHECK(written == sectors_of(O));
    }
  }
}

TEST_CASE("sampling blocks: operation and DRAM counts exact, requests scaled", "[counters]") {
  const Problem p = problem(DType::fp16, 256, 64);
  const simt::Counters all = profile("pipelined", p).total;
  const simt::Counters half = profile("pipelined", p, 3).total;
  CHECK(half.blocks_counted < half.blocks);
  CHECK(half.mma == all.mma);
  CHECK(half.mufu == all.mufu);
  CHECK(half.dram_read_sectors == all.dram_read_sectors);
  CHECK(half.dram_write_sectors == all.dram_write_sectors);
  // Every Q tile's block does the same work here: the scaled counts are the full ones.
  CHECK(half.shared[simt::kLdmatrixX4].requests == Approx(all.shared[simt::kLdmatrixX4].requests));
  CHECK(half.global[simt::kCpAsyncSource].sectors == Approx(all.global[simt::kCpAsyncSource].sectors));
}

TEST_CASE("the modelled time falls from 01 to 03, and 05 beats every earlier chapter", "[counters]") {
  // The emulator's default problem (cli.cpp): B = 1, H = 2, N = 256, d = 64, fp16. Chapter 04 runs
  // one block per (batch, head), 2 blocks here on 132 SMs: like P3, the problem where chapter 05's
  // grid of Q tiles pays; chapter 04 against 03 at GPU sizes is the promise test's (test_promise.cpp).
  const Problem dflt = problem(DType::fp16, 256, 64);
  std::map<std::string, double> t;
  for (const std::string& c : chapters()) {
    if (c.rfind("06", 0) == 0 || c.rfind("07", 0) == 0) continue;  // 06 is 05's kernel with is_causal; 07 the backward
    t[c.substr(0, 2)] = profile(best_of(c)->name, dflt).modelled_us;
  }
  INFO("modelled us: 01 " << t["01"] << ", 02 " << t["02"] << ", 03 " << t["03"] << ", 04 " << t["04"] << ", 05 "
                          << t["05"]);
  CHECK(t["01"] > t["02"]);
  CHECK(t["02"] > t["03"]);
  for (const char* earlier : {"01", "02", "03", "04"}) CHECK(t[earlier] > t["05"]);
}
