// test_half.cpp: the host's __half and __nv_bfloat16 arithmetic, and what the shim adds to it
// (__hfma, hexp, hexp2, ...), against correctly rounded references: GCC's _Float16 for half, and
// an exact rounding for bf16. Every one of the 65,536 bit patterns where the function takes one
// argument. (cpu backend only: this is the host half of the shim.)
#include "simt/simt.h"

#include <cmath>
#include <cstring>
#include <random>

#include "support.h"

namespace {

using Wide = __float128;  // exact for every fma of two 16-bit floats plus a third, below

uint16_t bits_of(_Float16 x) {
  uint16_t b;
  std::memcpy(&b, &x, 2);
  return b;
}
_Float16 f16_of(uint16_t b) {
  _Float16 x;
  std::memcpy(&x, &b, 2);
  return x;
}
bool same16(uint16_t a, uint16_t b, uint16_t exp_mask, uint16_t mant_mask) {  // NaN payloads may differ
  const bool na = (a & exp_mask) == exp_mask && (a & mant_mask) != 0;
  const bool nb = (b & exp_mask) == exp_mask && (b & mant_mask) != 0;
  return na || nb ? na == nb : a == b;
}
bool same_half(uint16_t a, uint16_t b) { return same16(a, b, 0x7c00, 0x03ff); }
bool same_bf16(uint16_t a, uint16_t b) { return same16(a, b, 0x7f80, 0x007f); }

// x rounded to bf16, to nearest, ties to even, computed on the exact value.
uint16_t bf16_of(Wide x) {
  if (x != x) return 0x7fc0;
  const bool negative = std::signbit(static_cast<double>(x));  // -0 too
  const uint16_t sign = negative ? 0x8000 : 0;
  const Wide a = negative ? -x : x;
  // Candidates: the largest bf16 <= a (by truncating a float that is <= a), and its successor.
  float f = static_cast<float>(a);
  if (static_cast<Wide>(f) > a) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (u >= 0x7f800000u) return sign | 0x7f80;  // beyond float: infinity
  const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  float flo, fhi;
  std::memcpy(&flo, &lo, 4);
  std::memcpy(&fhi, &hi, 4);
  // Past the largest finite bf16 the next value is 2^128, which rounds to infinity.
  const Wide whi = hi >= 0x7f800000u ? static_cast<Wide>(std::ldexp(1.0, 128)) : static_cast<Wide>(fhi);
  const Wide dlo = a - static_cast<Wide>(flo), dhi = whi - a;
  const uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : ((lo >> 16) & 1u) ? hi : lo;
  return static_cast<uint16_t>(sign | (r >> 16));
}
Wide wide(__half h) { return static_cast<Wide>(__half2float(h)); }
Wide wide(__nv_bfloat16 h) { return static_cast<Wide>(__bfloat162float(h)); }

template <class F>
long mismatches_half(F f, long double (*ref)(long double)) {
  long bad = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const __half h = __ushort_as_half(static_cast<unsigned short>(b));
    const uint16_t got = __half_as_ushort(f(h));
    const uint16_t want = bits_of(static_cast<_Float16>(ref(static_cast<long double>(__half2float(h)))));
    bad += !same_half(got, want);
  }
  return bad;
}
template <class F>
long mismatches_bf16(F f, long double (*ref)(long double)) {
  long bad = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const __nv_bfloat16 h = __ushort_as_bfloat16(static_cast<unsigned short>(b));
    const uint16_t got = __bfloat16_as_ushort(f(h));
    const uint16_t want = bf16_of(static_cast<Wide>(ref(static_cast<long double>(__bfloat162float(h)))));
    bad += !same_bf16(got, want);
  }
  return bad;
}
long double rcp(long double x) { return 1.0L / x; }
long double rsqrt_ref(long double x) { return 1.0L / sqrtl(x); }
long double exp10_ref(long double x) { return powl(10.0L, x); }

}  // namespace

TEST_CASE("host conversions of all 65,536 half and bf16 patterns are exact", "[simt][half]") {
  long bad_h = 0, bad_b = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const float x = __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
    const float y = static_cast<float>(f16_of(static_cast<uint16_t>(b)));
    bad_h += !(x == y || (std::isnan(x) && std::isnan(y)));
    const float z = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(b)));
    const uint32_t u = b << 16;
    float w;
    std::memcpy(&w, &u, 4);
    bad_b += !(z == w || (std::isnan(z) && std::isnan(w)));
  }
  REQUIRE(bad_h == 0);
  REQUIRE(bad_b == 0);
  std::mt19937 rng(1);
  std::uniform_int_distribution<uint32_t> U;
  long bad_to_h = 0, bad_to_b = 0;
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t u = U(rng);
    float f;
    std::memcpy(&f, &u, 4);
    if (i & 1) f = std::ldexp(static_cast<float>(u % 100000) - 50000.f, static_cast<int>(u % 40) - 40);
    bad_to_h += !same_half(__half_as_ushort(__float2half_rn(f)), bits_of(static_cast<_Float16>(f)));
    bad_to_b += !same_bf16(__bfloat16_as_ushort(__float2bfloat16_rn(f)), bf16_of(static_cast<Wide>(f)));
  }
  REQUIRE(bad_to_h == 0);
  REQUIRE(bad_to_b == 0);
}

TEST_CASE("half math added by the shim is correctly rounded for all 65,536 inputs", "[simt][half]") {
  CHECK(mismatches_half([](__half h) { return hexp(h); }, expl) == 0);
  CHECK(mismatches_half([](__half h) { return hexp2(h); }, exp2l) == 0);
  CHECK(mismatches_half([](__half h) { return hexp10(h); }, exp10_ref) == 0);
  CHECK(mismatches_half([](__half h) { return hlog(h); }, logl) == 0);
  CHECK(mismatches_half([](__half h) { return hlog2(h); }, log2l) == 0);
  CHECK(mismatches_half([](__half h) { return hsqrt(h); }, sqrtl) == 0);
  CHECK(mismatches_half([](__half h) { return hrsqrt(h); }, rsqrt_ref) == 0);
  CHECK(mismatches_half([](__half h) { return hrcp(h); }, rcp) == 0);
  CHECK(mismatches_half([](__half h) { return __low2half(h2exp(__halves2half2(h, h))); }, expl) == 0);
  CHECK(mismatches_half([](__half h) { return __high2half(h2exp2(__halves2half2(h, h))); }, exp2l) == 0);
}

TEST_CASE("bf16 math added by the shim is correctly rounded for all 65,536 inputs", "[simt][half]") {
  CHECK(mismatches_bf16([](__nv_bfloat16 h) { return hexp(h); }, expl) == 0);
  CHECK(mismatches_bf16([](__nv_bfloat16 h) { return hexp2(h); }, exp2l) == 0);
  CHECK(mismatches_bf16([](__nv_bfloat16 h) { return hlog(h); }, logl) == 0);
  CHECK(mismatches_bf16([](__nv_bfloat16 h) { return hsqrt(h); }, sqrtl) == 0);
  CHECK(mismatches_bf16([](__nv_bfloat16 h) { return hrcp(h); }, rcp) == 0);
  CHECK(mismatches_bf16([](__nv_bfloat16 h) { return __low2bfloat16(h2exp(__halves2bfloat162(h, h))); }, expl) == 0);
}

TEST_CASE("__hfma rounds once, for half and bf16", "[simt][half]") {
  std::mt19937 rng(2);
  std::uniform_int_distribution<uint32_t> U;
  long bad_h = 0, bad_b = 0, bad_h2 = 0;
  const int n = 1000000;
  for (int i = 0; i < n; ++i) {
    const uint16_t a = U(rng) & 0xffff, b = U(rng) & 0xffff, c = U(rng) & 0xffff;
    const __half ha = __ushort_as_half(a), hb = __ushort_as_half(b), hc = __ushort_as_half(c);
    const Wide exact = wide(ha) * wide(hb) + wide(hc);  // exact: spans at most 80 bits
    bad_h += !same_half(__half_as_ushort(__hfma(ha, hb, hc)), bits_of(static_cast<_Float16>(exact)));
    const __half2 r = __hfma2(__halves2half2(ha, hb), __halves2half2(hb, hc), __halves2half2(hc, ha));
    bad_h2 += !same_half(__half_as_ushort(__high2half(r)),
                         bits_of(static_cast<_Float16>(wide(hb) * wide(hc) + wide(ha))));
    // bf16 with exponents kept within +-20, so that a*b + c stays exact in 113 bits.
    auto bf = [&](uint32_t u) {
      const float m = 1.0f + static_cast<float>(u % 128) / 128.0f;
      return __float2bfloat16(std::ldexp((u & 0x100) ? -m : m, static_cast<int>((u >> 9) % 41) - 20));
    };
    const __nv_bfloat16 ba = bf(U(rng)), bb = bf(U(rng)), bc = bf(U(rng));
    bad_b += !same_bf16(__bfloat16_as_ushort(__hfma(ba, bb, bc)), bf16_of(wide(ba) * wide(bb) + wide(bc)));
  }
  REQUIRE(bad_h == 0);
  REQUIRE(bad_h2 == 0);
  REQUIRE(bad_b == 0);
}

TEST_CASE("host half and bf16 arithmetic rounds like the hardware", "[simt][half]") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> U;
  long bad = 0;
  for (int i = 0; i < 500000; ++i) {
    const uint16_t a = U(rng) & 0xffff, b = U(rng) & 0xffff;
    const __half ha = __ushort_as_half(a), hb = __ushort_as_half(b);
    const _Float16 fa = f16_of(a), fb = f16_of(b);
    bad += !same_half(__half_as_ushort(ha + hb), bits_of(static_cast<_Float16>(fa + fb)));
    bad += !same_half(__half_as_ushort(__hmul(ha, hb)), bits_of(static_cast<_Float16>(fa * fb)));
    bad += !same_half(__half_as_ushort(ha / hb), bits_of(static_cast<_Float16>(fa / fb)));
    const __nv_bfloat16 ba = __ushort_as_bfloat16(a), bb = __ushort_as_bfloat16(b);
    bad += !same_bf16(__bfloat16_as_ushort(ba * bb), bf16_of(wide(ba) * wide(bb)));
    bad += !same_bf16(__bfloat16_as_ushort(ba + bb), bf16_of(wide(ba) + wide(bb)));
  }
  REQUIRE(bad == 0);
}
