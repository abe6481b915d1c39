// test_profile.cpp: `flashsteps profile` and `--profile` as a learner runs them. In a counters
// build they print the counters and a modelled time and append modelled rows; in any other build
// they refuse before doing any work, saying how to configure a counters build.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backward_run.h"
#include "harness/errors.h"
#include "harness/profile.h"
#include "harness/registry.h"
#include "harness/report.h"
#include "model/model.h"
#include "model/sampling.h"
#include "model/sass_fresh.h"
#if !FLASHSTEPS_GPU
#include "simt/cpu/launch.h"  // the emulator's register source
#endif

using Catch::Matchers::Contains;

namespace {
// Runs `flashsteps <args>`; returns its exit code, its output (stdout and stderr) in `out`.
int flashsteps(const std::string& args, std::string& out) {
  out.clear();
  FILE* pipe = popen((std::string(FLASHSTEPS_BINARY) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(pipe);
  for (int c; (c = std::fgetc(pipe)) != EOF;) out.push_back(static_cast<char>(c));
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}
std::string scratch(const char* name) { return "flashsteps-profile-test-" + std::to_string(getpid()) + "-" + name; }
}  // namespace

TEST_CASE("the issue term: a kernel's SASS data weighted by the emulator's counts", "[profile]") {
  using namespace attn;
  // 4 blocks of 64 threads: 8 warps. Each runs the fixed part (10 instructions; an LDS and a
  // barrier seen) and 5 tiles (100 instructions; 18 LDS and 2 barriers); the copy loop (6
  // instructions; an LDG and an STS) runs 30 times in all.
  SassKernel k{"k", 64, false, {10, {}, 0, 0}, {100, {}, 0, 0}, {}, {}, {}, {{6, {}, 0, 0}}};
  k.fixed.seen[kSeenLds] = 1, k.fixed.seen[kSeenBar] = 1;
  k.tile.seen[kSeenLds] = 18, k.tile.seen[kSeenBar] = 2;
  k.inner[0].seen[kSeenLd] = 1, k.inner[0].seen[kSeenSts] = 1;
  simt::Counters c;
  c.launches = 1, c.blocks = 4, c.threads_per_block = 64;
  c.barriers = 8 * 1 + 40 * 2;
  c.shared[simt::kSharedLoad32].requests = 8 * 1 + 40 * 18;
  c.global[simt::kGlobalLoad].requests = 30;
  c.shared[simt::kSharedStore32].requests = 30;
  c.shared[simt::kCpAsyncDestination].requests = 1000;  // cp.async: seen once, on its global side
  CHECK(issued_instructions(c, k) == 8 * 10 + 40 * 100 + 30 * 6);
  // A kind the emulator counts more of than the SASS has (two compilers splitting an access
  // differently) does not inflate a part: the kind allowing the fewest trips decides.
  simt::Counters more = c;
  more.shared[simt::kSharedStore32].requests += 50;  // the copy loop: its LDG still says 30
  more.shared[simt::kSharedLoad32].requests += 500;  // the tiles: the barriers still say 40
  CHECK(issued_instructions(more, k) == 8 * 10 + 40 * 100 + 30 * 6);
  // A loop around the tile loop (chapter 04's K/V tiles around its Q tiles): its own blocks (50
  // instructions; a barrier and 4 LDG) run 3 times in all, after the copy loop's 30 LDG are taken.
  SassKernel outer = k;
  outer.outer = {50, {}, 0, 0};
  outer.outer.seen[kSeenBar] = 1, outer.outer.seen[kSeenLd] = 4;
  simt::Counters around = c;
  around.barriers += 3;
  around.global[simt::kGlobalLoad].requests += 3 * 4;
  CHECK(issued_instructions(around, outer) == Approx(8 * 10 + (40 + 1.5) * 100 + 30 * 6 + 3 * 50));
  // Loops that run different numbers of times: a loop with an explicit kind of its own (an
  // intrinsic: shuffles here) by its own trips. A decoding kernel: a key loop of 40 instructions
  // with 2 LDG and 8 SHFL, 1000 trips; an append loop of 30 with an LDG and an STG, 3 trips; a
  // merge loop of 20 with 4 LDS and an STG, 3 trips. Taken together (as before), the STG would say
  // 3 trips of all three loops.
  SassKernel decode{"decode", 64, false, {10, {}, 0, 0}, {}, {}, {}, {}, {{40, {}, 0, 0}, {30, {}, 0, 0}, {20, {}, 0, 0}}};
  decode.inner[0].seen[kSeenLd] = 2, decode.inner[0].seen[kSeenShfl] = 8;
  decode.inner[1].seen[kSeenLd] = 1, decode.inner[1].seen[kSeenSt] = 1;
  decode.inner[2].seen[kSeenLds] = 4, decode.inner[2].seen[kSeenSt] = 1;
  simt::Counters dc;
  dc.launches = 1, dc.blocks = 1, dc.threads_per_block = 32;
  dc.shuffles = 8000;
  dc.global[simt::kGlobalLoad].requests = 2000 + 3;
  dc.global[simt::kGlobalStore].requests = 3 + 3;
  dc.shared[simt::kSharedLoad32].requests = 3 * 4;
  CHECK(issued_instructions(dc, decode) == Approx(10 + 1000 * 40 + 3 * (30 + 20)));
  // Loads and stores alone never count a loop: the merge loop's LDS are not its to count by (the
  // emulator may see four scalar reads where nvcc has one LDS.128), so the two loops left are one
  // part, whose trips the fewest of its kinds allows (here the LDG: 3, not the LDS's 12).
  dc.shared[simt::kSharedLoad32].requests = 4 * 3 * 4;
  CHECK(issued_instructions(dc, decode) == Approx(10 + 1000 * 40 + 3 * (30 + 20)));
  // Once a kind of that part is spent, the loops that hold none of it run on, as one part, by what
  // is left: a combine's loop over the splits (4 LDG, nothing else) beside its loop over the
  // columns (an LDG and an STG) runs as often as the LDG left say, not as often as the STG say: 2
  // column trips, and of the 2 + 4 x 10 LDG, 10 trips of the split loop (the STG alone would say 2).
  SassKernel combine{"combine", 32, false, {10, {}, 0, 0}, {}, {}, {}, {}, {{15, {}, 0, 0}, {8, {}, 0, 0}}};
  combine.inner[0].seen[kSeenLd] = 4;
  combine.inner[1].seen[kSeenLd] = 1, combine.inner[1].seen[kSeenSt] = 1;
  simt::Counters cc;
  cc.launches = 1, cc.blocks = 1, cc.threads_per_block = 32;
  cc.global[simt::kGlobalLoad].requests = 2 + 4 * 10;
  cc.global[simt::kGlobalStore].requests = 2;
  CHECK(part_trips(cc, combine).inner[0] == Approx(10));
  CHECK(part_trips(cc, combine).inner[1] == Approx(2));
  CHECK(issued_instructions(cc, combine) == Approx(10 + 10 * 15 + 2 * 8));
  // A loop that holds no seen kind runs as often as the first part says, no more.
  SassKernel bare = combine;
  bare.inner[2] = {5, {}, 0, 0};
  CHECK(part_trips(cc, bare).inner[2] == Approx(2));
  // Without a barrier in the tile loop, its seen kinds give the tiles.
  SassKernel no_bar = k;
  no_bar.fixed.seen[kSeenBar] = no_bar.tile.seen[kSeenBar] = 0;
  CHECK(issued_instructions(c, no_bar) == Approx(8 * 10 + 40 * 100 + 30 * 6));
  // The term: instructions over 4 per clock per SM, on the SMs the grid keeps busy.
  const gpus::Gpu& g = gpus::kGpus[0];
  const Modelled m = model(c, g, &k);
  CHECK(m.sass_known);
  CHECK(m.instructions == issued_instructions(c, k));
  const double warps_per_sm = 2;  // one block of 2 warps on each of 4 SMs: 2 of 4 schedulers issue
  CHECK(m.issue == Approx(m.instructions / (4 * g.clock_ghz * 1e9 * 4 * (warps_per_sm / 4)) * 1e6));
  CHECK(model(c, g).issue == 0);  // a kernel the data does not know: no term
  // A loop that issues more instructions for the same seen ones models slower when issue-bound.
  SassKernel heavier = k;
  heavier.tile.instructions = 200;
  CHECK(model(c, g, &heavier).issue > 1.8 * m.issue);
  CHECK(model(c, g, &heavier).total() > m.total());
}

TEST_CASE("the latency term: one warp's chain from the SASS, hidden only by groups out of step", "[profile]") {
  using namespace attn;
  // One block of 8 warps on each SM (2 per scheduler), 500 tiles each: a tile is 100 instructions
  // that one warp alone takes 400 cycles to issue (its stalls and waits), with a barrier.
  const gpus::Gpu& g = gpus::kGpus[0];
  SassKernel k{"k", 64, true, {10, {}, 10, 10}, {100, {}, 400, 400}, {}, {}, {}, {}};
  k.tile.seen[kSeenBar] = 1;
  simt::Counters c;
  c.launches = 1, c.blocks = g.sms, c.threads_per_block = 256;
  const double warps = 8.0 * g.sms;
  c.barriers = warps * 500;
  CHECK(warp_cycles(c, k) == Approx(warps * (10 + 500 * 400)));
  const double clock = g.clock_ghz * 1e9 * g.sms;
  // In lockstep (a barrier every tile) the two warps of a scheduler queue behind each other: the
  // sum of their chains.
  const Modelled lockstep = model(c, g, &k);
  CHECK(lockstep.groups == 4);
  CHECK(lockstep.latency == Approx(warp_cycles(c, k) / (clock * 4) * 1e6));
  CHECK(lockstep.bound() == std::string("latency"));
  // Global loads wait for DRAM in the share of the L2 traffic that DRAM serves: here half, so half
  // of the difference between the part's cycles from DRAM (600) and from L2 (400).
  SassKernel from_dram = k;
  from_dram.tile.cycles_dram = 600;
  simt::Counters half = c;
  half.global[simt::kGlobalLoad].sectors = 1000, half.dram_read_sectors = 500;
  const double mean_wait = (kSassL2Latency + kSassDramLatency) / 2;  // half L2 hits, half DRAM's (the H100's)
  CHECK(warp_cycles(half, from_dram, mean_wait) == Approx(warps * (10 + 500 * 500)));
  // Of those cycles, a tile's loads wait mean_wait x (600 - 400) / 212 (the line through the two
  // latencies, at none); the two warps of a block on a scheduler wait for them together: once.
  const double load_waits = warps * 500 * mean_wait * 200 / 212.0;
  CHECK(warp_cycles(half, from_dram, mean_wait) - warp_cycles(half, from_dram, 0) == Approx(load_waits));
  CHECK(model(half, g, &from_dram).latency ==
        Approx((warp_cycles(half, from_dram, mean_wait) - load_waits / 2) / (clock * 4) * 1e6));
  // Another GPU's latencies (gpus.h's [lat]) are taken on the line through the two the cycles were
  // counted with: 200 cycles more per load than DRAM's 484 puts 200 x (600 - 400) / 212 more on a tile.
  CHECK(warp_cycles(half, from_dram, kSassDramLatency + 200) == Approx(warps * (10 + 500 * (600 + 200 * 200 / 212.0))));
  gpus::Gpu slower = g;
  slower.l2_latency_clk += 100, slower.dram_latency_clk += 100;
  const double slower_waits = warps * 500 * (mean_wait + 100) * 200 / 212.0;
  CHECK(model(half, slower, &from_dram).latency ==
        Approx((warp_cycles(half, from_dram, mean_wait + 100) - slower_waits / 2) / (clock * 4) * 1e6));
  CHECK(model(half, slower, &from_dram).latency > model(half, g, &from_dram).latency);
  // Counted once only where a scheduler holds more than one warp of the block: a block of 2 warps
  // (one on each of 2 schedulers) waits for every load in each chain, one of 6 (1.5 a scheduler)
  // saves a third of them.
  for (const double block_warps : {2.0, 6.0}) {
    simt::Counters sized = half;
    sized.threads_per_block = 32 * block_warps;
    sized.barriers = block_warps * g.sms * 500;
    const double waits = block_warps * g.sms * 500 * mean_wait * 200 / 212.0;
    const double shared = waits * (1 - 1 / std::max(1.0, block_warps / 4));
    CHECK(shared == Approx(block_warps == 2 ? 0 : waits / 3));
    CHECK(model(sized, g, &from_dram).latency ==
          Approx((warp_cycles(sized, from_dram, mean_wait) - shared) / (clock * std::min(block_warps, 4.0)) * 1e6));
  }
  // Warps that meet at no barrier wait for their loads each on its own.
  SassKernel free_dram = from_dram;
  free_dram.lockstep = false;
  free_dram.tile.seen[kSeenBar] = 0, free_dram.tile.seen[kSeenLds] = 2;
  simt::Counters half_free = half;
  half_free.barriers = 0, half_free.shared[simt::kSharedLoad32].requests = warps * 500 * 2;
  const Modelled own_waits = model(half_free, g, &free_dram);
  CHECK(own_waits.groups == 8);
  CHECK(own_waits.latency ==
        Approx((warp_cycles(half_free, free_dram, mean_wait) / (clock * 4) * 1e6 + own_waits.issue) / 2));
  // Without barriers every warp is a group of its own: two per scheduler, each waiting for the
  // other only where it holds the issue slot.
  SassKernel free_running = k;
  free_running.lockstep = false;
  free_running.tile.seen[kSeenBar] = 0, free_running.tile.seen[kSeenLds] = 2;
  c.barriers = 0, c.shared[simt::kSharedLoad32].requests = warps * 500 * 2;
  const Modelled apart = model(c, g, &free_running);
  CHECK(apart.groups == 8);
  const double chains = warp_cycles(c, free_running) / (clock * 4) * 1e6;
  CHECK(apart.latency == Approx((chains + apart.issue) / 2));
  CHECK(apart.latency < 0.75 * lockstep.latency);
  // Warps that gave their registers back (a warp-specialized kernel's producers) hide no one's
  // waits: with 4 of the 8 producers, the 4 others are one group per scheduler, their chains summed.
  simt::Counters producing = c;
  producing.producer_warps = 4.0 * g.sms;
  const Modelled consumers = model(producing, g, &free_running);
  CHECK(consumers.groups == 4);
  CHECK(consumers.latency == Approx(chains));
  // A warp-specialized block (12 warps: 4 producers, 8 consumers, two per scheduler): the start
  // (4 instructions, 4 cycles) runs once per warp; the producer's own blocks (20 instructions, 30
  // cycles, 3 TMA boxes) once per block, by its one copying thread's warp; the consumers' own (10,
  // 10) once per consumer warp. The block's fill (Counters::fill_sectors: here 2 boxes of 64
  // sectors, what its first products waited for) and its stores (O: 1000 sectors) cross L2 for every
  // SM at once, and both groups of a scheduler wait for them: twice fill and drain in their chains.
  SassKernel specialized = free_running;
  specialized.fixed = {4, {}, 4, 4};
  specialized.producer = {20, {}, 30, 30};
  specialized.producer.seen[kSeenTma] = 3;
  specialized.consumers = {10, {}, 10, 10};
  simt::Counters ws;
  ws.launches = 1, ws.blocks = g.sms, ws.threads_per_block = 384, ws.producer_warps = 4.0 * g.sms;
  ws.shared[simt::kSharedLoad32].requests = 8.0 * g.sms * 500 * 2;
  ws.global[simt::kTmaLoad].requests = 3.0 * g.sms, ws.global[simt::kTmaLoad].sectors = 3.0 * g.sms * 64;
  ws.global[simt::kGlobalStore].sectors = 1000.0 * g.sms;
  ws.fill_sectors = 2.0 * g.sms * 64;
  ws.drain_sectors = 99999.0 * g.sms;  // after the block's one __syncthreads: its loads too, not its drain
  const PartTrips t = part_trips(ws, specialized);
  CHECK(t.fixed == 12.0 * g.sms);
  CHECK(t.producer == g.sms);
  CHECK(t.consumers == 8.0 * g.sms);
  CHECK(t.tile == Approx(8.0 * g.sms * 500));
  CHECK(over_launch(specialized, t, &SassPart::cycles) == Approx(g.sms * (12.0 * 4 + 30 + 8.0 * 10 + 8.0 * 500 * 400)));
  // The groups' chains are the consumers' (the start is every warp's): the producer waits for them,
  // not they for it.
  const double consumer_cycles = g.sms * (12.0 * 4 + 8.0 * 10 + 8.0 * 500 * 400);
  CHECK(warp_cycles(ws, specialized) == Approx(consumer_cycles));
  SassKernel copy_loop = specialized;
  copy_loop.inner[0] = {6, {}, 50, 50};
  copy_loop.inner[0].seen[kSeenTma] = 1;
  copy_loop.producer.seen[kSeenTma] = 0;  // the 3 boxes in a loop on the producer's branch instead
  copy_loop.producer_loops = 1;
  CHECK(part_trips(ws, copy_loop).inner[0] == Approx(3.0 * g.sms));
  CHECK(warp_cycles(ws, copy_loop) == Approx(consumer_cycles));
  copy_loop.producer_loops = 0;  // a consumers' loop: in their chains
  CHECK(warp_cycles(ws, copy_loop) == Approx(consumer_cycles + 3.0 * g.sms * 50));
  const Modelled ms = model(ws, g, &specialized);
  CHECK(ms.groups == 8);
  CHECK(ms.fill_drain == Approx(32 * (2.0 * 64 + 1000) * g.sms / (g.l2_tb_s * 1e12) * 1e6));
  const double waits = consumer_cycles / (clock * 4) * 1e6 + 2 * ms.fill_drain;
  CHECK(ms.latency == Approx((waits + std::min(ms.issue, waits)) / 2));
  CHECK(model(ws, g, &specialized, false).fill_drain == 0);  // the model without fill and drain
  // A block whose loop no barrier gathers and that loads nothing by TMA has no phases to fill.
  simt::Counters no_tma = ws;
  no_tma.global[simt::kTmaLoad] = {};
  CHECK(model(no_tma, g, &specialized).fill_drain == 0);
  // A lockstep block is one group per scheduler: its fill and drain (here 5000 sectors each way)
  // join its chains once, however many blocks the SM holds.
  simt::Counters filled = c;
  filled.barriers = warps * 500, filled.fill_sectors = filled.drain_sectors = 5000.0 * g.sms;
  const Modelled in_step = model(filled, g, &k);
  CHECK(in_step.fill_drain == Approx(32 * 10000.0 * g.sms / (g.l2_tb_s * 1e12) * 1e6));
  CHECK(in_step.latency == Approx(warp_cycles(filled, k) / (clock * 4) * 1e6 + in_step.fill_drain));
  // A kernel the SASS data does not know has no chain to count.
  CHECK(model(c, g).latency == 0);
}

TEST_CASE("chapter 09's SASS rows: each role its parts and step g's unmasked tile", "[profile]") {
  using namespace attn;
  const auto named = [](const std::string& name, const char* kernel) {  // its row for a plain problem, d = 128
    return name.find(kernel) != std::string::npos && name.find(", 128>") != std::string::npos && name.back() == ')';
  };
  int seen = 0;
  for (const SassKernel& k : kSassSm90) {
    const std::string name = k.name;
    // Steps d onwards: the producer's own blocks (its TMA boxes before its loop) and loop apart.
    if (named(name, "causal_skip_kernel") || named(name, "warp_specialized_kernel")) {
      INFO(name);
      CHECK(k.producer.instructions > 0);
      CHECK(k.producer.seen[kSeenTma] > 0);
      CHECK(k.consumers.instructions > k.producer.instructions);
      CHECK(k.producer_loops != 0);
      ++seen;
    }
    if (named(name, "tma_ring_kernel")) {
      CHECK(k.producer.instructions == 0);  // step c: no roles
      CHECK(k.producer_loops == 0);
      ++seen;
    }
    // Step g masks only the tiles the diagonal crosses (ch06::crosses_diagonal): no causal row.
    if (name.find("causal_skip_kernel") != std::string::npos) CHECK(name.find(" causal=") == std::string::npos);
  }
  CHECK(seen == 3 * 2);  // fp16 and bf16
  // Its tile is the unmasked one, shorter than step f's, which masks every tile.
  for (const char* t : {"__half", "__nv_bfloat16"}) {
    const std::string args = std::string("<") + t + ", 128>(CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, attn::AttentionParams)";
    const SassKernel* g = find_sass("void ch09::(anonymous namespace)::causal_skip_kernel" + args);
    const SassKernel* f = find_sass("void ch09::(anonymous namespace)::intra_overlap_kernel" + args);
    REQUIRE(g);
    REQUIRE(f);
    CHECK(g->tile.instructions < f->tile.instructions);
    SassPath causal;
    causal.causal = "top-left";
    CHECK(find_sass(g->name, causal) == g);
  }
}

TEST_CASE("another architecture's rows: a GPU takes its own where the build compiled them, sm_90's else", "[profile]") {
  using namespace attn;
  const std::string kernel = "void ch99::kernel(attn::AttentionParams)", causal_row = kernel + " causal=top-left";
  SassKernel rows[2] = {};
  rows[0].name = kernel.c_str(), rows[0].registers = 40;
  rows[1].name = causal_row.c_str(), rows[1].registers = 48;
  const SassArchTable tables[] = {{80, rows, 2}};
  const SassArchs archs = {tables, 1, ""};
  CHECK(sass_cc(80, archs) == 80);
  CHECK(sass_cc(86, archs) == 80);  // none of its own: sm_80's, which the default GPU build runs there
  CHECK(sass_cc(75, archs) == 90);  // none of its major version: sm_90's stand in
  CHECK(sass_cc(90, archs) == 90);
  CHECK(find_sass(kernel, {}, 80, archs) == &rows[0]);
  SassPath causal;
  causal.causal = "top-left";
  CHECK(find_sass(kernel, causal, 80, archs) == &rows[1]);
  CHECK(find_sass(kernel, {}, 90, archs) == nullptr);  // sm_90's data does not know it
  const std::string book = kSassSm90[0].name;
  CHECK(find_sass(book, {}, 80, archs) == nullptr);  // on sm_80 only sm_80's rows: none of sm_90's mixed in
  REQUIRE(find_sass(book) != nullptr);
  CHECK(find_sass(book, {}, 75, archs) == find_sass(book));
}

#if !FLASHSTEPS_GPU
namespace {
// While it lives, the emulator takes every kernel's registers from `f` and prints no launch errors;
// then the harness's source (own_registers) and the schedule again, whatever the test did.
struct RegisterSource {
  simt::Schedule before = simt::schedule();
  explicit RegisterSource(std::function<int(const std::string&, const gpus::Gpu&)> f) {
    simt::Schedule quiet = before;
    quiet.quiet = true;
    simt::set_schedule(quiet);
    simt::set_register_source(std::move(f));
  }
  ~RegisterSource() {
    simt::set_register_source(attn::own_registers);
    simt::set_schedule(before);
  }
};
}  // namespace

TEST_CASE("the emulator refuses registers x threads past the register file, with the SASS data's registers", "[profile]") {
  using namespace attn;
  const gpus::Gpu& h100 = *gpus::find_gpu("h100");
  const gpus::Gpu& a100 = *gpus::find_gpu("a100");
  // A GPU's own architecture's registers, as this build has them: sm_90's committed rows on an H100
  // (none for a kernel an edit left stale); on an A100 sm_80's where the build compiled them, never
  // sm_90's standing in.
  const std::string book = kSassSm90[0].name;
  REQUIRE(find_sass(book) != nullptr);
  const bool stale = built_from(book, stale_sass_sources(FLASHSTEPS_SOURCE_DIR));
  CHECK(own_registers(book, h100) == (stale ? 0 : find_sass(book)->registers));
  if (!stale) CHECK(own_registers(book, h100) > 0);
  if (sass_cc(a100.cc()) == 90)
    CHECK(own_registers(book, a100) == 0);
  else
    CHECK(own_registers(book, a100) == find_sass(book, {}, a100.cc())->registers);
  CHECK(own_registers("void not_a_book_kernel()", h100) == 0);
  // A run whose kernel the GPU would refuse stops with CUDA's error, as on the GPU: chapter 01's
  // smem_tiles launches blocks of 32 x 32 threads, which 255 registers each cannot have.
  Problem p;
  p.B = 1, p.H = 1, p.Lq = p.Lk = 64, p.d = 64, p.dtype = DType::fp32;
  p.validate();
  const Variant* v = find_variant("smem_tiles");
  REQUIRE(v != nullptr);
  const RunOptions o = untimed();
  const Inputs in = Inputs::generate(p);
  const Checker checker(p, in, o);
  const DeviceInputs dev(p, in);
  std::string error;
  {
    const RegisterSource all_255([](const std::string&, const gpus::Gpu&) { return 255; });
    try {
      run_variant(*v, p, dev, checker, o);
    } catch (const CudaError& e) {
      error = e.what();
    }
  }
  CHECK_THAT(error, Contains("too many resources requested for launch") && Contains("255 registers x") &&
                        Contains("H100 SXM5"));
  // With the build's own registers it runs.
  CHECK(run_variant(*v, p, dev, checker, o).verdict.pass);
}
#endif

TEST_CASE("the FMA term: FP32 and IMAD share the FMA pipes, whose FP32 rate an A100 has half of", "[profile]") {
  using namespace attn;
  // Every SM busy, 4 warps each (every scheduler fed): 1000 tiles per warp, each 100 instructions,
  // one LDS seen (the tiles' count) and, of the 100, F FP32 and I IMAD.
  const auto term = [](const char* key, double fp32, double imad) {
    const gpus::Gpu& g = *gpus::find_gpu(key);
    SassKernel k{"k", 32, false, {}, {100, {}, 0, 0, fp32, imad}, {}, {}, {}, {}};
    k.tile.seen[kSeenLds] = 1;
    simt::Counters c;
    c.launches = 1, c.blocks = g.sms, c.threads_per_block = 128;
    c.shared[simt::kSharedLoad32].requests = g.sms * 4 * 1000.0;
    const Modelled m = model(c, g, &k);
    const double clocks_per_sm = 4 * 1000.0;  // warp-tiles per SM
    const double per_sm_clock = g.clock_ghz * 1e9;
    CHECK(m.issue == Approx(clocks_per_sm * 100 / 4 / per_sm_clock * 1e6));
    // max((F + I) x 32 / FP32 rate, I x 32 / IMAD rate), per SM
    CHECK(m.fma == Approx(clocks_per_sm * std::max((fp32 + imad) * 32 / g.fp32_per_clk, imad * 32 / g.imad_per_clk) /
                          per_sm_clock * 1e6));
    return m;
  };
  // 60 FFMA and 20 IMAD of 100: an A100's one pipe (64 lanes per SM) needs 40 clocks per 100
  // instructions where issue needs 25; an RTX 4090's two (128 FP32 lanes, 64 of them for IMAD) 20.
  CHECK(std::string(term("a100", 60, 20).bound()) == "FMA");
  CHECK(std::string(term("rtx4090", 60, 20).bound()) == "issue");
  CHECK(std::string(term("h100", 60, 20).bound()) == "issue");
  // 70 IMAD of 100: only the heavy pipe takes them, 35 clocks, on every GPU past sm_80 too.
  CHECK(std::string(term("h100", 10, 70).bound()) == "FMA");
  CHECK(std::string(term("rtx4090", 10, 70).bound()) == "FMA");
  for (const gpus::Gpu& g : gpus::kGpus) CHECK((g.fp32_per_clk == 64 || g.fp32_per_clk == 128));
}

TEST_CASE("DRAM re-reads: a sector's readers far apart in the grid's order read it again once L2 is swept", "[profile]") {
  using namespace attn;
  const gpus::Gpu& g = *gpus::find_gpu("h100");
  // 64 heads of 2 MB K/V (65536 sectors each), 32 Q tiles per head each reading all of its head's
  // K/V and 1024 sectors of Q alone: chapter 09's step g at B = 4, H = 16, N = 4096, d = 128.
  const double heads = 64, tiles = 32, kv = 65536, q = 1024, resident = 132;
  simt::Counters c;
  c.launches = 1, c.blocks = heads * tiles, c.threads_per_block = 384;
  c.dram_read_sectors = heads * (kv + tiles * q);
  simt::Counters heads_first = c, tiles_first = c;
  heads_first.grid_x = heads, heads_first.grid_y = tiles, heads_first.grid_z = 1;
  heads_first.shared_sectors[1] = heads * kv, heads_first.shared_reads[1] = heads * kv * tiles;
  tiles_first.grid_x = tiles, tiles_first.grid_y = heads, tiles_first.grid_z = 1;
  tiles_first.shared_sectors[0] = heads * kv, tiles_first.shared_reads[0] = heads * kv * tiles;
  // Tiles in x: a head's 32 readers are resident together: K/V cross DRAM once.
  CHECK(dram_rereads(tiles_first, g, resident) == 0);
  // A count extrapolated from row groups (sampling.h) can fall below 0 along a dimension no sector
  // is shared along: it reads nothing again.
  simt::Counters below = tiles_first;
  below.shared_sectors[1] = -1000, below.shared_reads[1] = -4000;
  CHECK(dram_rereads(below, g, resident) == 0);
  // Heads in x: a head's readers are 64 blocks apart, about 132 / 64 resident at once; the 132
  // blocks between two groups read 64 heads' K/V (134 MB), past L2's 50 MB: every later group
  // reads its K/V again.
  const double together = resident / heads;
  CHECK(dram_rereads(heads_first, g, resident) == Approx(32 * heads * kv * (tiles / together - 1)));
  CHECK(dram_rereads(heads_first, g, resident) == Approx(1.9482e9).epsilon(1e-3));  // by hand: 134.2 MB x (32 / 2.0625 - 1)
  // The same with the heads' K/V fitting L2 together (64 x 128 KB): no re-read.
  simt::Counters small = heads_first;
  small.shared_sectors[1] /= 16, small.shared_reads[1] /= 16, small.dram_read_sectors = heads * (kv / 16 + tiles * q);
  CHECK(dram_rereads(small, g, resident) == 0);
  // More heads than blocks resident: each reader alone, tiles - 1 re-reads of every sector.
  simt::Counters many = heads_first;
  many.grid_x = 4 * heads, many.blocks *= 4, many.dram_read_sectors *= 4;
  many.shared_sectors[1] *= 4, many.shared_reads[1] *= 4;
  CHECK(dram_rereads(many, g, resident) == Approx(32 * 4 * heads * kv * (tiles - 1)));
  // Of every crossing of the heads-first grid, the other readers together hit its miss in flight,
  // in the first wave's share of the blocks (132 of 2048).
  CHECK(dram_in_flight_hits(heads_first, g, resident) ==
        Approx(32 * heads * kv * (tiles / together) * (together - 1) * resident / heads_first.blocks));
  CHECK(dram_in_flight_hits(heads_first, g, resident) == Approx(1.42607e8).epsilon(1e-3));  // by hand
  // A negative sampled count beside a shared dimension adds no re-read to it.
  simt::Counters below_heads = heads_first;
  below_heads.shared_sectors[0] = -1000, below_heads.shared_reads[0] = -4000;
  CHECK(dram_rereads(below_heads, g, resident) == dram_rereads(heads_first, g, resident));
  // The model reads them in its DRAM term, and in how often a load waits for DRAM.
  const Modelled m = model(heads_first, g);
  CHECK(m.dram_rereads > 0);
  CHECK(m.dram_rereads == dram_rereads(heads_first, g, g.sms * m.blocks_per_sm));
  CHECK(m.dram == Approx((32 * c.dram_read_sectors + m.dram_rereads) / (g.dram_copy_tb_s() * 1e12 * m.share) * 1e6));
}

TEST_CASE("Hits on a miss in flight: readers of a sector that ask at once all wait for DRAM", "[profile]") {
  using namespace attn;
  const gpus::Gpu& g = *gpus::find_gpu("h200");
  // Chapter 08's decode_kernel at B = 1, 32 query heads on 8 KV heads, 32768 keys, d = 128: one
  // block per query head in x, the 4 of a KV head reading its 16 MB of K and V (524288 sectors).
  const double kv_heads = 8, group = 4, kv = 524288;
  simt::Counters c;
  c.launches = 1, c.blocks = kv_heads * group, c.threads_per_block = 128;
  c.grid_x = c.blocks, c.grid_y = c.grid_z = 1;
  c.dram_read_sectors = kv_heads * kv, c.block_load_sectors = kv_heads * kv * group;
  c.global[simt::kGlobalLoad].sectors = c.block_load_sectors;
  c.shared_sectors[0] = kv_heads * kv, c.shared_reads[0] = kv_heads * kv * group;
  // One wave: the 4 readers of every sector ask together; one crosses DRAM and 3 hit its miss.
  const double resident = g.sms * 6;
  CHECK(dram_rereads(c, g, resident) == 0);
  CHECK(dram_in_flight_hits(c, g, resident) == Approx(32 * kv_heads * kv * (group - 1)));
  // Blocks past the first wave start apart: only the first wave's share of them (132 of 1056).
  simt::Counters waves = c;
  waves.blocks *= 33, waves.grid_x *= 33, waves.dram_read_sectors *= 33, waves.block_load_sectors *= 33;
  waves.global[simt::kGlobalLoad].sectors *= 33, waves.shared_sectors[0] *= 33, waves.shared_reads[0] *= 33;
  CHECK(dram_in_flight_hits(waves, g, g.sms) == Approx(32 * 33 * kv_heads * kv * (group - 1) * g.sms / waves.blocks));
  // Each reader alone (no sector shared): no hit in flight.
  simt::Counters alone = c;
  alone.shared_sectors[0] = alone.shared_reads[0] = 0;
  CHECK(dram_in_flight_hits(alone, g, resident) == 0);
  // The latency term waits for DRAM on every load with the hits (one crossing and three hits of
  // four reads), on a quarter of them without.
  const SassKernel* k = find_sass("void ch08::decode_kernel<__half, 128, 1, false, false, false, false, false, false>(attn::DecodeParams, float*, float*)");
  REQUIRE(k != nullptr);
  CHECK(model(c, g, k).waits_dram == Approx(1.0));
  CHECK(model(alone, g, k).waits_dram == Approx(0.25));
}

namespace {
// An allocation of which a launch read `sectors` sectors, `pairs` of them by two blocks side by side in x.
simt::AllocationSectors read_in_x(const void* base, double sectors, double pairs) {
  simt::AllocationSectors a{base, 32 * sectors, sectors, 0};
  a.shared_sectors[0] = pairs, a.shared_reads[0] = 2 * pairs;
  return a;
}
// A launch of grid_x blocks in x that read those allocations: its counts are theirs summed.
simt::LaunchCounters launch_reading(double grid_x, const std::vector<simt::AllocationSectors>& allocations) {
  simt::LaunchCounters l;
  l.counters.grid_x = grid_x, l.counters.grid_y = 1, l.counters.grid_z = 1;
  for (const simt::AllocationSectors& a : allocations) {
    l.counters.dram_read_sectors += a.read_sectors;
    for (int d = 0; d < 3; ++d) l.counters.shared_sectors[d] += a.shared_sectors[d], l.counters.shared_reads[d] += a.shared_reads[d];
  }
  l.allocations = allocations;
  return l;
}
}  // namespace

TEST_CASE("a sampled launch shares memory every head reads alike as the launch over every head does", "[profile]") {
  using namespace attn;
  // One head of two emulated, its 7 Q tiles' blocks in x. The mask (100 sectors, 10 of them read by
  // two neighbouring tiles) is every head's; K (50 sectors, 5 shared by two tiles) is the head's own.
  int mask = 0, k = 0;
  const simt::LaunchCounters l = launch_reading(7, {read_in_x(&mask, 100, 10), read_in_x(&k, 50, 5)});
  const HeadSample two{1, 2};
  const std::vector<const void*> shared{&mask};
  simt::Counters whole = l.counters;
  // The heads in x after one another (a block per tile and head, 14 in all): a mask sector's readers
  // run from head 0's tile to head 1's, 8 blocks along x (9 for the 10 two tiles share).
  whole.grid_x = 14;
  simt::Counters c = scaled(l, two, shared, whole);
  CHECK(c.dram_read_sectors == 2 * 50 + 100);
  CHECK(c.shared_sectors[0] == 2 * 5 + 100);
  CHECK(c.shared_reads[0] == 2 * 10 + 90 * 8 + 10 * 9);
  // The heads in y: every mask sector is shared along y by 2 readers; K's sharing stays in x.
  whole.grid_x = 7, whole.grid_y = 2;
  c = scaled(l, two, shared, whole);
  CHECK(c.shared_sectors[0] == 2 * 5);
  CHECK(c.shared_reads[0] == 2 * 10);
  CHECK(c.shared_sectors[1] == 100);
  CHECK(c.shared_reads[1] == 100 * 2);
  // A grid that does not grow with the heads: the mask shares as in the sample, once.
  whole.grid_y = 1;
  c = scaled(l, two, shared, whole);
  CHECK(c.shared_sectors[0] == 2 * 5 + 10);
  CHECK(c.shared_reads[0] == 2 * 10 + 20);
  // Not sampled: the counts as they were.
  c = scaled(l, HeadSample{}, shared, whole);
  CHECK(c.shared_reads[0] == l.counters.shared_reads[0]);
}

TEST_CASE("a sampled launch shares memory of one group of heads per group, as decoding's block table", "[profile]") {
  using namespace attn;
  // KV head 0 of sequence 0 emulated, of 2 KV heads x 3 sequences: 4 chunks' blocks in x, x = (b, hk,
  // chunk) in the whole launch (24 blocks). The block table's row (8 sectors, 2 of them read by two
  // neighbouring chunks) is the sequence's, every KV head's alike; the cache (40 sectors) the head's own.
  int table = 0, cache = 0;
  const simt::LaunchCounters l = launch_reading(4, {read_in_x(&table, 8, 2), read_in_x(&cache, 40, 0)});
  simt::Counters whole = l.counters;
  whole.grid_x = 24;
  const std::vector<const void*> shared{&table};
  simt::Counters c = scaled(l, HeadSample{1, 6}, shared, whole, 2);
  // Each sequence's row crosses DRAM once: 3 x 8 sectors, beside 6 x 40 of the cache.
  CHECK(c.dram_read_sectors == 3 * 8 + 6 * 40);
  // In a sequence, a sector's readers run from its chunk(s) in KV head 0 to the same in KV head 1:
  // 4 + 1 blocks along x (4 + 2 for the two that two chunks read), every sector shared, per sequence.
  CHECK(c.shared_sectors[0] == 3 * 8);
  CHECK(c.shared_reads[0] == 3 * (6 * 5 + 2 * 6));
  // The span of every head is the broadcast's: one group, its run the whole grid.
  c = scaled(l, HeadSample{1, 6}, shared, whole);
  CHECK(c.dram_read_sectors == 8 + 6 * 40);
  CHECK(c.shared_reads[0] == 6 * (1 + 20) + 2 * (2 + 20));
  // One KV head a sequence (span 1): the row is each group's alone, shared as in the sample.
  c = scaled(l, HeadSample{1, 3}, shared, [&] { simt::Counters w = whole; w.grid_x = 12; return w; }(), 1);
  CHECK(c.dram_read_sectors == 3 * 8 + 3 * 40);
  CHECK(c.shared_sectors[0] == 3 * 2);
  CHECK(c.shared_reads[0] == 3 * 4);
}

TEST_CASE("busy: the blocks in launch order, each given to the SM given the least so far", "[profile]") {
  using namespace attn;
  // Blocks alike: the quantization of waves, blocks / (SMs x ceil(blocks / SMs)).
  CHECK(busy(std::vector<float>(133, 2.f), 132) == Approx(133.0 / 264));
  CHECK(busy(std::vector<float>(8, 1.f), 132) == Approx(8.0 / 132));
  CHECK(busy(std::vector<float>(264, 3.f), 132) == Approx(1.0));
  // Four Q tiles of is_causal visiting 1 to 4 K/V tiles, on 2 SMs. Heaviest first: 4 | 3, then 2 to
  // the SM at 3, 1 to the one at 4: both end at 5, busy 10 / (2 x 5). Lightest first: 1 | 2, 3 to
  // the SM at 1, 4 to the one at 2: the last ends at 6, busy 10 / 12.
  CHECK(busy({4, 3, 2, 1}, 2) == Approx(1.0));
  CHECK(busy({1, 2, 3, 4}, 2) == Approx(10.0 / 12));
  CHECK(busy({0, 0}, 2) == 0);  // no work counted: the model takes the blocks alike
  // In the model: the share of the SMs' time, every term divided by it.
  const gpus::Gpu& g = *gpus::find_gpu("h100");
  simt::Counters c;
  c.launches = 1, c.blocks = 2 * g.sms, c.threads_per_block = 128, c.mufu = 1e9;
  std::vector<float> light_last(static_cast<size_t>(c.blocks)), heavy_last(light_last.size());
  for (size_t i = 0; i < light_last.size(); ++i)
    light_last[i] = static_cast<float>(light_last.size() - i), heavy_last[i] = static_cast<float>(i + 1);
  const Modelled alike = model(c, g), light = model(c, g, nullptr, true, &light_last), heavy = model(c, g, nullptr, true, &heavy_last);
  CHECK(alike.share == 1);
  CHECK(light.share == Approx(busy(light_last, g.sms)));
  CHECK(heavy.share == Approx(busy(heavy_last, g.sms)));
  CHECK(heavy.share < light.share);
  CHECK(heavy.mufu == Approx(alike.mufu / heavy.share));
  const std::vector<float> none(light_last.size(), 0.f);
  CHECK(model(c, g, nullptr, true, &none).share == alike.share);
}

TEST_CASE("the ring: a refill waits for its stage where its copy and its hold outlast the stages", "[profile]") {
  using namespace attn;
  // ring_period alone: 2 stages, a tile given back one tile after it (lag 1), 1 us of hold, a copy's
  // latency of 0.2 us, 1 us of the whole GPU's bandwidth for a stage of every SM.
  const RingStage r{.stages = 2, .lag = 1, .hold_us = 1, .latency_us = 0.2, .all_sms_us = 1};
  // The chains' own period of 3 us leaves room: 2 x 3 >= 0.2 / (1 - 1 / 3) + 3 + 1.
  CHECK(ring_period(r, 3) == 3);
  // 1.5 us does not: the least P with 2 P = 0.2 / (1 - 1 / P) + P + 1.
  const double p = ring_period(r, 1.5);
  CHECK(p > 1.5);
  CHECK(2 * p == Approx(0.2 / (1 - 1 / p) + p + 1).epsilon(1e-9));
  CHECK(ring_period({.stages = 2, .lag = 1, .hold_us = 1.2, .latency_us = 0.2, .all_sms_us = 1}, 1.5) > p);
  // Given back in its own iteration (lag 0), the same tile fits its two stages.
  CHECK(ring_period({.stages = 2, .lag = 0, .hold_us = 1, .latency_us = 0.2, .all_sms_us = 1}, 1.5) == 1.5);
  // A ring no deeper than its lag has no refill to wait for (the counters give it none).
  CHECK(ring_period({.stages = 1, .lag = 1, .hold_us = 1, .latency_us = 0.2, .all_sms_us = 1}, 1.5) == 1.5);
  // Never as short as the bandwidth's own time for a stage of every SM: the latency grows without bound there.
  CHECK(ring_period({.stages = 2, .lag = 0, .hold_us = 0.1, .latency_us = 0.01, .all_sms_us = 4}, 1) > 4);

  // In the model: a warp-specialized block on every SM, two consumer warpgroups (8 warps) taking
  // 500 tiles of 32 KB through 2 stages from L2, each given back a tile late, 1900 of a tile's 2000
  // cycles into the iteration that frees it. Its exponentials keep the MUFUs busier than its
  // products keep the tensor pipe (so that the products below lengthen the hold, not the period).
  const gpus::Gpu& g = gpus::kGpus[0];
  SassKernel k{"k", 64, false, {4, {}, 4, 4}, {100, {}, 2000, 2000}, {}, {20, {}, 30, 30}, {10, {}, 10, 10}, {}};
  k.tile.seen[kSeenWgmma] = 1, k.tile.release = 1900;
  simt::Counters c;
  c.launches = 1, c.blocks = g.sms, c.threads_per_block = 384, c.producer_warps = 4.0 * g.sms;
  c.wgmma = 8.0 * g.sms * 500, c.mufu = 6e8;
  c.global[simt::kTmaLoad].requests = 4.0 * g.sms * 500, c.global[simt::kTmaLoad].sectors = 1024.0 * g.sms * 500;
  c.fill_sectors = 2048.0 * g.sms;
  const simt::Counters no_ring = c;
  c.ring_stages = 2, c.ring_lag = 1, c.ring_stage_bytes = 32768;
  c.ring_tiles = 500.0 * g.sms, c.ring_refills = 498.0 * g.sms;
  const Modelled base = model(no_ring, g, &k), m = model(c, g, &k);
  CHECK(base.ring == 0);
  const double clock_mhz = g.clock_ghz * 1e3, period = (base.latency - base.fill_drain) / 500;
  // The stage: its copy from L2 (nothing crosses DRAM here) at L2's latency, the whole GPU's L2
  // bandwidth for 132 stages; held 1900 cycles (no products of the other consumer counted here).
  const RingStage stage{.stages = 2, .lag = 1, .hold_us = 1900 / clock_mhz, .latency_us = g.l2_latency_clk / clock_mhz,
                        .all_sms_us = 32768.0 * g.sms / (g.l2_tb_s * 1e12) * 1e6};
  const double waited = ring_period(stage, period) - period;
  INFO("period " << period << " us, the ring's " << ring_period(stage, period) << " us");
  CHECK(waited > 0);
  CHECK(m.ring == Approx(waited * 498));
  CHECK(m.latency == Approx(base.latency + m.ring));
  // The later consumer's release waits behind the other's products on the tensor pipe: a longer hold.
  simt::Counters products = c;
  products.wgmma_flop = 500.0 * g.sms * 2 * 1e6;  // 1 MFLOP per consumer and tile
  CHECK(model(products, g, &k).latency - model(products, g, &k).ring == Approx(base.latency));  // the same period
  CHECK(model(products, g, &k).ring > m.ring);
  // Given back in the iteration that used it (lag 0), the tile fits its two stages here.
  simt::Counters prompt = c;
  prompt.ring_lag = 0;
  CHECK(model(prompt, g, &k).ring == 0);
  // Without the SASS's release the hold is the whole iteration: longer.
  SassKernel whole = k;
  whole.tile.release = 0;
  CHECK(model(c, g, &whole).ring > m.ring);
}

TEST_CASE("DRAM re-reads: a block's own, once the blocks resident beside it have swept L2", "[profile]") {
  using namespace attn;
  const gpus::Gpu& g = *gpus::find_gpu("h100");
  // Chapter 04's block per head at N = 4096, d = 128: each of its 32 Q tiles reads the head's 2 MB
  // of K/V (65536 sectors), the 65535 others touched between two reads of one.
  const double kv = 65536, tiles = 32;
  const auto heads = [&](double n) {
    simt::Counters c;
    c.launches = 1, c.blocks = n, c.threads_per_block = 256, c.grid_x = n, c.grid_y = c.grid_z = 1;
    c.dram_read_sectors = n * kv, c.block_load_sectors = n * kv;
    c.reread_l1[simt::reuse_bucket(static_cast<unsigned long long>(kv - 1))] = n * kv * (tiles - 1);
    return c;
  };
  // 64 blocks resident together sweep 64 x 2 MB = 134 MB between two reads: past L2's 50 MB,
  // every re-read crosses DRAM again, and L2 (it missed L1 too).
  const simt::Counters many = heads(64);
  CHECK(dram_rereads(many, g, 132) == Approx(32 * 64 * kv * (tiles - 1)));
  CHECK(dram_rereads(many, g, 132) == Approx(4.161e9).epsilon(1e-3));  // by hand: 64 x 2.097 MB x 31
  const Modelled m = model(many, g);
  CHECK(m.dram_rereads == Approx(32 * 64 * kv * (tiles - 1)));
  CHECK(m.l2_rereads == Approx(32 * 64 * kv * (tiles - 1)));
  CHECK(m.l2 == Approx((l2_bytes(many) + m.l2_rereads) / (g.l2_tb_s * 1e12 * m.share) * 1e6));
  // 16 of them (34 MB) fit L2: no re-read crosses DRAM, and the L2 term counts each sector once.
  const simt::Counters few = heads(16);
  CHECK(dram_rereads(few, g, 132) == 0);
  CHECK(model(few, g).l2_rereads == 0);
  // The same re-reads by cp.async or TMA (reread_l2): DRAM again, and no more through L2 than
  // their requests already counted.
  simt::Counters copies = heads(64);
  std::swap(copies.reread_l1, copies.reread_l2);
  CHECK(dram_rereads(copies, g, 132) == Approx(32 * 64 * kv * (tiles - 1)));
  CHECK(model(copies, g).l2_rereads == 0);
}

TEST_CASE("the tensor term: wgmma at the tensor cores' whole peak, mma.sync at its fraction of it", "[profile]") {
  using namespace attn;
  const gpus::Gpu& g = gpus::kGpus[0];
  simt::Counters c;
  c.launches = 1, c.blocks = 132 * 4, c.threads_per_block = 256;
  simt::Counters by_mma = c, by_wgmma = c, both = c;
  by_mma.mma_flop = 1e12, by_wgmma.wgmma_flop = 1e12;
  both.mma_flop = 1e12, both.wgmma_flop = 1e12;
  const double full = 1e12 / (g.tensor_tflops * 1e12) * 1e6;  // us, every SM busy, every scheduler fed
  CHECK(model(by_wgmma, g).tensor == Approx(full));
  CHECK(model(by_mma, g).tensor == Approx(full / g.mma_sync_fraction));
  CHECK(model(both, g).tensor == Approx(full + full / g.mma_sync_fraction));
  REQUIRE(g.mma_sync_fraction < 1);
}

TEST_CASE("a launch the GPU would refuse: threads, shared memory, registers x threads", "[profile]") {
  using namespace attn;
  const gpus::Gpu& a100 = *gpus::find_gpu("a100");
  const gpus::Gpu& rtx4090 = *gpus::find_gpu("rtx4090");
  simt::Counters c;
  c.launches = 1, c.blocks = 1, c.threads_per_block = 256;
  SassKernel k{"k", 255, false, {}, {}, {}, {}, {}, {}};
  CHECK(launch_refusal(c, &k, a100).empty());  // 255 x 256: 8 warps x 8192 = 65536, the whole file
  c.threads_per_block = 288;                      // 9 warps x 8192
  CHECK_THAT(launch_refusal(c, &k, a100), Contains("too many resources requested for launch") && Contains("A100"));
  CHECK(launch_refusal(c, nullptr, a100).empty());  // registers unknown: nothing to say
  k.registers = 224;  // 7168 per warp: 9 warps fit
  CHECK(launch_refusal(c, &k, a100).empty());
  c.smem_bytes = 100 * 1024;  // past the RTX 4090's 99 KB, within the A100's 163 KB
  CHECK_THAT(launch_refusal(c, &k, rtx4090), Contains("shared memory") && Contains("RTX 4090"));
  CHECK(launch_refusal(c, &k, a100).empty());
  c.smem_bytes = 90 * 1024, c.smem_static_bytes = 10 * 1024;  // 100 KB again, a tenth of it static
  CHECK_THAT(launch_refusal(c, &k, rtx4090), Contains("of static shared memory") && Contains("RTX 4090"));
  CHECK(launch_refusal(c, &k, a100).empty());
  c.threads_per_block = 2048;
  CHECK_THAT(launch_refusal(c, &k, a100), Contains("threads per block"));
}

TEST_CASE("occupancy counts registers: 255 per thread leave room for 2 blocks of 128 threads", "[profile]") {
  using namespace attn;
  const gpus::Gpu& g = gpus::kGpus[0];
  // 255 registers: 8160 per warp, allocated as 8192; 4 warps take 32768 of the 65536.
  CHECK(blocks_per_sm(128, 0, 255, g) == 2);
  CHECK(blocks_per_sm(128, 0, 0, g) == 16);     // registers unknown: threads decide (2048 / 128)
  CHECK(blocks_per_sm(128, 0, 32, g) == 16);    // 32 registers: 16 blocks x 4 warps x 1024 = 65536
  CHECK(blocks_per_sm(128, 0, 40, g) == 12);    // 40 -> 1280 per warp: 65536 / 5120 = 12.8
  CHECK(blocks_per_sm(256, 100 * 1024, 64, g) == 2);  // shared memory: 228 KB / 101 KB
  // The model takes a block's static shared memory with its dynamic: 60 + 20 KB (+ 1 reserved) leave
  // room for 2 blocks in 228 KB, where 60 alone would for 3.
  simt::Counters c;
  c.launches = 1, c.blocks = 1, c.threads_per_block = 128, c.smem_bytes = 60 * 1024;
  CHECK(model(c, g).blocks_per_sm == 3);
  c.smem_static_bytes = 20 * 1024;
  CHECK(model(c, g).blocks_per_sm == 2);
}

#if SIMT_COUNTERS
TEST_CASE("a launch's counters carry its kernel's static shared memory beside the dynamic", "[profile]") {
  using namespace attn;
  Problem p;
  p.B = 1, p.H = 2, p.Lq = p.Lk = 128, p.d = 64, p.dtype = DType::fp16;
  const auto launch = [&](const char* variant, const char* kernel) {  // the variant's launch of that kernel
    const Variant* v = find_variant(variant);
    REQUIRE(v != nullptr);
    for (const auto& stage : dry_launches(*v, p))
      for (const simt::LaunchCounters& l : stage)
        if (l.kernel.find(kernel) != std::string::npos) return l.counters;
    FAIL("no launch of " << kernel);
    return simt::Counters{};
  };
  // Chapter 02's block per row keeps its reductions' scratch in a static __shared__ array, and its
  // O = P V (chapter 01's GEMM) its tiles; chapter 05's lean_loop has only dynamic shared memory.
  CHECK(launch("block_per_row", "softmax_block_kernel").smem_static_bytes == 4 * 33);  // kScratch floats (fused_softmax.h)
  CHECK(launch("block_per_row", "gemm_kernel").smem_static_bytes > 0);
  const simt::Counters lean = launch("lean_loop", "lean_loop_kernel");
  CHECK(lean.smem_static_bytes == 0);
  CHECK(lean.smem_bytes > 0);
}
#endif

#if SIMT_COUNTERS
TEST_CASE("every kernel a chapter launches has SASS data: the issue term and registers apply", "[profile]") {
  using namespace attn;
  std::vector<std::string> missing;
  size_t launches = 0;
  for (const Variant& v : registry())
    for (DType t : {DType::fp16, DType::bf16, DType::fp32})
      for (int d : {32, 64, 96, 128, 256}) {
        Problem p;
        p.B = 1, p.H = 2, p.Lq = p.Lk = 128, p.d = d, p.dtype = t;
        p.softcap = v.score_mod ? 30.f : 0.f;  // chapter 10's step d launches its own kernel with one
        if (!v.unsupported(p).empty()) continue;
        for (const auto& stage : dry_launches(v, p))
          for (const simt::LaunchCounters& l : stage) {
            ++launches;
            // Chapter 09's own kernels are sm_90a's, which tools/sass_issue.py (sm_90) does not read yet.
            if (l.kernel.find(" ch09::") != std::string::npos) continue;
            if (!find_sass(l.kernel)) missing.push_back(v.name + " " + p.describe() + ": \"" + l.kernel + "\"");
          }
      }
  CHECK(launches > 100);
  for (const std::string& m : missing) UNSCOPED_INFO(m);
  CHECK(missing.empty());
}

TEST_CASE("a problem's mask and mods pick their kernel's own SASS rows: is_causal, attn_mask, chapter 10's rules and score mods", "[profile]") {
  using namespace attn;
  auto kernel_of = [](const char* variant, const Problem& p) {  // the attention's kernel: the last launch
    const Variant* v = find_variant(variant);
    REQUIRE(v != nullptr);
    return dry_launches(*v, p).back().back().kernel;
  };
  Problem p;
  p.B = 1, p.H = 2, p.Lq = p.Lk = 128, p.d = 64, p.dtype = DType::fp16, p.mod = ModKind::sliding_window, p.window = 9;
  const std::string rule = kernel_of("mask_mod", p);  // step b: the rule on every tile
  REQUIRE(find_sass(rule) != nullptr);
  for (const char* kind : {"sliding_window", "document", "document_causal"}) {
    INFO(kind);
    const SassKernel* k = find_sass(rule, {.mod = kind});
    REQUIRE(k != nullptr);
    CHECK(std::string(k->name) == rule + " mask_mod=" + kind);
    CHECK(k->tile.instructions != find_sass(rule)->tile.instructions);  // the rule's instructions, not AllKeys'
  }
  CHECK(find_sass(rule, {.mod = "document"})->tile.seen[kSeenLd] > find_sass(rule)->tile.seen[kSeenLd]);  // its two loads
  p.mod = ModKind::none, p.softcap = 30.f;
  const std::string scored = kernel_of("score_mod", p);
  REQUIRE(find_sass(scored, {.score = "softcap"}) != nullptr);
  CHECK(std::string(find_sass(scored, {.score = "softcap"})->name) == scored + " score_mod=softcap");
  CHECK(find_sass(scored, {.mod = "document", .score = "softcap"}) == find_sass(scored, {.score = "softcap"}));  // full tiles: no rule
  // A kernel whose path no mod changes has one row, whatever the problem's mods.
  p.softcap = 0.f;
  const std::string dense = kernel_of("lean_loop", p);
  CHECK(find_sass(dense, {.mod = "document", .score = "softcap"}) == find_sass(dense));
  // lean_loop masks every tile of a problem with is_causal or attn_mask: rows of their own, the
  // mask's with its loads. Chapter 06's balanced masks only the tiles that cross the diagonal: the
  // common path is the unmasked one, whatever is_causal.
  Problem causal = p, masked = p;
  causal.causal = Causal::top_left, masked.mask = MaskKind::boolean;
  const SassKernel* c = find_sass(dense, sass_path(causal));
  REQUIRE(c != nullptr);
  CHECK(std::string(c->name) == dense + " causal=top-left");
  CHECK(c->tile.instructions > find_sass(dense)->tile.instructions);
  const SassKernel* m = find_sass(dense, sass_path(masked));
  REQUIRE(m != nullptr);
  CHECK(std::string(m->name) == dense + " mask=bool");
  CHECK(m->tile.seen[kSeenLd] > find_sass(dense)->tile.seen[kSeenLd]);
  const std::string balanced = kernel_of("balanced", causal);
  CHECK(find_sass(balanced, sass_path(causal)) == find_sass(balanced));
}

TEST_CASE("chapter 10's step a is modelled on its mask's path, whatever is_causal the problem names", "[profile]") {
  using namespace attn;
  ProfileOptions o;
  Profiler profiler(o);
  RunOptions checks;
  checks.sample = false;
  Problem p;
  p.B = 1, p.H = 1, p.Lq = p.Lk = 128, p.d = 64, p.dtype = DType::fp16, p.causal = Causal::top_left;
  const Variant* v = find_variant("mask_tensor");
  REQUIRE(v != nullptr);
  const Profile& pr = profiler.run(*v, p, profiler.plan(*v, p), checks, false);
  REQUIRE(pr.stages.size() == 2);
  CHECK(pr.stages[0].path.causal != nullptr);  // the mask's writer evaluates the problem's rule
  const SassPath& attention = pr.stages[1].path;  // lean_loop over the bytes: is_causal is in them
  CHECK(attention.causal == nullptr);
  REQUIRE(attention.mask != nullptr);
  CHECK(std::string(attention.mask) == "bool");
}

TEST_CASE("the SASS data knows when a kernel's source changed since it was written", "[profile]") {
  using namespace attn;
  // The C++ hash agrees with tools/sass_issue.py's on every committed source (as CTest
  // sass_data_fresh, from the other side).
  const std::string root = FLASHSTEPS_SOURCE_DIR;
  CHECK(stale_sass_sources(root).empty());
  // A tree where one listed file changed and the rest are gone: every file is reported.
  char dir[] = "/tmp/flashsteps_sass_fresh_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::vector<std::string> stale = stale_sass_sources(dir);
  CHECK(stale.size() == std::size(kSassSources));
  rmdir(dir);
  // One listed file present and edited: stale, unless the build compiled its kernels again as the
  // file is now (kSassLive names it with that hash, and nothing kept the build from it).
  char edited_dir[] = "/tmp/flashsteps_sass_live_XXXXXX";
  REQUIRE(mkdtemp(edited_dir) != nullptr);
  const std::string path = kSassSources[0].path;
  const std::string file = std::string(edited_dir) + "/" + path;
  REQUIRE(std::system(("mkdir -p \"$(dirname '" + file + "')\"").c_str()) == 0);
  std::ofstream(file) << "an edit";
  const SassSource edit{kSassSources[0].path, fnv1a64("an edit")};
  const auto stale_here = [&](const SassLive& live) {
    const std::vector<std::string> v = stale_sass_sources(edited_dir, live);
    return std::find(v.begin(), v.end(), path) != v.end();
  };
  CHECK(stale_here({nullptr, 0, nullptr, 0, ""}));
  CHECK_FALSE(stale_here({nullptr, 0, &edit, 1, ""}));
  CHECK(stale_here({nullptr, 0, &edit, 1, "nvdisasm not found"}));
  const SassSource older{kSassSources[0].path, fnv1a64("an older edit")};
  CHECK(stale_here({nullptr, 0, &older, 1, ""}));  // edited again since the build compiled it
  REQUIRE(std::system(("rm -rf '" + std::string(edited_dir) + "'").c_str()) == 0);
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);  // FNV-1a's offset basis
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);   // the published test vector
  // Which kernels a stale file touches: its chapter's namespace, chapter 06's policy inside chapter
  // 05's kernel, and everything for a file under common/.
  const std::string ch06 = "void ch05::lean_loop_kernel<__half, 128, ch06::SkipTiles<0, 0>>(attn::AttentionParams)";
  CHECK(built_from(ch06, {"06_causal/skip_tiles.cu"}));
  CHECK(built_from(ch06, {"05_flash_v2/lean_loop.cuh"}));
  CHECK_FALSE(built_from(ch06, {"03_tiled_softmax/online_softmax.cuh"}));
  CHECK(built_from(ch06, {"common/kernels/params.h"}));
  CHECK_FALSE(built_from(ch06, {"tools/sass_issue.py"}));
}

namespace {
// The value of the column `name` in a CSV row, by the header line.
double csv_column(const std::string& header, const std::string& row, const std::string& name) {
  const std::vector<std::string> names = attn::split_csv(header), fields = attn::split_csv(row);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return std::atof(fields.at(i).c_str());
  FAIL("no column " << name);
  return 0.0;
}
}  // namespace

TEST_CASE("rows_32's tile loop issues more than lean_loop's: it models more issue time", "[profile]") {
  // Chapter 05's steps g and h see the same instructions (ldmatrix, cp.async, mma.sync); the SASS
  // of step g's tile loop issues far more around them (results/static-sm90: 1327 against 729 per
  // tile at d = 64).
  const std::string counters = scratch("issue.csv");
  std::string out;
  REQUIRE(flashsteps("profile -v rows_32 -v lean_loop -n 512 --counters-csv " + counters, out) == 0);
  INFO(out);
  const std::vector<std::string> rows = lines(counters);
  REQUIRE(rows.size() == 3);
  auto column = [&](const std::string& row, const std::string& name) { return csv_column(rows[0], row, name); };
  CHECK(column(rows[1], "mma") == column(rows[2], "mma"));
  CHECK(column(rows[1], "instructions") > 1.4 * column(rows[2], "instructions"));
  CHECK(column(rows[1], "issue_us") > 1.4 * column(rows[2], "issue_us"));
  CHECK_THAT(out, Contains("warp instructions"));
  std::remove(counters.c_str());
}

TEST_CASE("the counters CSV carries chapter 09's wgmma and TMA counts", "[profile]") {
  // tma_ring's two products are wgmma and its K/V tiles come by TMA; fa2_baseline's are mma.sync
  // and cp.async: each kind lands in its own columns, with the whole problem's FLOP.
  const std::string counters = scratch("hopper.csv");
  std::string out;
  REQUIRE(flashsteps("profile -v fa2_baseline -v tma_ring -n 256 -d 64 --counters-csv " + counters, out) == 0);
  INFO(out);
  const std::vector<std::string> rows = lines(counters);
  REQUIRE(rows.size() == 3);
  auto column = [&](const std::string& row, const std::string& name) { return csv_column(rows[0], row, name); };
  const double flops = 4.0 * 1 * 2 * 256 * 256 * 64;  // B = 1, H = 2 (the CPU's default), N = 256, d = 64
  CHECK(column(rows[1], "mma_flop") == flops);
  CHECK(column(rows[1], "wgmma_flop") == 0);
  CHECK(column(rows[1], "tma_requests") == 0);
  CHECK(column(rows[2], "mma_flop") == 0);
  CHECK(column(rows[2], "wgmma_flop") == flops);
  CHECK(column(rows[2], "wgmma") > 0);
  CHECK(column(rows[2], "tma_requests") > 0);
  // The boxes bring at least K and V once: 2 x B x H x N x d fp16 values.
  CHECK(32 * column(rows[2], "tma_requests") * column(rows[2], "tma_sectors_per_request") >= 2.0 * 2 * 256 * 64 * 2);
  std::remove(counters.c_str());
}

TEST_CASE("profile prints each stage's counters and modelled time, and appends modelled rows", "[profile]") {
  const std::string csv = scratch("rows.csv"), counters = scratch("counters.csv");
  std::string out;
  INFO(out);
  REQUIRE(flashsteps("profile -v warp_per_row -v exp2 -n 64 --csv " + csv + " --counters-csv " + counters, out) == 0);
  CHECK_THAT(out, Contains("modelled on H100 SXM5"));
  CHECK_THAT(out, Contains("sectors/req"));
  CHECK_THAT(out, Contains("P = softmax(scale*S)"));
  CHECK_THAT(out, Contains("a model, not a measurement"));
  const std::vector<std::string> rows = lines(csv);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == attn::kCsvHeader);
  for (size_t i = 1; i < rows.size(); ++i) {
    CHECK_THAT(rows[i], Contains("\"H100 SXM5\",none,"));
    CHECK_THAT(rows[i], Contains(",modelled,"));
  }
  const std::vector<std::string> stages = lines(counters);
  REQUIRE(stages.size() == 1 + 2 * 3);  // the header, then 3 stages per variant
  CHECK(stages[0] == attn::kCountersCsvHeader);
  std::remove(csv.c_str());
  std::remove(counters.c_str());

  // The emulator's times of a plain run, beside the modelled ones.
  const std::string times = scratch("times.csv");
  REQUIRE(flashsteps("tour -n 64 --csv " + times, out) == 0);
  REQUIRE(flashsteps("tour --profile -n 64 --gpu h200 --emulator-times " + times, out) == 0);
  CHECK_THAT(out, Contains("modelled on H200 SXM"));
  CHECK_THAT(out, Contains("emulator ms"));
  CHECK_THAT(out, Contains("modelled us"));
  CHECK_THAT(out, Contains("06_causal"));
  CHECK_THAT(out, !Contains("sectors/req"));  // the tour's profile is the summary only
  CHECK_THAT(out, Contains("faster than the mask as a tensor (modelled)"));
  std::remove(times.c_str());
}

TEST_CASE("profile at a Figure 5 shape prints FlashAttention-2's and FlashAttention-3's published rates beside their structures' steps", "[profile]") {
  // B·N = 16k, H·d = 2048 (N = 512, d = 64): the FlashAttention-3 paper's shapes, where it published
  // both (common/model/published.h): 282 and 333 TFLOP/s.
  std::string out;
  INFO(out);
  REQUIRE(flashsteps("profile -v lean_loop -v causal_skip -b 32 -H 32 -n 512 -d 64 --emulated-heads 1", out) == 0);
  CHECK_THAT(out, Contains("reference: FlashAttention-2, H100 SXM5"));
  CHECK_THAT(out, Contains("   282 "));
  CHECK_THAT(out, Contains("lean_loop's modelled time over FlashAttention-2's measured one"));
  CHECK_THAT(out, Contains("reference: FlashAttention-3, H100 SXM5"));
  CHECK_THAT(out, Contains("   333 "));
  CHECK_THAT(out, Contains("causal_skip's modelled time over FlashAttention-3's measured one"));
  // The ratio is what it says: lean_loop's modelled time over FlashAttention-2's published one.
  std::smatch m;
  const std::regex model(R"(lean_loop \(05_flash_v2\): check pass; modelled on H100 SXM5: ([0-9.]+) us)"),
      published(R"(reference: FlashAttention-2, H100 SXM5 +([0-9.]+) )"), ratio(R"(model / published: ([0-9.]+) \(lean_loop)");
  REQUIRE(std::regex_search(out, m, model));
  const double model_us = std::stod(m[1]);
  REQUIRE(std::regex_search(out, m, published));
  const double published_us = std::stod(m[1]);
  REQUIRE(std::regex_search(out, m, ratio));
  CHECK(std::stod(m[1]) == Approx(model_us / published_us).epsilon(0.01));
}

TEST_CASE("profile of a problem too large to emulate whole says what it emulated", "[profile]") {
  std::string out;
  REQUIRE(flashsteps("profile -v exp2 -b 2 -H 3 -n 64 --emulated-heads 2", out) == 0);
  INFO(out);
  CHECK_THAT(out, Contains("problem: B=2 H=3 Lq=64"));
  CHECK_THAT(out, Contains("exp2: sampled: every block of 2 of the 6 (batch, head) pairs, counts multiplied by 3; "
                           "the rest was not emulated, and went unchecked"));
  CHECK_THAT(out, Contains("emulating B=1 H=2 Lq=64"));
  CHECK_THAT(out, Contains("checked: every output row (128 = B*H*Lq)"));  // of the heads emulated
  // Row groups: the Lq of each run, and the polynomial.
  REQUIRE(flashsteps("profile -v exp2 -b 1 -H 1 -n 1100 --row-groups always", out) == 0);
  CHECK_THAT(out, Contains("rows: Lq = 332, 588 (1 to 2 groups of 256 rows and the last partial one), counts a line in "
                           "the groups taken to the problem's 4"));
  CHECK_THAT(out, Contains("emulating B=1 H=1 Lq=588 Lk=1100"));
  // Grouped K/V heads: whole groups of the query heads that share one (their reads of it cross from
  // DRAM once), here 1 asked for, 2 emulated on 1 K/V head.
  REQUIRE(flashsteps("profile -v varlen -H 4 --kv-heads 2 --seqlens 40,24 --emulated-heads 1", out) == 0);
  CHECK_THAT(out, Contains("sampled: every block of 2 of the 4 (batch, head) pairs, counts multiplied by 2"));
  CHECK_THAT(out, Contains("emulating B=1 H=2 Hkv=1 Lq=64"));
  // Step f's window in each sequence: the same sampling, the map and the attention each a stage with
  // the SASS data's issue term (its rows name the packed window's Policy).
  REQUIRE(flashsteps("profile -v window -H 4 --kv-heads 2 --seqlens 40,24 --mask-mod window --window-size 8,0 "
                     "--emulated-heads 1", out) == 0);
  CHECK_THAT(out, Contains("emulating B=1 H=2 Hkv=1 Lq=64 Lk=64 d=64 fp16 mask_mod(window 8,0) varlen(2 sequences"));
  CHECK_THAT(out, Contains("window (10_masks): check pass") && Contains("the tile map (a prefix sum of cu_seqlens)") &&
                      Contains("FlashAttention-2 over the window's tiles in each sequence"));
  CHECK_THAT(out, !Contains("issue     not modelled"));
  // Asked for more heads than there are, and no rows: every head, no sampling said.
  REQUIRE(flashsteps("profile -v exp2 -b 2 -H 3 -n 64 --emulated-heads 9", out) == 0);
  CHECK_THAT(out, !Contains("sampled:"));
  CHECK_THAT(out, Contains("checked: every output row (384 = B*H*Lq)"));
}

TEST_CASE("backward --profile counts chapter 07's steps through the same profiler", "[profile]") {
  const std::string counters = scratch("backward-counters.csv");
  std::string out;
  REQUIRE(flashsteps("backward --profile -v kv_outer -v tensor_cores -n 64 --counters-csv " + counters, out) == 0);
  INFO(out);
  CHECK_THAT(out, Contains("kv_outer (07_backward): check pass; modelled on H100 SXM5"));
  CHECK_THAT(out, Contains("dK, dV, dQ acc (K/V outer)"));
  CHECK_THAT(out, Contains("| atom "));  // dQ's fp32 atomics, in the global line
  CHECK_THAT(out, Contains("a model, not a measurement"));
  CHECK_THAT(out, !Contains("median ms"));  // counted, not timed
  const std::vector<std::string> stages = lines(counters);
  REQUIRE(stages.size() == 1 + 2 * 3);  // the header, then 3 stages per variant (D, the main loop, dQ)
  CHECK(stages[0] == attn::kCountersCsvHeader);
  CHECK_THAT(stages[1], Contains(",07_backward,kv_outer,"));
  std::remove(counters.c_str());
}

TEST_CASE("profile: every GPU of the table has the model's rates; a GPU without them is refused", "[profile]") {
  for (const gpus::Gpu& g : gpus::kGpus) {
    INFO(g.key);
    CHECK(g.modelled());
    CHECK(g.clock_ghz > 0);
    CHECK(g.l2_tb_s > 0);
    CHECK(g.l2_mb > 0);
    CHECK(g.l1_wavefronts_per_clk > 0);
    CHECK(g.mufu_per_clk > 0);
    CHECK(g.fp32_tflops > 0);
    CHECK(g.mma_sync_fraction > 0);
    CHECK(g.mma_sync_fraction <= 1);
    CHECK(g.launch_us > 0);
    CHECK(g.l2_latency_clk > 0);
    CHECK(g.dram_latency_clk > g.l2_latency_clk);  // a miss waits for the hit's path and DRAM's
    CHECK(std::string(g.rate_sources).size() > 0);
  }
  // No row of the table lacks rates today, so the refusal is held with a row made here: limits, no rates.
  const gpus::Gpu bare{.key = "bare", .name = "Bare GPU", .cc_major = 8, .cc_minor = 0, .sms = 1,
                       .smem_optin_bytes = 48 * 1024, .smem_per_sm_bytes = 48 * 1024, .smem_reserved_bytes = 0,
                       .max_threads_per_sm = 1024, .max_blocks_per_sm = 16};
  CHECK_THROWS_WITH(attn::require_rates(bare), Contains("the model has no rates for the Bare GPU yet (it models h100, "
                                                        "h200, h100-pcie, t4, a100,"));
  CHECK_NOTHROW(attn::require_rates(*gpus::find_gpu("a100")));
}

TEST_CASE("profile --gpu list: every GPU with its latencies, each row naming where its latencies come from", "[profile]") {
  std::string out;
  REQUIRE(flashsteps("profile --gpu list", out) == 0);
  INFO(out);
  CHECK_THAT(out, Contains("L2/DRAM clk"));
  for (const gpus::Gpu& g : gpus::kGpus) {
    INFO(g.key);
    char latencies[32];  // as cited: 261.5, not rounded
    std::snprintf(latencies, sizeof latencies, "%g/%g", g.l2_latency_clk, g.dram_latency_clk);
    std::string row;  // the GPU's own row, the one that starts with its key
    std::istringstream rows(out);
    for (std::string line; std::getline(rows, line);)
      if (line.rfind(std::string(g.key) + " ", 0) == 0) row = line;
    CHECK_THAT(row, Contains(latencies));
    char dram[32];  // the datasheet's rate and the share a copy reaches of it
    std::snprintf(dram, sizeof dram, "%g x %.2f", g.dram_tb_s, g.dram_copy_share);
    CHECK_THAT(row, Contains(dram));
    // Cited ([lat], [copy], gpus.h's sources) or named among the row's assumptions.
    const std::string sources = g.rate_sources;
    CHECK((sources.find("[lat]") != std::string::npos || sources.find("latencies") != std::string::npos));
    CHECK((sources.find("[copy]") != std::string::npos || sources.find("DRAM copy share") != std::string::npos));
    CHECK(g.dram_copy_share > 0.5);
    CHECK(g.dram_copy_share <= 1.0);
  }
}

#if SIMT_COUNTERS
TEST_CASE("profile --gpu a100: another GPU's rates, and sm_80's SASS or sm_90's named as a stand-in", "[profile]") {
  std::string out;
  REQUIRE(flashsteps("run --profile --gpu a100 -n 256 -v lean_loop", out) == 0);
  INFO(out);
  CHECK_THAT(out, Contains("lean_loop (05_flash_v2): check pass; modelled on A100 SXM4 80GB"));
  if (attn::sass_cc(80) == 80) {  // a build with FLASHSTEPS_SASS_ARCHS=80
    CHECK_THAT(out, Contains("(the sm_80 SASS's, weighted"));
    CHECK_THAT(out, !Contains("stands in"));
  } else {
    CHECK_THAT(out, Contains("(the sm_90 SASS's, weighted"));
    CHECK_THAT(out, Contains("sm_90's code stands in for sm_80's: add 80 to the counters build's -DFLASHSTEPS_SASS_ARCHS"));
  }
  CHECK_THAT(out, Contains("of the 312.0 TFLOP/s dense fp16 tensor-core peak"));
  REQUIRE(flashsteps("run --profile -n 256 -v lean_loop", out) == 0);  // the H100: sm_90, no stand-in
  CHECK_THAT(out, !Contains("stands in"));
}
#endif

TEST_CASE("profile: a wrong option is refused before any work", "[profile]") {
  std::string out;
  CHECK(flashsteps("profile --gpu a101", out) == 2);
  CHECK_THAT(out, Contains("unknown --gpu \"a101\": use one of h100, h200"));
  CHECK(flashsteps("profile --sample-blocks 0", out) == 2);
  CHECK_THAT(out, Contains("--sample-blocks must be at least 1"));
  CHECK(flashsteps("profile --emulated-heads -1", out) == 2);
  CHECK_THAT(out, Contains("--emulated-heads must be 0"));
  CHECK(flashsteps("profile --row-groups some", out) == 2);
  CHECK_THAT(out, Contains("--row-groups takes auto, always or never"));
  CHECK(flashsteps("backward --profile --row-groups always -n 64", out) == 2);  // the backward samples heads, not rows
  CHECK_THAT(out, Contains("backward --profile emulates every row"));
  CHECK_THAT(out, !Contains("checked:"));
  CHECK(flashsteps("decode --profile --emulated-heads 2", out) == 2);  // decoding chooses its own sample
  CHECK_THAT(out, Contains("decode --profile chooses what it emulates itself"));
  CHECK_THAT(out, !Contains("checked:"));
  CHECK(flashsteps("profile --chapter 99", out) == 2);
  CHECK_THAT(out, Contains("no chapter starts with"));
  CHECK(flashsteps("tour --profile --emulator-times /nonexistent/times.csv", out) == 2);
  CHECK_THAT(out, Contains("cannot read --emulator-times"));
  const std::string foreign = scratch("foreign.csv");
  std::ofstream(foreign) << "not,our,header\n";
  CHECK(flashsteps("profile -v exp2 --counters-csv " + foreign, out) == 2);
  CHECK_THAT(out, Contains("does not start with the counters CSV header"));
  CHECK_THAT(out, !Contains("checked:"));  // refused before any work
  CHECK(lines(foreign).size() == 1);
  std::remove(foreign.c_str());
}
#else
TEST_CASE("without counters, profile and --profile refuse before any work, saying how to get them", "[cli]") {
  const std::string csv = scratch("refused.csv");
  for (const char* args : {"profile", "tour --profile", "run --profile -v naive", "backward --profile"}) {
    std::string out;
    INFO(args);
    CHECK(flashsteps(std::string(args) + " --csv " + csv, out) == 2);
    INFO(out);
    CHECK_THAT(out, Contains(FLASHSTEPS_GPU ? "Nsight Compute" : "-DFLASHSTEPS_COUNTERS=ON"));
    CHECK_THAT(out, !Contains("checked:"));  // no problem was set up, nothing ran
    CHECK(lines(csv).empty());
  }
}
#endif
