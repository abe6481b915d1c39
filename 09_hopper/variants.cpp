// variants.cpp: chapter 09 in the registry. Step a is chapter 05's best, registered again here so
// that every later step has its baseline in the same chapter and the same run; step b moves both
// products to wgmma; step c hands the copies to TMA; step d gives them to a warpgroup of their own;
// step e has the two consumer warpgroups take turns; step f overlaps each one's softmax with its own
// P V; step g skips what is_causal hides, as chapter 06 does; step h takes a consumer more where
// the head dim leaves it the registers; step i keeps one block per SM, walking step h's Q tiles.
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>

#include "05_flash_v2/flash_v2.h"
#include "06_causal/causal.h"
#include "harness/registry.h"
#include "hopper.h"
#include "model/sampling.h"

namespace {
using namespace attn;

// Every step's traffic is FlashAttention-2's (Problem::fa2_bytes) for its Q tile of Br rows. From
// step b on, the code is sm_90a's (wgmma), and a launch asks for its tiles' shared memory (tiles(d))
// and kAlign.
Variant step(const char* name, const char* description, cudaError_t (*kernel)(const AttentionParams&),
             std::function<int(const Problem&)> Br, std::function<long(int d)> tiles = {}) {
  Variant v{.chapter = "09_hopper", .name = name, .description = description};
  v.sm90a = static_cast<bool>(tiles);
  v.min_cc = tiles ? 90 : 80;
  if (tiles) v.smem_bytes = [tiles](const Problem& p) { return static_cast<size_t>(tiles(p.d) + ch09::kAlign); };
  v.dtypes = {DType::fp16, DType::bf16};
  v.head_dims.list = as_vector(ch09::HopperDims{});
  v.mask = false;  // as FlashAttention-3: is_causal, no attn_mask (wgmma.cu says why)
  v.writes_lse = true;
  v.max_heads = 65535;
  v.cpu_flops_per_second = 8e8;
  v.hbm_bytes = [Br](const Problem& p) { return p.fa2_bytes(Br(p)); };
  const std::string stage = std::string("Hopper (") + name + ")";
  v.run = [kernel, stage](const AttentionParams& p, Stages& st) { st.run(stage, [&] { return kernel(p); }); };
  return v;
}

const Register a([] {
  Variant v = step("fa2_baseline", "chapter 05's best (lean_loop): mma.sync, ldmatrix, cp.async; the baseline",
                   ch05::lean_loop, [](const Problem& p) { return ch05::fa2_tiles(p.d).Br; });
  v.smem_bytes = [](const Problem& p) {
    return static_cast<size_t>(ch05::smem_bytes(ch05::Step::lean_loop, p.d, dtype_size(p.dtype)));
  };
  v.mask = true;  // chapter 05's kernel has attn_mask; only the chapter's own steps go without
  return v;
}());
std::string plan(const Problem& p, const char* rows, const char* copies, long smem) {
  char s[240];
  std::snprintf(s, sizeof s, "Br = %s, Bc = %d, %s, %ld bytes of shared memory, wgmma m64n%dk16 and m64n%dk16", rows,
                ch09::kBc, copies, smem, ch09::kBc, p.d);
  return std::string(s);
}
const Register b([] {
  Variant v = step("wgmma", "both products as wgmma from shared memory, a warpgroup per 64 rows, P from registers",
                   ch09::wgmma, [](const Problem&) { return ch09::kBr; }, [](int d) { return ch09::smem_bytes(d); });
  v.plan = [](const Problem& p) {
    return plan(p, "64 (a warpgroup)", "copies by every thread", ch09::smem_bytes(p.d));
  };
  return v;
}());
const Register c([] {
  Variant v = step("tma_ring", "K/V tiles copied by TMA into a ring of 2 stages, full and empty mbarriers",
                   ch09::tma_ring, [](const Problem&) { return ch09::kBr; }, [](int d) { return ch09::ring_smem_bytes(d); });
  v.plan = [](const Problem& p) {
    return plan(p, "64 (a warpgroup)", "TMA into 2 stages", ch09::ring_smem_bytes(p.d));
  };
  return v;
}());
// Steps d onwards: Q tiles of consumers(d) * kBr rows, the ring of ring.cuh filled by the
// producer. Steps f onwards give a stage back a tile later, and have a stage more (hopper.h's
// kRotatedStages); step h has the consumers its head dim allows (consumers_for), the others two.
int two_consumers(int) { return ch09::kConsumers; }
Variant ring_step(const char* name, const char* description, cudaError_t (*kernel)(const AttentionParams&),
                  const char* consumers_do, bool rotated = false, int (*consumers)(int d) = two_consumers,
                  bool persistent = false) {
  const int stages = rotated ? ch09::kRotatedStages : ch09::kStages;
  const auto smem = [stages, consumers, persistent](int d) { return ch09::ws_smem_bytes(d, stages, consumers(d), persistent); };
  Variant v = step(name, description, kernel, [consumers](const Problem& p) { return consumers(p.d) * ch09::kBr; }, smem);
  v.plan = [consumers_do, stages, consumers, smem](const Problem& p) {
    static const char* const count[] = {"no", "one", "two", "three", "four"};  // split_roles' budget: at most four
    const int n = consumers(p.d);
    const std::string rows = std::to_string(n * ch09::kBr) + " (" + count[n] + " consumer warpgroups " + consumers_do +
                             ", one producer)";
    const std::string copies = "TMA into " + std::to_string(stages) + " stages by the producer";
    return plan(p, rows.c_str(), copies.c_str(), smem(p.d));
  };
  return v;
}
const Register d(
    ring_step("warp_specialized",
              "a producer warpgroup (24 registers) issues the TMA copies; two consumer warpgroups (240) compute",
              ch09::warp_specialized, "of 64 rows"));
const Register e(
    ring_step("ping_pong",
              "step d's consumers take turns issuing Q K^T (named barriers): one's softmax under the other's products",
              ch09::ping_pong, "taking turns"));
const Register f(
    ring_step("intra_overlap",
              "step e with each consumer's softmax of tile j overlapping its own P V of tile j - 1 (wgmma_wait<1>), "
              "a ring of 3 stages",
              ch09::intra_overlap, "taking turns", true));
// Steps g and h: step f's ring, taking turns, on the (Q tile, K/V tile) pairs per head that
// chapter 06's tiles_to_visit gives their Q tiles of consumers(d) x 64 rows.
long long skipped_pairs(const Problem& p, int rows, bool skip) {
  AttentionParams a{};
  a.Lq = p.Lq, a.Lk = p.Lk, a.causal = p.causal;
  return ch06::visited_pairs(a, rows, ch09::kBc, skip);
}
Variant skip_step(const char* name, const char* description, cudaError_t (*kernel)(const AttentionParams&),
                  int (*consumers)(int d), bool persistent = false) {
  Variant v = ring_step(name, description, kernel, "taking turns", true, consumers, persistent);
  const auto rows = [consumers](const Problem& p) { return consumers(p.d) * ch09::kBr; };
  v.hbm_bytes = [rows](const Problem& p) { return p.fa2_bytes_visited(skipped_pairs(p, rows(p), true), ch09::kBc); };
  if (persistent)  // its work items: the Q tiles of every head
    v.work_items = [rows](const Problem& p) { return static_cast<long long>(p.heads()) * ((p.Lq + rows(p) - 1) / rows(p)); };
  v.plan = [rows_plan = v.plan, rows, persistent](const Problem& p) {
    AttentionParams a{};
    a.B = p.B, a.H = p.H, a.Lk = p.Lk;
    const unsigned heads = static_cast<unsigned>(p.B * p.H), section = ch09::kv_section(a, dtype_size(p.dtype), p.d);
    char s[200];
    std::snprintf(s, sizeof s, "; %lld of %lld (Q tile, K/V tile) pairs visited per head", skipped_pairs(p, rows(p), true),
                  skipped_pairs(p, rows(p), false));
    std::string order = "; Q tiles first";
    if (p.causal != Causal::none)
      order = section < heads ? "; heaviest Q tiles first, " + std::to_string(section) + " heads at a time (their K/V in 32 MB)"
                              : "; heaviest Q tiles first";
    return rows_plan(p) + s + order + (persistent ? "; one block per SM, walking the Q tiles in that order" : "");
  };
  return v;
}
const Register g(skip_step("causal_skip",
                           "step f with chapter 06's policy: K/V tiles above the diagonal skipped, only the crossing "
                           "ones masked; under is_causal the heaviest Q tiles first, a section of heads at a time",
                           ch09::causal_skip, two_consumers));
// Steps h and i: a row group of whole blocks of consumers_for(d) x 64 rows (192 at d = 64).
int whole_blocks(const Problem& p) { return std::lcm(kRowGroup, ch09::consumers_for(p.d) * ch09::kBr); }
const Register h([] {
  Variant v = skip_step("head_dim_tiles",
                        "step g with the consumers the head dim allows: three (160 registers, 192 rows) at d = 64, "
                        "step g's two at d = 128",
                        ch09::head_dim_tiles, ch09::consumers_for);
  v.row_group = whole_blocks;
  return v;
}());
const Register i([] {
  Variant v = skip_step("persistent",
                        "step h with one block per SM, each walking step h's Q tiles in its order: the next Q tile's "
                        "copies under the last one's products and stores",
                        ch09::persistent, ch09::consumers_for, true);
  v.row_group = whole_blocks;
  v.best = true;
  return v;
}());

}  // namespace
