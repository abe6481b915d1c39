// test_warpgroup.cpp: warpgroup instructions (simt/setmaxnreg.cuh) in a producer/consumer split.
#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

TEST_CASE("setmaxnreg: a producer warpgroup gives registers back, two consumers take them", "[simt][warpgroup]") {
  const int blocks = 2;
  for_each_schedule([&] {
    Device<int> out(static_cast<size_t>(blocks * 384));
    require_ok(register_split(out.get(), blocks));
    const auto h = out.host();
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < 384; ++t) REQUIRE(h[static_cast<size_t>(b * 384 + t)] == 1000 * (t / 128) + t);
  });
}
