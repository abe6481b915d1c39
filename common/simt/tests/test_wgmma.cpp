// test_wgmma.cpp: wgmma (simt/wgmma.cuh). First where it reads an operand, against byte offsets
// worked out by hand from the PTX ISA's layouts; then products over every swizzle, both majors,
// A from shared memory and from registers, fp16 and bf16, against a double-precision product of
// the same values laid out by this file; then two commit groups and wgmma_wait<1>.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "simt/fragments.h"
#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

namespace {

unsigned encoding(unsigned swizzle_bytes) {  // the descriptor's field: 128 B -> 1, 64 B -> 2, 32 B -> 3
  return swizzle_bytes == 128 ? 1 : swizzle_bytes == 64 ? 2 : swizzle_bytes == 32 ? 3 : 0;
}

uint16_t bits_of(float x, bool bf16) {
  uint16_t b;
  if (bf16) {
    const __nv_bfloat16 h = __float2bfloat16(x);
    std::memcpy(&b, &h, 2);
  } else {
    const __half h = __float2half(x);
    std::memcpy(&b, &h, 2);
  }
  return b;
}

// A from registers, one-hot: row r of A has a 1 at column k0. Register i of lane l of warp w holds
// A's elements 2i and 2i + 1 of mma.m16n8k16's A fragment (simt/fragments.h).
std::vector<uint32_t> registers_of(const std::vector<float>& a, int K, bool bf16) {
  std::vector<uint32_t> r(static_cast<size_t>(K / 16) * 4 * 32 * 4);
  for (int s = 0; s < K / 16; ++s)
    for (int w = 0; w < 4; ++w)
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          uint32_t v = 0;
          for (int h = 0; h < 2; ++h) {
            const int e = 2 * i + h, row = 16 * w + simt::frag::a_row(l, e), col = 16 * s + simt::frag::a_col(l, e);
            v |= static_cast<uint32_t>(bits_of(a[static_cast<size_t>(row) * K + col], bf16)) << (16 * h);
          }
          r[((static_cast<size_t>(s) * 4 + w) * 32 + l) * 4 + i] = v;
        }
  return r;
}

// ---- where wgmma reads ------------------------------------------------------------------------------
struct Probe {
  const char* what;
  bool mn_major;
  unsigned swizzle, lbo, sbo;
  int n, k;          // an element of B
  unsigned offset;   // its byte offset in shared memory, worked out by hand
};

// Every 16-bit word of a 16 KB image holds its index modulo 2048 (exact in fp16; the offsets probed
// are below 4096); A is one-hot at column k, so every row of D holds B(n, k) at column n: the index
// of the word wgmma read.
void probe(const Probe& p) {
  std::vector<uint8_t> image(16384);
  for (unsigned w = 0; w < 8192; ++w) {
    const uint16_t b = bits_of(static_cast<float>(w % 2048), false);
    std::memcpy(&image[2 * w], &b, 2);
  }
  std::vector<float> a(64 * 16, 0.f);
  for (int r = 0; r < 64; ++r) a[static_cast<size_t>(r) * 16 + p.k] = 1.f;
  const WgmmaOperands t{0, 0, 0, 0, 0, 0, 0, p.lbo, p.sbo, encoding(p.swizzle), 1};
  for_each_schedule([&] {
    INFO(p.what << ": B(" << p.n << ", " << p.k << ")");
    Device<uint8_t> img(image);
    Device<uint32_t> regs(registers_of(a, 16, false));
    Device<float> d(64 * 64);
    require_ok(wgmma_product(false, img.get(), 16384, t, 64, false, p.mn_major, regs.get(), d.get()));
    const auto h = d.host();
    for (int r : {0, 37, 63}) CHECK(h[static_cast<size_t>(r) * 64 + p.n] == static_cast<float>(p.offset / 2));
  });
}

// ---- products ---------------------------------------------------------------------------------------
// An operand of R rows (M or N) and K columns as the canonical layouts lay it out, K-major or MN-major,
// swizzled by S bytes or not; the descriptor fields and k-step that address it.
struct Layout {
  bool mn_major;
  unsigned S;
  int R, K;
  unsigned lbo = 0, sbo = 0, step = 0;
  size_t bytes = 0;
  Layout(bool mn, unsigned s, int rows, int k) : mn_major(mn), S(s), R(rows), K(k) {
    if (!mn && !S) {  // 8 x 16-byte core matrices; K-adjacent ones 128 bytes apart, 8-row groups after all K
      lbo = 128, sbo = 128 * (K / 8), step = 256, bytes = static_cast<size_t>(R / 8) * sbo;
    } else if (!mn) {  // rows of S bytes (S / 2 columns), 8-row groups 8 S apart; further columns in another such tile
      sbo = 8 * S, bytes = static_cast<size_t>(R) * S * ((2 * K + S - 1) / S);
      step = S == 32 ? static_cast<unsigned>(R) * S : 32;
    } else if (!S) {  // core matrices of 8 k-rows x 8 elements; k-groups 128 apart, then the next 8 of M/N
      lbo = 128, sbo = 128 * (K / 8), step = 256, bytes = static_cast<size_t>(R / 8) * sbo;
    } else {  // k-rows of S bytes (S / 2 of M/N), 8-row groups 8 S apart; the next S / 2 of M/N after all K
      lbo = static_cast<unsigned>(K) * S, sbo = 8 * S, step = 16 * S, bytes = static_cast<size_t>(R / (S / 2)) * lbo;
    }
  }
  size_t offset(int r, int k) const {
    size_t o;
    if (!mn_major && !S) {
      o = (r / 8) * sbo + (k / 8) * 128 + (r % 8) * 16 + (k % 8) * 2;
    } else if (!mn_major) {
      const int E = static_cast<int>(S) / 2;
      o = static_cast<size_t>(k / E) * R * S + static_cast<size_t>(r) * S + 2 * (k % E);
    } else if (!S) {
      o = (r / 8) * sbo + (k / 8) * 128 + (k % 8) * 16 + (r % 8) * 2;
    } else {
      const int E = static_cast<int>(S) / 2;
      o = (r / E) * lbo + static_cast<size_t>(k) * S + 2 * (r % E);
    }
    // The swizzle: 16-byte chunk bits 4.. XOR the 128-byte line bits 7.. (1, 2, 3 of them).
    return S ? o ^ ((o >> 7) & (S / 16 - 1)) << 4 : o;
  }
};

struct Product {
  const char* what;
  bool bf16;
  int n;
  bool a_in_registers;
  bool a_mn;
  unsigned a_swizzle;
  bool b_mn;
  unsigned b_swizzle;
  int ksteps;
};

void product(const Product& p) {
  const int K = 16 * p.ksteps, N = p.n;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-64, 64);  // multiples of 1/64 in [-1, 1]: exact in fp16 and bf16
  std::vector<float> a(64 * static_cast<size_t>(K)), b(static_cast<size_t>(N) * K);
  for (float& x : a) x = pick(rng) / 64.f;
  for (float& x : b) x = pick(rng) / 64.f;
  const Layout la(p.a_mn, p.a_swizzle, 64, K), lb(p.b_mn, p.b_swizzle, N, K);
  const size_t b_at = p.a_in_registers ? 0 : (la.bytes + 1023) / 1024 * 1024;
  std::vector<uint8_t> image((b_at + lb.bytes + 15) / 16 * 16, 0xFF);
  auto put = [&](size_t o, float x) {
    const uint16_t v = bits_of(x, p.bf16);
    std::memcpy(&image[o], &v, 2);
  };
  for (int r = 0; r < 64 && !p.a_in_registers; ++r)
    for (int k = 0; k < K; ++k) put(la.offset(r, k), a[static_cast<size_t>(r) * K + k]);
  for (int r = 0; r < N; ++r)
    for (int k = 0; k < K; ++k) put(b_at + lb.offset(r, k), b[static_cast<size_t>(r) * K + k]);
  const WgmmaOperands t{0,
                        la.step,
                        la.lbo,
                        la.sbo,
                        encoding(la.S),
                        static_cast<unsigned>(b_at),
                        lb.step,
                        lb.lbo,
                        lb.sbo,
                        encoding(lb.S),
                        p.ksteps};
  for_each_schedule([&] {
    INFO(p.what);
    Device<uint8_t> img(image);
    Device<uint32_t> regs(registers_of(a, K, p.bf16));
    Device<float> d(64 * static_cast<size_t>(N));
    require_ok(wgmma_product(p.bf16, img.get(), static_cast<unsigned>(image.size()), t, N, p.a_mn, p.b_mn,
                             p.a_in_registers ? regs.get() : nullptr, d.get()));
    const auto h = d.host();
    int wrong = 0;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < N; ++c) {
        double ref = 0;
        for (int k = 0; k < K; ++k) ref += static_cast<double>(a[static_cast<size_t>(r) * K + k]) * b[static_cast<size_t>(c) * K + k];
        const double got = h[static_cast<size_t>(r) * N + c];
        // Multiples of 1/64 in [-1, 1]: every product and every partial sum of at most 64 is exact in
        // fp32 (multiples of 2^-12 below 2^6), whatever the order of accumulation.
        if (got != ref) {
          if (wrong++ < 4) FAIL_CHECK("D(" << r << ", " << c << ") = " << got << ", expected " << ref);
        }
      }
    CHECK(wrong == 0);
  });
}

}  // namespace

TEST_CASE("wgmma reads each operand element where the PTX ISA's layouts put it", "[simt][wgmma]") {
  if (!hopper_or_warn("wgmma")) return;
  // K-major, 128-byte swizzle: row n at 128 n within its 8-row group (1024 bytes), 16-byte chunk c
  // of the row at c ^ (n % 8).
  probe({"K-major, 128 B", false, 128, 0, 1024, 3, 8, 3 * 128 + 16 * (1 ^ 3)});
  probe({"K-major, 128 B", false, 128, 0, 1024, 9, 0, 1024 + 128 + 16 * (0 ^ 1)});
  probe({"K-major, 128 B", false, 128, 0, 1024, 0, 15, 16 * (1 ^ 0) + 14});
  probe({"K-major, 128 B", false, 128, 0, 1024, 7, 15, 7 * 128 + 16 * (1 ^ 7) + 14});
  // No swizzle: 8 x 16-byte core matrices, the next 8 columns lbo on, the next 8 rows sbo on.
  probe({"K-major, none", false, 0, 128, 256, 3, 8, 3 * 16 + 128});
  probe({"K-major, none", false, 0, 128, 256, 9, 5, 256 + 16 + 10});
  // 32-byte swizzle: rows of 32 bytes; the chunk bit XORs address bit 7 (rows 4..7 of each 8).
  probe({"K-major, 32 B", false, 32, 0, 256, 5, 8, 5 * 32 + 16 * (1 ^ 1)});
  probe({"K-major, 32 B", false, 32, 0, 256, 1, 8, 1 * 32 + 16 * (1 ^ 0)});
  // 64-byte swizzle: rows of 64 bytes; chunk bits 4..5 XOR address bits 7..8 (row / 2 % 4).
  probe({"K-major, 64 B", false, 64, 0, 512, 3, 0, 3 * 64 + 16 * (0 ^ 1)});
  probe({"K-major, 64 B", false, 64, 0, 512, 6, 9, 6 * 64 + 16 * (1 ^ 3) + 2});
  // N-major (transposed B), 128-byte swizzle: k-row k at 128 (k % 8) + sbo (k / 8), 64 columns each.
  probe({"N-major, 128 B", true, 128, 0, 1024, 10, 3, 3 * 128 + 16 * (1 ^ 3) + 4});
  probe({"N-major, 128 B", true, 128, 0, 1024, 63, 9, 1024 + 128 + 16 * (7 ^ 1) + 14});
  // N-major, no swizzle: core matrices of 8 k-rows of 16 bytes; next 8 k lbo on, next 8 columns sbo on.
  probe({"N-major, none", true, 0, 128, 256, 10, 3, 256 + 3 * 16 + 2 * 2});
  probe({"N-major, none", true, 0, 128, 256, 5, 12, 128 + 4 * 16 + 5 * 2});
}

TEST_CASE("wgmma products over every swizzle and major, A from shared memory or registers", "[simt][wgmma]") {
  if (!hopper_or_warn("wgmma")) return;
  const Product products[] = {
      {"fp16 n64, A and B K-major, no swizzle", false, 64, false, false, 0, false, 0, 2},
      {"fp16 n128, A and B K-major, 128 B", false, 128, false, false, 128, false, 128, 4},
      {"bf16 n64, A and B K-major, 64 B", true, 64, false, false, 64, false, 64, 2},
      {"fp16 n64, A and B K-major, 32 B", false, 64, false, false, 32, false, 32, 2},
      {"fp16 n128, A K-major 128 B, B N-major 128 B (as P V)", false, 128, false, false, 128, true, 128, 2},
      {"bf16 n64, A M-major 64 B, B N-major 32 B", true, 64, false, true, 64, true, 32, 2},
      {"fp16 n64, A M-major and B N-major, no swizzle", false, 64, false, true, 0, true, 0, 2},
      {"bf16 n128, A from registers, B K-major 128 B", true, 128, true, false, 0, false, 128, 4},
      {"fp16 n64, A from registers, B N-major 128 B", false, 64, true, false, 0, true, 128, 2},
  };
  for (const Product& p : products) product(p);
}

TEST_CASE("wgmma_wait<1> completes the older group and leaves the newer in flight", "[simt][wgmma]") {
  if (!hopper_or_warn("wgmma")) return;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(-64, 64);
  std::vector<float> a(64 * 16), b1(64 * 16), b2(64 * 16);
  for (float& x : a) x = pick(rng) / 64.f;
  for (float& x : b1) x = pick(rng) / 64.f;
  for (float& x : b2) x = pick(rng) / 64.f;
  const Layout l(false, 0, 64, 16);
  std::vector<uint8_t> image(8192, 0);
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < 16; ++k) {
      const uint16_t v1 = bits_of(b1[static_cast<size_t>(r) * 16 + k], false), v2 = bits_of(b2[static_cast<size_t>(r) * 16 + k], false);
      std::memcpy(&image[l.offset(r, k)], &v1, 2);
      std::memcpy(&image[4096 + l.offset(r, k)], &v2, 2);
    }
  REQUIRE(l.lbo == 128);
  REQUIRE(l.sbo == 256);
  for_each_schedule([&] {
    Device<uint8_t> img(image);
    Device<uint32_t> regs(registers_of(a, 16, false));
    Device<float> d1(64 * 64), d2(64 * 64);
    require_ok(wgmma_groups(img.get(), regs.get(), d1.get(), d2.get()));
    const auto h1 = d1.host(), h2 = d2.host();
    int wrong = 0;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) {
        double r1 = 0, r2 = 0;
        for (int k = 0; k < 16; ++k) {
          r1 += static_cast<double>(a[static_cast<size_t>(r) * 16 + k]) * b1[static_cast<size_t>(c) * 16 + k];
          r2 += static_cast<double>(a[static_cast<size_t>(r) * 16 + k]) * b2[static_cast<size_t>(c) * 16 + k];
        }
        wrong += (h1[static_cast<size_t>(r) * 64 + c] != r1) + (h2[static_cast<size_t>(r) * 64 + c] != r2);  // exact, as above
      }
    CHECK(wrong == 0);
  });
}
