// test_sync.cpp: built-in variables, barriers, shuffles, votes, atomics and a block reduction,
// each against a host model written from the CUDA Programming Guide's definitions.
#include <numeric>
#include <random>

#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

TEST_CASE("threadIdx, blockIdx, blockDim and gridDim in three dimensions", "[simt][sync]") {
  const dim3 grid(3, 2, 2), block(8, 4, 2);
  const int blocks = 12, threads = 64;
  for_each_schedule([&] {
    Device<unsigned> out(static_cast<size_t>(8 * blocks * threads));
    require_ok(builtin_ids(out.get(), grid, block));
    const auto h = out.host();
    for (unsigned bz = 0; bz < 2; ++bz)
      for (unsigned by = 0; by < 2; ++by)
        for (unsigned bx = 0; bx < 3; ++bx)
          for (unsigned tz = 0; tz < 2; ++tz)
            for (unsigned ty = 0; ty < 4; ++ty)
              for (unsigned tx = 0; tx < 8; ++tx) {
                const unsigned b = bx + 3 * (by + 2 * bz), t = tx + 8 * (ty + 4 * tz);
                const unsigned* o = &h[8 * (b * threads + t)];
                const unsigned expect[8] = {tx, ty, tz, bx, by, bz, 64, 12};
                for (int i = 0; i < 8; ++i) REQUIRE(o[i] == expect[i]);
              }
  });
}

TEST_CASE("__syncthreads orders shared-memory writes before reads", "[simt][sync]") {
  const int n = 1000;  // not a multiple of the block: the last block is partial
  std::vector<int> in(n);
  std::iota(in.begin(), in.end(), 7);
  for (int threads : {32, 256, 1024}) {
    for_each_schedule([&] {
      INFO("threads per block " << threads);
      Device<int> din(in), out(n), out_dyn(n);
      require_ok(block_reverse(din.get(), out.get(), n, threads));
      require_ok(block_reverse_dynamic(din.get(), out_dyn.get(), n, threads));
      const auto h = out.host(), hd = out_dyn.host();
      for (int j = 0; j < n; ++j) {
        const int block = j / threads, k = j % threads, src = block * threads + (threads - 1 - k);
        const int expect = src < n ? in[static_cast<size_t>(src)] : 0;
        REQUIRE(h[static_cast<size_t>(j)] == expect);
        REQUIRE(hd[static_cast<size_t>(j)] == expect);
      }
    });
  }
}

TEST_CASE("__syncthreads_count, _and and _or reduce the predicate over the block", "[simt][sync]") {
  const int blocks = 4, threads = 96;
  std::vector<int> pred(blocks * threads, 0);
  for (int t = 0; t < threads; ++t) {
    pred[static_cast<size_t>(0 * threads + t)] = 0;          // none
    pred[static_cast<size_t>(1 * threads + t)] = 1;          // all
    pred[static_cast<size_t>(2 * threads + t)] = t % 3 == 0;  // some
    pred[static_cast<size_t>(3 * threads + t)] = t == 95 ? 5 : 0;  // one, with a non-1 value
  }
  const int expect[4][3] = {{0, 0, 0}, {96, 1, 1}, {32, 0, 1}, {1, 0, 1}};
  for_each_schedule([&] {
    Device<int> dp(pred), out(3 * blocks);
    require_ok(barrier_reductions(dp.get(), out.get(), blocks, threads));
    const auto h = out.host();
    for (int b = 0; b < blocks; ++b)
      for (int k = 0; k < 3; ++k) REQUIRE(h[static_cast<size_t>(3 * b + k)] == expect[b][k]);
  });
}

namespace {
// The Programming Guide's definitions, lane by lane.
int model_shuffle(ShflMode mode, const std::vector<int>& in, int lane, int arg, int width) {
  const int base = lane / width * width;
  switch (mode) {
    case ShflMode::idx: return in[static_cast<size_t>(base + arg % width)];
    case ShflMode::up: return lane - arg >= base ? in[static_cast<size_t>(lane - arg)] : in[static_cast<size_t>(lane)];
    case ShflMode::down:
      return lane + arg < base + width ? in[static_cast<size_t>(lane + arg)] : in[static_cast<size_t>(lane)];
    case ShflMode::bfly: {
      // Lanes of earlier groups may be read; a lane of a later group gives the caller's own value.
      const int src = lane ^ arg;
      return src / width > lane / width ? in[static_cast<size_t>(lane)] : in[static_cast<size_t>(src)];
    }
  }
  return 0;
}
}  // namespace

TEST_CASE("shuffles: idx, up, down and xor with every width", "[simt][sync]") {
  std::vector<int> in(32);
  for (int l = 0; l < 32; ++l) in[static_cast<size_t>(l)] = 1000 + 17 * l;
  for_each_schedule([&] {
    Device<int> din(in), out(32);
    for (ShflMode mode : {ShflMode::idx, ShflMode::up, ShflMode::down, ShflMode::bfly})
      for (int width : {1, 2, 4, 8, 16, 32})
        for (int arg : {0, 1, 2, 3, 5, 8, 13, 16, 31}) {
          INFO("mode " << static_cast<int>(mode) << " width " << width << " arg " << arg);
          require_ok(shuffle_full(mode, din.get(), out.get(), arg, width));
          const auto h = out.host();
          for (int l = 0; l < 32; ++l) REQUIRE(h[static_cast<size_t>(l)] == model_shuffle(mode, in, l, arg, width));
        }
  });
}

TEST_CASE("shuffles: two half-warps with their own masks at the same time", "[simt][sync]") {
  std::vector<int> in(32);
  for (int l = 0; l < 32; ++l) in[static_cast<size_t>(l)] = -5 * l;
  for_each_schedule([&] {
    Device<int> din(in), out(32);
    for (int width : {2, 8, 16})
      for (int arg = 1; arg < width; arg *= 2) {
        require_ok(shuffle_halves(din.get(), out.get(), arg, width));
        const auto h = out.host();
        for (int l = 0; l < 32; ++l) REQUIRE(h[static_cast<size_t>(l)] == in[static_cast<size_t>(l ^ arg)]);
      }
  });
}

TEST_CASE("shuffles move 64-bit values whole", "[simt][sync]") {
  std::vector<double> in(32);
  for (int l = 0; l < 32; ++l) in[static_cast<size_t>(l)] = 1.0 / (l + 3) + 1e10 * l;
  for_each_schedule([&] {
    Device<double> din(in), out(32);
    require_ok(shuffle_double(din.get(), out.get(), 3));
    const auto h = out.host();
    for (int l = 0; l < 32; ++l) REQUIRE(h[static_cast<size_t>(l)] == in[static_cast<size_t>(l + 3 < 32 ? l + 3 : l)]);
  });
}

TEST_CASE("votes: ballot, all and any over full and partial masks", "[simt][sync]") {
  std::mt19937 rng(3);
  for_each_schedule([&] {
    for (unsigned mask : {0xffffffffu, 0x0000ffffu, 0x55555555u, 0x80000001u})
      for (int pattern = 0; pattern < 4; ++pattern) {
        std::vector<int> pred(32);
        for (int l = 0; l < 32; ++l)
          pred[static_cast<size_t>(l)] = pattern == 0 ? 0 : pattern == 1 ? 3 : static_cast<int>(rng() % 2);
        Device<int> dp(pred), out(96);
        require_ok(votes(dp.get(), out.get(), mask));
        const auto h = out.host();
        unsigned ballot = 0;
        for (int l = 0; l < 32; ++l)
          if ((mask >> l & 1u) && pred[static_cast<size_t>(l)]) ballot |= 1u << l;
        for (int l = 0; l < 32; ++l) {
          const int* o = &h[static_cast<size_t>(3 * l)];
          if (mask >> l & 1u) {
            REQUIRE(static_cast<unsigned>(o[0]) == ballot);
            REQUIRE(o[1] == (ballot == mask ? 1 : 0));
            REQUIRE(o[2] == (ballot != 0 ? 1 : 0));
          } else {
            REQUIRE(o[0] == -1);
          }
        }
      }
  });
}

TEST_CASE("__syncwarp with a partial mask orders the lanes' shared-memory traffic", "[simt][sync]") {
  std::vector<int> in(32);
  for (int l = 0; l < 32; ++l) in[static_cast<size_t>(l)] = 100 + l;
  for_each_schedule([&] {
    for (unsigned mask : {0xffffffffu, 0x0f0f0f0fu, 0x00000003u}) {
      Device<int> din(in), out(32);
      require_ok(syncwarp_exchange(din.get(), out.get(), mask));
      const auto h = out.host();
      for (int l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) {
          REQUIRE(h[static_cast<size_t>(l)] == -1);
          continue;
        }
        int next = (l + 1) % 32;
        while (!(mask >> next & 1u)) next = (next + 1) % 32;
        REQUIRE(h[static_cast<size_t>(l)] == in[static_cast<size_t>(next)]);
      }
    }
  });
}

TEST_CASE("atomics are atomic across blocks running on different workers", "[simt][sync]") {
  const int blocks = 40, threads = 128, total = blocks * threads;
  for_each_schedule([&] {
    Device<int> counters(std::vector<int>{0, -1, 1 << 30, 0});
    Device<float> fsum(1);
    require_ok(atomics(counters.get(), fsum.get(), blocks, threads));
    const auto c = counters.host();
    REQUIRE(c[0] == total);
    REQUIRE(c[1] == total - 1);
    REQUIRE(c[2] == 0);
    REQUIRE(c[3] == total);
    REQUIRE(fsum.host()[0] == 0.5f * total);  // every partial sum is exact in fp32
  });
}

TEST_CASE("block reduction: warp shuffles, shared memory, one atomic per block", "[simt][sync]") {
  std::mt19937 rng(11);
  for (int n : {1, 31, 1000, 100003}) {
    std::vector<int> in(static_cast<size_t>(n));
    for (int& v : in) v = static_cast<int>(rng() % 2001) - 1000;
    const long long expect = std::accumulate(in.begin(), in.end(), 0LL);
    for_each_schedule([&] {
      INFO("n " << n);
      Device<int> din(in);
      Device<long long> total(1);
      require_ok(reduce_sum(din.get(), total.get(), n, 256));
      REQUIRE(total.host()[0] == expect);
    });
  }
}

TEST_CASE("named barriers let two warps take turns while a third has returned", "[simt][sync][named_barrier]") {
  const int blocks = 2;
  for (int rounds : {1, 5}) {
    for_each_schedule([&] {
      INFO("rounds " << rounds);
      Device<int> out(static_cast<size_t>(blocks * rounds * 32));
      require_ok(named_barrier_pingpong(out.get(), blocks, rounds));
      const auto h = out.host();
      for (int b = 0; b < blocks; ++b)
        for (int r = 0; r < rounds; ++r)
          for (int lane = 0; lane < 32; ++lane)
            REQUIRE(h[static_cast<size_t>((b * rounds + r) * 32 + lane)] == 1000 * b + 100 * r + lane);
    });
  }
}
