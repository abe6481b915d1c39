// test_math.cpp: ex2.approx.ftz.f32 against the PTX ISA's special cases and exp2 in double. On the
// CPU the wrapper computes exp2 rounded to float; on a GPU the approximation may differ from it in
// the last bits, hence the tolerance.
#include <cmath>
#include <limits>

#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

TEST_CASE("ex2.approx.ftz.f32: special values, flushed subnormals, powers of two", "[simt][math]") {
  const float inf = std::numeric_limits<float>::infinity(), denorm = std::numeric_limits<float>::denorm_min();
  std::vector<float> x = {-inf,   inf,    0.f,    -0.f, denorm, -denorm, 1e-39f,
                          -127.f, -130.f, -149.f, 3.f,  -3.f,   127.f,   128.f};
  for (int i = -200; i <= 200; ++i) x.push_back(static_cast<float>(i) * 0.173f);  // ordinary values
  const int n = static_cast<int>(x.size());
  Device<float> dx(x), dy(x.size());
  require_ok(ex2_approx_ftz(dx.get(), dy.get(), n));
  const auto y = dy.host();
  CHECK(y[0] == 0.f);  // 2^-inf = +0
  CHECK(std::isinf(y[1]));
  for (int i = 2; i <= 6; ++i) CHECK(y[static_cast<size_t>(i)] == 1.f);  // zeros and subnormal inputs count as 0
  CHECK(y[7] == 0.f);                                                    // 2^-127 is subnormal: flushed to +0
  CHECK(y[8] == 0.f);                                                    // 2^-130 likewise
  CHECK(y[9] == 0.f);                                                    // 2^-149 is the smallest subnormal
  CHECK(y[10] == 8.f);
  CHECK(y[11] == 0.125f);
  CHECK(y[12] == std::ldexp(1.f, 127));
  CHECK(std::isinf(y[13]));  // 2^128 overflows
  for (size_t i = 14; i < x.size(); ++i) {
    const double want = std::exp2(static_cast<double>(x[i]));
    INFO("x = " << x[i]);
    CHECK(std::abs(y[i] - want) <= 4e-7 * want);  // a few float ulps
  }
}
