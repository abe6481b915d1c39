// test_tensor_core.cpp: mma.sync m16n8k16, ldmatrix and cp.async against plain host arithmetic,
// and the fragment layouts against the PTX ISA's own wording.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <random>

#include "simt/fragments.h"
#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

namespace {

struct Operand {  // 16-bit bit patterns and the exact values they hold
  std::vector<uint16_t> bits;
  std::vector<double> value;
};
Operand random_operand(size_t n, bool bf16, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Operand o{std::vector<uint16_t>(n), std::vector<double>(n)};
  for (size_t i = 0; i < n; ++i) {
    const float x = u(rng);
    if (bf16) {
      const __nv_bfloat16 h = __float2bfloat16(x);
      o.bits[i] = __bfloat16_as_ushort(h);
      o.value[i] = __bfloat162float(h);
    } else {
      const __half h = __float2half(x);
      o.bits[i] = __half_as_ushort(h);
      o.value[i] = __half2float(h);
    }
  }
  return o;
}
uint32_t pack(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16; }

}  // namespace

TEST_CASE("fragment layouts match the PTX ISA's description of mma.m16n8k16", "[simt][tensor]") {
  // PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type", in its own words.
  for (int lane = 0; lane < 32; ++lane) {
    const int group_id = lane >> 2, thread_in_group = lane % 4;
    for (int i = 0; i < 8; ++i) {  // a0..a7
      const int row = (i < 2 || (4 <= i && i < 6)) ? group_id : group_id + 8;
      const int col = i < 4 ? thread_in_group * 2 + (i & 0x1) : thread_in_group * 2 + (i & 0x1) + 8;
      REQUIRE(simt::frag::a_row(lane, i) == row);
      REQUIRE(simt::frag::a_col(lane, i) == col);
    }
    for (int i = 0; i < 4; ++i) {  // b0..b3
      const int row = i < 2 ? thread_in_group * 2 + (i & 0x1) : thread_in_group * 2 + (i & 0x1) + 8;
      REQUIRE(simt::frag::b_k(lane, i) == row);
      REQUIRE(simt::frag::b_n(lane, i) == group_id);
    }
    for (int i = 0; i < 4; ++i) {  // c0..c3 and d0..d3
      REQUIRE(simt::frag::c_row(lane, i) == (i < 2 ? group_id : group_id + 8));
      REQUIRE(simt::frag::c_col(lane, i) == thread_in_group * 2 + (i & 0x1));
    }
  }
  // Every element of each operand is held by exactly one (lane, i).
  int a_seen[16][16] = {}, b_seen[16][8] = {}, c_seen[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) ++a_seen[simt::frag::a_row(lane, i)][simt::frag::a_col(lane, i)];
    for (int i = 0; i < 4; ++i) ++b_seen[simt::frag::b_k(lane, i)][simt::frag::b_n(lane, i)];
    for (int i = 0; i < 4; ++i) ++c_seen[simt::frag::c_row(lane, i)][simt::frag::c_col(lane, i)];
  }
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) REQUIRE(a_seen[r][c] == 1);
    for (int c = 0; c < 8; ++c) REQUIRE(b_seen[r][c] == 1);
    for (int c = 0; c < 8; ++c) REQUIRE(c_seen[r][c] == 1);
  }
}

TEST_CASE("mma.sync m16n8k16 with fragments taken straight from the layout formulas", "[simt][tensor]") {
  std::mt19937 rng(5);
  for (bool bf16 : {false, true}) {
    const Operand a = random_operand(256, bf16, rng), b = random_operand(128, bf16, rng);
    std::vector<float> c(128);
    for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i % 7) - 3.f;
    for_each_schedule([&] {
      INFO((bf16 ? "bf16" : "f16"));
      Device<uint16_t> da(a.bits), db(b.bits);
      Device<float> dc(c), dd(128);
      require_ok(mma_from_formulas(bf16, da.get(), db.get(), dc.get(), dd.get()));
      const auto d = dd.host();
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) {
          double ref = c[static_cast<size_t>(m * 8 + n)];
          for (int k = 0; k < 16; ++k) ref += a.value[static_cast<size_t>(m * 16 + k)] * b.value[static_cast<size_t>(k * 8 + n)];
          REQUIRE(std::fabs(d[static_cast<size_t>(m * 8 + n)] - ref) <= 1e-5 * (1 + std::fabs(ref)));
        }
    });
  }
}

TEST_CASE("ldmatrix x1, x2, x4, with and without .trans, follows the PTX ISA", "[simt][tensor]") {
  std::vector<uint16_t> mats(4 * 64);
  for (size_t i = 0; i < mats.size(); ++i) mats[i] = static_cast<uint16_t>(0x1000 + i);
  auto at = [&](int j, int row, int col) { return mats[static_cast<size_t>(j * 64 + row * 8 + col)]; };
  for_each_schedule([&] {
    Device<uint16_t> dm(mats);
    for (int num : {1, 2, 4})
      for (bool trans : {false, true}) {
        INFO("x" << num << (trans ? ".trans" : ""));
        Device<uint32_t> out(static_cast<size_t>(32 * num));
        require_ok(ldmatrix_dump(dm.get(), out.get(), num, trans));
        const auto h = out.host();
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < num; ++j) {
            // Without .trans, lane holds row lane/4, columns 2*(lane%4) and +1 of matrix j;
            // with .trans, column lane/4, rows 2*(lane%4) and +1.
            const int r = lane / 4, c = 2 * (lane % 4);
            const uint32_t expect = trans ? pack(at(j, c, r), at(j, c + 1, r)) : pack(at(j, r, c), at(j, r, c + 1));
            REQUIRE(h[static_cast<size_t>(lane * num + j)] == expect);
          }
      }
  });
}

TEST_CASE("ldmatrix fragments feed mma: B as [n][k] with x2, or as [k][n] with x2.trans", "[simt][tensor]") {
  std::mt19937 rng(9);
  for (bool bf16 : {false, true}) {
    const Operand a = random_operand(256, bf16, rng), b_kn = random_operand(128, bf16, rng);
    Operand b_nk = b_kn;
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 8; ++n) b_nk.bits[static_cast<size_t>(n * 16 + k)] = b_kn.bits[static_cast<size_t>(k * 8 + n)];
    for_each_schedule([&] {
      for (bool kn : {false, true}) {
        INFO((bf16 ? "bf16" : "f16") << (kn ? ", B [k][n] via .trans" : ", B [n][k]"));
        Device<uint16_t> da(a.bits), db(kn ? b_kn.bits : b_nk.bits);
        Device<float> dd(128);
        require_ok(mma_ldmatrix(bf16, da.get(), db.get(), kn, dd.get()));
        const auto d = dd.host();
        for (int m = 0; m < 16; ++m)
          for (int n = 0; n < 8; ++n) {
            double ref = 0;
            for (int k = 0; k < 16; ++k) ref += a.value[static_cast<size_t>(m * 16 + k)] * b_kn.value[static_cast<size_t>(k * 8 + n)];
            REQUIRE(std::fabs(d[static_cast<size_t>(m * 8 + n)] - ref) <= 1e-5 * (1 + std::fabs(ref)));
          }
      }
    });
  }
}

TEST_CASE("GEMM with cp.async double buffering, ldmatrix.x4 and mma", "[simt][tensor]") {
  std::mt19937 rng(13);
  struct Shape {
    int m, n, k;
  };
  for (bool bf16 : {false, true})
    for (Shape s : {Shape{64, 64, 32}, Shape{128, 64, 128}, Shape{64, 192, 96}}) {
      const Operand a = random_operand(static_cast<size_t>(s.m * s.k), bf16, rng);
      const Operand bt = random_operand(static_cast<size_t>(s.n * s.k), bf16, rng);
      std::vector<double> ref(static_cast<size_t>(s.m * s.n), 0.0);
      for (int i = 0; i < s.m; ++i)
        for (int j = 0; j < s.n; ++j)
          for (int k = 0; k < s.k; ++k)
            ref[static_cast<size_t>(i * s.n + j)] +=
                a.value[static_cast<size_t>(i * s.k + k)] * bt.value[static_cast<size_t>(j * s.k + k)];
      for_each_schedule([&] {
        INFO((bf16 ? "bf16 " : "f16 ") << s.m << "x" << s.n << "x" << s.k);
        Device<uint16_t> da(a.bits), db(bt.bits);
        Device<float> dc(static_cast<size_t>(s.m * s.n));
        require_ok(gemm_cp_async(bf16, da.get(), db.get(), dc.get(), s.m, s.n, s.k));
        const auto c = dc.host();
        for (size_t i = 0; i < c.size(); ++i) REQUIRE(std::fabs(c[i] - ref[i]) <= 1e-5 * (s.k + std::fabs(ref[i])));
      });
    }
}

TEST_CASE("cp.async: .cg and .ca copy 16 bytes, zero-fill copies the given bytes", "[simt][tensor]") {
  std::vector<uint8_t> src(32 * 16);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<int> bytes(32);
  for (int r = 0; r < 32; ++r) bytes[static_cast<size_t>(r)] = r % 5 == 4 ? -1 : (r * 3) % 17;  // -1: .ca
  for_each_schedule([&] {
    Device<uint8_t> ds(src), dd(src.size());
    Device<int> db(bytes);
    require_ok(cp_async_rows(ds.get(), db.get(), dd.get()));
    const auto d = dd.host();
    for (int r = 0; r < 32; ++r) {
      const int n = bytes[static_cast<size_t>(r)] < 0 ? 16 : bytes[static_cast<size_t>(r)];
      for (int i = 0; i < 16; ++i)
        REQUIRE(d[static_cast<size_t>(16 * r + i)] == (i < n ? src[static_cast<size_t>(16 * r + i)] : 0));
    }
  });
}
