// test_rules.cpp: each counting rule of simt/counters.h on a kernel made to show it
// (rule_kernels.cu), against the count worked out by hand.
#include <catch2/catch.hpp>
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "counters_support.h"
#include "rule_kernels.h"

using counters_test::Device;
using counters_test::count;

TEST_CASE("global loads: 32-byte sectors per request follow the stride", "[counters]") {
  const int n = 1024;
  Device<float> in(32 * n), out(n);
  for (int stride : {1, 2, 8, 32}) {
    INFO("stride " << stride);
    const simt::Counters c = count([&] { return rules::strided_copy(in.get(), out.get(), n, stride); });
    const simt::GlobalOps& ld = c.global[simt::kGlobalLoad];
    const simt::GlobalOps& st = c.global[simt::kGlobalStore];
    CHECK(ld.requests == n / 32);
    CHECK(ld.lanes == n);
    CHECK(ld.bytes == 4.0 * n);
    // 32 floats `stride` apart: 128 * stride bytes, one sector per 8 / stride floats, at most 32.
    const double sectors = std::min(32, 4 * stride);
    CHECK(ld.sectors == sectors * ld.requests);
    CHECK(ld.lines == std::min(32, stride) * ld.requests);
    CHECK(st.requests == n / 32);
    CHECK(st.sectors == 4 * st.requests);
    // Each sector of `in` the warps touch, once; `out` written once.
    CHECK(c.dram_read_sectors == n / 32 * sectors);
    CHECK(c.dram_write_sectors == n * 4 / 32);
    CHECK(c.shared_requests() == 0);
  }
}

TEST_CASE("threadIdx, blockIdx, blockDim and gridDim are not shared-memory accesses", "[counters]") {
  Device<unsigned> out(4 * 256);
  const simt::Counters c = count([&] { return rules::builtins_only(out.get(), 4, 256); });
  CHECK(c.shared_requests() == 0);
  CHECK(c.global[simt::kGlobalLoad].requests == 0);
  CHECK(c.global[simt::kGlobalStore].requests == 4 * 256 / 32);
  CHECK(c.global[simt::kGlobalStore].sectors == 4 * c.global[simt::kGlobalStore].requests);
}

TEST_CASE("shared memory: 32 banks of 4 bytes, a word for many lanes is a broadcast", "[counters]") {
  Device<float> out(32);
  for (bool dynamic : {false, true})
    for (int stride : {0, 1, 2, 4, 32, 33}) {
      INFO((dynamic ? "dynamic" : "static") << " shared memory, lane l at word l * " << stride);
      const simt::Counters c = count([&] { return rules::shared_stride(out.get(), stride, dynamic); });
      // stride s: 32 lanes over 32 / gcd(s, 32) banks; s = 0: one word for all.
      const int ways = stride == 0 ? 1 : std::gcd(stride, 32);
      const simt::SharedOps& st = c.shared[simt::kSharedStore32];
      const simt::SharedOps& ld = c.shared[simt::kSharedLoad32];
      CHECK(st.requests == 1);
      CHECK(st.wavefronts == ways);
      CHECK(st.conflicts() == ways - 1);
      CHECK(ld.requests == 2);  // the lane's word, and word 0 for everyone
      CHECK(ld.wavefronts == ways + 1);
      CHECK(c.global[simt::kGlobalStore].requests == 1);
    }
}

TEST_CASE("shared memory: 64-bit accesses in half-warp phases, 128-bit in quarter-warp phases", "[counters]") {
  Device<float> out(32);
  struct Case {
    int width, spread, kind_offset, wavefronts;
  };
  // width 8, consecutive: 2 phases of 128 bytes. width 16, consecutive: 4 phases of 128 bytes.
  // width 16, every other 16 bytes: each 8-lane phase spans 256 bytes, two words per bank.
  for (const Case& k : {Case{4, 1, 0, 1}, Case{8, 1, 1, 2}, Case{16, 1, 2, 4}, Case{16, 2, 2, 8}, Case{8, 2, 1, 4}}) {
    INFO(k.width << "-byte accesses, spread " << k.spread);
    const simt::Counters c = count([&] { return rules::shared_vector(out.get(), k.width, k.spread); });
    const simt::SharedOps& st = c.shared[simt::kSharedStore32 + k.kind_offset];
    const simt::SharedOps& ld = c.shared[simt::kSharedLoad32 + k.kind_offset];
    CHECK(st.requests == 1);
    CHECK(ld.requests == 1);
    CHECK(st.wavefronts == k.wavefronts);
    CHECK(ld.wavefronts == k.wavefronts);
    CHECK(ld.ideal == k.width / 4);  // phases: 1, 2 or 4
  }
}

TEST_CASE("divergent lanes: each branch and each loop iteration is a request of the lanes in it", "[counters]") {
  Device<float> in(128), out(32);
  const simt::Counters c = count([&] { return rules::divergent(in.get(), out.get(), 40); });
  const simt::GlobalOps& ld = c.global[simt::kGlobalLoad];
  // if: one request of 16 lanes; else: two of the other 16; the loop: iteration 0 with 32
  // lanes, iteration 1 with 8.
  CHECK(ld.requests == 5);
  CHECK(ld.lanes == 3 * 16 + 40);
  // in[0..15], in[80..95], in[112..127]: 2 sectors each; in[0..31]: 4; in[32..39]: 1.
  CHECK(ld.sectors == 2 + 2 + 2 + 4 + 1);
}

TEST_CASE("operations: mma.sync and its FLOP, exponentials, shuffles, barriers", "[counters]") {
  Device<float> out(3 * 32);
  const simt::Counters c = count([&] { return rules::operations(out.get(), 3, 5, 7, 4, 2); });
  CHECK(c.mma == 3 * 5);
  CHECK(c.mma_flop == 3 * 5 * 2.0 * 16 * 8 * 16);
  CHECK(c.mufu == 3 * 32 * 7 * 2);  // exp2f and __expf, per lane
  CHECK(c.shuffles == 3 * 4);
  CHECK(c.barriers == 3 * 2);  // one warp per block
  CHECK(c.global[simt::kGlobalStore].requests == 3);
}

TEST_CASE("fill and drain: the sectors a block moves before its first barrier and after its last", "[counters]") {
  const int blocks = 3;
  Device<float> in(64 * blocks), out(64 * blocks);
  const simt::Counters c = count([&] { return rules::phases(in.get(), out.get(), blocks); });
  CHECK(c.global[simt::kGlobalLoad].sectors == blocks * 2 * 4);
  CHECK(c.global[simt::kGlobalStore].sectors == blocks * 2 * 4);
  CHECK(c.fill_sectors == blocks * 4);   // the first load
  CHECK(c.drain_sectors == blocks * 4);  // the last store; the accesses between the barriers are neither
  // A store after two barriers and nothing before them: drain alone. Without a barrier the block
  // has no phases: neither.
  Device<float> o(3 * 32);
  const simt::Counters two = count([&] { return rules::operations(o.get(), 3, 0, 0, 0, 2); });
  CHECK(two.fill_sectors == 0);
  CHECK(two.drain_sectors == 3 * 4);
  const simt::Counters none = count([&] { return rules::operations(o.get(), 3, 0, 0, 0, 0); });
  CHECK(none.global[simt::kGlobalStore].sectors == 3 * 4);
  CHECK(none.fill_sectors == 0);
  CHECK(none.drain_sectors == 0);
}

TEST_CASE("atomics are their own requests", "[counters]") {
  Device<int> counter(32);
  const simt::Counters c = count([&] { return rules::atomics(counter.get(), 2); });
  CHECK(c.global[simt::kGlobalAtomic].requests == 2 * 4);
  CHECK(c.global[simt::kGlobalAtomic].sectors == 2 * 4 * 4);
  CHECK(c.dram_write_sectors == 4);
  CHECK(counter.host()[5] == 2 * 4);  // and they still add
}

TEST_CASE("a float atomicAdd or an atomicMax is one atomic, however often the CPU's loop retries", "[counters]") {
  // On the CPU both are compare-and-swap loops that retry when another worker's block wrote the
  // word in between: counted as their GPU instruction, once per lane, and no load.
  const int blocks = 64;
  Device<float> sum(32);
  Device<int> most(32);
  const simt::Counters c = count([&] { return rules::cas_atomics(sum.get(), most.get(), blocks); });
  CHECK(c.global[simt::kGlobalLoad].requests == 0);
  CHECK(c.global[simt::kGlobalAtomic].lanes == 2 * blocks * 128);
  CHECK(c.global[simt::kGlobalAtomic].requests == 2 * blocks * 4);
  CHECK(c.global[simt::kGlobalAtomic].sectors == 2 * blocks * 4 * 4);
  CHECK(sum.host()[5] == blocks * 4);  // and they still do their operation
  CHECK(most.host()[5] == blocks - 1);
}

TEST_CASE("DRAM sectors count each sector once however often it is read", "[counters]") {
  const int n = 4096;
  Device<float> in(n), out(n);
  const simt::Counters c = count([&] { return rules::read_twice(in.get(), out.get(), n, 1000); });
  CHECK(c.global[simt::kGlobalLoad].requests == 2 * n / 32);
  CHECK(c.global[simt::kGlobalLoad].sectors == 2 * (n / 32) * 4);  // 1000 floats: a whole number of sectors
  CHECK(c.dram_read_sectors == n * 4 / 32);
  CHECK(c.dram_write_sectors == n * 4 / 32);
}

TEST_CASE("a block's re-reads of its own sectors, by the distinct sectors it touched in between", "[counters]") {
  const int blocks = 3, len = 4096, passes = 3;  // a row: 512 sectors
  Device<float> rows(blocks * len), scratch(blocks * len), out(blocks);
  const double sectors = len / 8.0;
  // Every pass after the first reads each sector again, the row's 511 others touched in between.
  const simt::Counters c = count([&] { return rules::sweeps(rows.get(), scratch.get(), out.get(), blocks, len, passes, false); });
  CHECK(c.block_load_sectors == blocks * sectors);
  const int b = simt::reuse_bucket(static_cast<unsigned long long>(sectors - 1));
  CHECK(c.reread_l1[b] == blocks * sectors * (passes - 1));
  double all = 0;
  for (int i = 0; i < simt::kReuseBuckets; ++i) all += c.reread_l1[i] + c.reread_l2[i];
  CHECK(all == c.reread_l1[b]);
  CHECK(simt::reuse_distance(b) <= sectors - 1);
  CHECK(simt::reuse_distance(b + 1) > sectors - 1);
  // A row the block wrote first: its first load is no re-read, the later passes are.
  const simt::Counters w = count([&] { return rules::sweeps(rows.get(), scratch.get(), out.get(), blocks, len, passes, true); });
  const int after_store = simt::reuse_bucket(static_cast<unsigned long long>(sectors - 1));
  CHECK(w.reread_l1[after_store] == blocks * sectors * (passes - 1));
  // One pass: nothing read again.
  const simt::Counters once = count([&] { return rules::sweeps(rows.get(), scratch.get(), out.get(), blocks, len, 1, false); });
  double none = 0;
  for (int i = 0; i < simt::kReuseBuckets; ++i) none += once.reread_l1[i] + once.reread_l2[i];
  CHECK(none == 0);
}

TEST_CASE("reuse buckets: a quarter octave each, every distance in the one whose range holds it", "[counters]") {
  for (unsigned long long d : {0ull, 1ull, 2ull, 3ull, 4ull, 7ull, 100ull, 511ull, 65535ull, 1ull << 30, (1ull << 39) + 12345})
    for (unsigned long long x : {d, d + 1}) {
      const int b = simt::reuse_bucket(x);
      INFO("distance " << x << ", bucket " << b);
      CHECK(simt::reuse_distance(b) <= static_cast<double>(x));
      CHECK(simt::reuse_distance(b + 1) > static_cast<double>(x));
    }
  CHECK(simt::reuse_bucket(1ull << 50) == simt::kReuseBuckets - 1);
}

TEST_CASE("sectors several blocks read: by the grid dimension their readers differ along, and how many", "[counters]") {
  const int tiles = 6, heads = 5, len = 256;  // a row: 32 sectors
  Device<float> kv(heads * len), out(heads * tiles);
  for (bool heads_first : {false, true})
    for (int skip : {0, 32}) {
      INFO((heads_first ? "heads in x" : "tiles in x") << ", skip " << skip);
      const simt::Counters c = count([&] { return rules::shared_rows(kv.get(), out.get(), tiles, heads, len, skip, heads_first); });
      const int along = heads_first ? 1 : 0;  // the tiles' dimension
      CHECK(c.grid_x == (heads_first ? heads : tiles));
      CHECK(c.grid_y == (heads_first ? tiles : heads));
      CHECK(c.grid_z == 1);
      CHECK(c.dram_read_sectors == heads * len / 8);
      CHECK(c.shared_sectors[1 - along] == 0);
      CHECK(c.shared_sectors[2] == 0);
      if (skip == 0) {  // every tile reads the whole row
        CHECK(c.shared_sectors[along] == heads * len / 8);
        CHECK(c.shared_reads[along] == heads * len / 8 * tiles);
      } else {  // tile t from element 32 t on: sector s (4 per tile) is read by tiles 0 .. s / 4
        double sectors = 0, reads = 0;
        for (int s = 0; s < len / 8; ++s) {
          const int readers = std::min(tiles, s / 4 + 1);
          if (readers > 1) sectors += 1, reads += readers;
        }
        CHECK(c.shared_sectors[along] == heads * sectors);
        CHECK(c.shared_reads[along] == heads * reads);
      }
    }
}

TEST_CASE("sampling every k-th block scales the requests; DRAM counts stay exact", "[counters]") {
  const int n = 64 * 128;
  Device<float> in(n), out(n);
  auto run = [&] { return rules::strided_copy(in.get(), out.get(), n, 1); };
  const simt::Counters all = count(run);
  for (int k : {2, 3, 8}) {
    INFO("every " << k << "th block");
    const simt::Counters some = count(run, k);
    CHECK(some.blocks == 64);
    CHECK(some.blocks_counted == (64 + k - 1) / k);
    CHECK(some.global[simt::kGlobalLoad].requests == Approx(all.global[simt::kGlobalLoad].requests));
    CHECK(some.global[simt::kGlobalLoad].sectors == Approx(all.global[simt::kGlobalLoad].sectors));
    CHECK(some.dram_read_sectors == all.dram_read_sectors);
    CHECK(some.dram_write_sectors == all.dram_write_sectors);
  }
}

TEST_CASE("a K tile stored row after row: ldmatrix.x4 takes 32 wavefronts, cp.async 4", "[counters]") {
  Device<uint16_t> K(64 * 64);
  Device<float> out(128);
  const simt::Counters c = count([&] { return rules::unswizzled_k_tile(K.get(), out.get()); });
  const simt::SharedOps& ldsm = c.shared[simt::kLdmatrixX4];
  const simt::SharedOps& cp = c.shared[simt::kCpAsyncDestination];
  CHECK(ldsm.requests == 4 * 4 * 4);  // 4 warps x (d/16) x (Bc/16)
  // Each 8 x 8 matrix: 8 rows 128 bytes apart, all in the same 4 banks.
  CHECK(ldsm.wavefronts == 32 * ldsm.requests);
  CHECK(ldsm.conflicts() == 28 * ldsm.requests);
  // The copies: 8 lanes per phase write one 128-byte row.
  CHECK(cp.requests == 64 * 64 * 2 / 16 / 32);
  CHECK(cp.wavefronts == 4 * cp.requests);
  CHECK(cp.conflicts() == 0);
  CHECK(c.global[simt::kCpAsyncSource].sectors == 64 * 64 * 2 / 32);
}

TEST_CASE("a TMA box is one request of its rows' sectors; wgmma counts its tensor work and operand reads", "[counters]") {
  Device<uint16_t> tensor(64 * 64);
  Device<float> out(128);
  const simt::Counters c = count([&] { return rules::tma_wgmma(tensor.get(), out.get()); });
  const simt::GlobalOps& tma = c.global[simt::kTmaLoad];
  CHECK(tma.requests == 1);
  CHECK(tma.bytes == 64 * 64 * 2);
  CHECK(tma.sectors == 64 * 128 / 32);  // 64 rows of 128 bytes
  CHECK(tma.lines == 0);                // not through L1
  CHECK(c.dram_read_sectors == 64 * 128 / 32);
  const simt::SharedOps& dst = c.shared[simt::kTmaDestination];
  CHECK(dst.requests == 1);
  CHECK(dst.wavefronts == 64 * 64 * 2 / 128);
  // 4 wgmma m64n64k16, each issued by 4 warps: 16 warp parts of 2 x 16 x 64 x 16 operations.
  CHECK(c.wgmma == 16);
  CHECK(c.wgmma_flop == 16 * 2.0 * 16 * 64 * 16);
  CHECK(c.mma == 0);
  // Per wgmma the warpgroup reads A (64 x 16) and B (64 x 16) halves: 4096 bytes, 32 wavefronts.
  const simt::SharedOps& ops = c.shared[simt::kWgmmaOperands];
  CHECK(ops.requests == 16);
  CHECK(ops.wavefronts == 4 * 32);
  // The block's fill (model.h): the TMA sectors asked for when the mbarrier phases its threads
  // waited for before the first wgmma completed. A box asked for after the one the products need,
  // and waited for after them, is not in it (the TMA unit serves boxes in order); waited for
  // before them, it is.
  CHECK(c.fill_sectors == 64 * 128 / 32);
  const simt::Counters next = count([&] { return rules::tma_wgmma(tensor.get(), out.get(), 1); });
  CHECK(next.global[simt::kTmaLoad].sectors == 2 * 64 * 128 / 32);
  CHECK(next.fill_sectors == 64 * 128 / 32);
  const simt::Counters both = count([&] { return rules::tma_wgmma(tensor.get(), out.get(), 2); });
  CHECK(both.fill_sectors == 2 * 64 * 128 / 32);
}

TEST_CASE("counting changes nothing in what the kernel computes, and costs nothing when off", "[counters]") {
  const int n = 512;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[static_cast<size_t>(i)] = static_cast<float>(i);
  Device<float> in(h), out(n);
  count([&] { return rules::read_twice(in.get(), out.get(), n, 3); });
  const std::vector<float> r = out.host();
  for (int i = 0; i < n; ++i) REQUIRE(r[static_cast<size_t>(i)] == h[static_cast<size_t>(i)] + h[static_cast<size_t>((i + 3) % n)]);
  REQUIRE(rules::read_twice(in.get(), out.get(), n, 3) == cudaSuccess);  // counting is off again
  CHECK(simt::counters::take().empty());
}
