// test_tma.cpp: TMA boxes (simt/tma.cuh) against the layout worked out here from the definitions:
// element (i0, i1, i2) of the box at byte ((i2 * box1 + i1) * box0 + i0) * 2, its 16-byte chunk
// XORed with bits 7.. of that offset (1, 2 or 3 of them for a 32, 64 or 128-byte swizzle), and
// zeros where the box leaves the tensor.
#include <cstdint>
#include <string>
#include <vector>

#include "support.h"
#include "test_kernels.h"

using namespace simt_tests;

namespace {
struct Box {
  int rank;
  std::vector<uint64_t> dims;  // elements, dims[0] contiguous
  std::vector<uint32_t> box;
  int swizzle;
  std::vector<int> at;
};

// The tensor: element (x, y, z) = 1000 y + x + 20000 z (bf16 bit patterns, just distinct), rows
// padded to a multiple of 16 bytes and 8 more elements.
void check(const Box& b) {
  const uint64_t row = (b.dims[0] * 2 + 15) / 16 * 16 + 16;  // bytes
  const uint64_t plane = row * b.dims[1];
  const uint64_t depth = b.rank > 2 ? b.dims[2] : 1;
  std::vector<uint16_t> tensor(plane * depth / 2, 0xDEAD);
  for (uint64_t z = 0; z < depth; ++z)
    for (uint64_t y = 0; y < b.dims[1]; ++y)
      for (uint64_t x = 0; x < b.dims[0]; ++x) tensor[(z * plane + y * row) / 2 + x] = static_cast<uint16_t>(1000 * y + x + 20000 * z);
  const uint64_t strides[2] = {row, plane};
  const uint32_t box2 = b.rank > 2 ? b.box[2] : 1;
  const size_t words = size_t{b.box[0]} * b.box[1] * box2;
  for_each_schedule([&] {
    INFO("rank " << b.rank << ", box " << b.box[0] << "x" << b.box[1] << ", swizzle " << b.swizzle << ", at " << b.at[0]
                 << "," << b.at[1]);
    Device<uint16_t> dt(tensor), out(words);
    require_ok(tma_box(dt.get(), b.rank, b.dims.data(), strides, b.box.data(), b.swizzle, b.at.data(), out.get()));
    const auto h = out.host();
    const unsigned mask = b.swizzle ? static_cast<unsigned>(b.swizzle) / 16 - 1 : 0;
    for (uint32_t i2 = 0; i2 < box2; ++i2)
      for (uint32_t i1 = 0; i1 < b.box[1]; ++i1)
        for (uint32_t i0 = 0; i0 < b.box[0]; ++i0) {
          const long long x = b.at[0] + i0, y = b.at[1] + i1, z = b.rank > 2 ? b.at[2] + i2 : 0;
          const bool inside = x >= 0 && x < static_cast<long long>(b.dims[0]) && y >= 0 &&
                              y < static_cast<long long>(b.dims[1]) && z >= 0 && z < static_cast<long long>(depth);
          const uint16_t expect = inside ? static_cast<uint16_t>(1000 * y + x + 20000 * z) : 0;
          size_t o = ((size_t{i2} * b.box[1] + i1) * b.box[0] + i0) * 2;
          o ^= ((o >> 7) & mask) << 4;
          INFO("element " << i0 << "," << i1 << "," << i2 << " at byte " << o);
          REQUIRE(h[o / 2] == expect);
        }
  });
}
}  // namespace

TEST_CASE("TMA loads a box, zeros outside the tensor, in every swizzle", "[simt][tma]") {
  if (!hopper_or_warn("TMA loads")) return;
  check({2, {100, 16}, {64, 8}, 0, {64, 12}});    // past the last column and the last row
  check({2, {100, 16}, {64, 8}, 128, {0, 0}});    // 128-byte rows, 128-byte swizzle
  check({2, {100, 16}, {32, 8}, 64, {8, 3}});     // 64-byte rows, 64-byte swizzle, 16 bytes into a row
  check({2, {100, 16}, {16, 8}, 32, {96, 10}});   // 32-byte rows, 32-byte swizzle, partly outside
  check({2, {100, 16}, {64, 4}, 128, {-8, -2}});  // before the first row and column
  check({3, {32, 4, 3}, {32, 4, 2}, 0, {0, 1, 2}});  // 3D, partly past two dimensions
  check({3, {64, 8, 2}, {64, 8, 2}, 128, {0, 0, 0}});
}

// Every x above is a multiple of 8 bf16: a box's address in global memory must be 16-byte aligned
// (PTX ISA, Tensors, Bounding Box). At x = 4 an H200 stopped this test's kernel with an illegal
// instruction (cudaErrorIllegalInstruction, sticky: every later test of the binary failed); the
// emulator fails the launch instead, naming the rule.
TEST_CASE("a TMA box must start 16-byte aligned in global memory", "[simt][tma]") {
#if !FLASHSTEPS_GPU
  using Catch::Matchers::Contains;
  std::vector<uint16_t> t(224 * 16 / 2);  // the tensor of check(): 100 x 16 bf16 in rows of 224 bytes
  const uint64_t dims[2] = {100, 16}, strides[1] = {224};
  const uint32_t box[2] = {32, 8};
  // Launches the box at (x, y) quietly, requires the launch refused (its error reported once) and
  // returns its message.
  const auto refusal = [&](int swizzle, int x, int y) {
    simt::Schedule s = simt::schedule();
    const simt::Schedule saved = s;
    s.quiet = true;
    simt::set_schedule(s);
    Device<uint16_t> dt(t), out(32 * 8);
    const int at[2] = {x, y};
    const cudaError_t e = tma_box(dt.get(), 2, dims, strides, box, swizzle, at, out.get());
    simt::set_schedule(saved);
    REQUIRE(e != cudaSuccess);
    REQUIRE(cudaGetLastError() == e);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    return simt::last_launch_error();
  };
  for (int swizzle : {0, 64}) {
    for_each_schedule([&] {
      INFO("swizzle " << swizzle);
      CHECK_THAT(refusal(swizzle, 4, 3), Contains("tma_load_2d (common/simt/tests/tma_kernels.cu:") &&
                                             Contains("the box at first coordinate 4 starts 8 bytes (4 elements of 2 "
                                                      "bytes) from a row's start, not a multiple of 16") &&
                                             Contains("must be 16-byte aligned"));
      CHECK_THAT(refusal(swizzle, -4, 0), Contains("first coordinate -4 starts -8 bytes"));  // outside the tensor too
      Device<uint16_t> dt(t), out(32 * 8);
      const int aligned[2] = {-8, 3};
      require_ok(tma_box(dt.get(), 2, dims, strides, box, swizzle, aligned, out.get()));
    });
  }
#endif
}

TEST_CASE("make_tensor_map refuses what cuTensorMapEncodeTiled refuses", "[simt][tma]") {
#if !FLASHSTEPS_GPU
  std::vector<uint16_t> t(64 * 64);
  Device<uint16_t> dt(t), out(64 * 8);
  const uint64_t dims[2] = {64, 64}, strides[1] = {128}, odd_stride[1] = {120};
  const uint32_t box[2] = {64, 8}, wide[2] = {128, 8}, big[2] = {64, 300};
  const int at[2] = {0, 0};
  CHECK(tma_box(dt.get(), 2, dims, odd_stride, box, 0, at, out.get()) == cudaErrorInvalidValue);  // stride % 16
  CHECK(tma_box(dt.get(), 2, dims, strides, wide, 128, at, out.get()) == cudaErrorInvalidValue);  // row > span
  CHECK(tma_box(dt.get(), 2, dims, strides, big, 0, at, out.get()) == cudaErrorInvalidValue);     // box > 256
  CHECK(tma_box(dt.get(), 2, dims, strides, box, 0, at, out.get()) == cudaSuccess);
  CHECK(cudaGetLastError() == cudaSuccess);
#endif
}
