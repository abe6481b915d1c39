// test_mbarrier.cpp: mbarrier phases, parities and transaction counts (simt/mbarrier.cuh), in a
// producer/consumer ring like a Hopper kernel's, against the values the producer wrote.
#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

TEST_CASE("a producer and a consumer warp hand tiles through mbarriers, in every schedule", "[simt][mbarrier]") {
  if (!hopper_or_warn("transaction counts")) return;
  const int blocks = 3;
  for (int rounds : {1, 2, 7}) {  // one use of a slot; one of each; several, both parities of each barrier
    for_each_schedule([&] {
      INFO("rounds " << rounds);
      Device<int> out(static_cast<size_t>(blocks * rounds * 32));
      require_ok(mbarrier_ring(out.get(), blocks, rounds));
      const auto h = out.host();
      for (int b = 0; b < blocks; ++b)
        for (int r = 0; r < rounds; ++r)
          for (int lane = 0; lane < 32; ++lane)
            REQUIRE(h[static_cast<size_t>((b * rounds + r) * 32 + lane)] == 1000 * b + 100 * r + lane);
    });
  }
}
