// tma.cpp: the tensor maps and TMA loads of simt/tma.cuh on the CPU. A map is packed into the
// CUtensorMap's 128 bytes; a load reads its box at issue (zeros outside the tensor), lays it out as
// shared memory will hold it (swizzled), completes its bytes on the mbarrier, and is written by the
// first wait that sees that phase complete (mbarrier.cpp, land_staged).
#include <cuda.h>

#include <algorithm>
#include <cstring>

#include "block_runner.h"
#include "simt/cpu/counters_hooks.h"

namespace simt::detail {

namespace {
constexpr uint64_t kMagic = 0x54'4d41'5053'494dull;  // "a map simt made", in its first 8 bytes

struct CpuTensorMap {
  uint64_t magic;
  const unsigned char* global;
  unsigned rank, esize, swizzle;  // swizzle: the span in bytes (0, 32, 64, 128)
  uint64_t dims[3], strides[3];   // strides in bytes, strides[0] the element's size
  unsigned box[3];
};
static_assert(sizeof(CpuTensorMap) <= sizeof(CUtensorMap), "the map must fit a CUtensorMap");

unsigned element_size(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: return 4;
    default: return 0;
  }
}

unsigned swizzle_span(CUtensorMapSwizzle s) {
  switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    case CU_TENSOR_MAP_SWIZZLE_128B: return 128;
    default: return 1;  // not emulated
  }
}
}  // namespace

// What cuTensorMapEncodeTiled documents (cuda.h), for the cases the emulator implements.
cudaError_t make_tensor_map(CUtensorMap* map, CUtensorMapDataType dtype, unsigned rank, const void* global,
                            const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                            CUtensorMapSwizzle swizzle) {
  const unsigned esize = element_size(dtype), span = swizzle_span(swizzle);
  if (!map || !global || !dims || !box || (rank > 1 && !strides)) return cudaErrorInvalidValue;
  if (esize == 0 || span == 1 || rank < 2 || rank > 3) return cudaErrorNotSupported;  // not emulated (no 1D load here)
  if (reinterpret_cast<uintptr_t>(global) % 16 != 0) return cudaErrorInvalidValue;
  CpuTensorMap m{};
  m.magic = kMagic;
  m.global = static_cast<const unsigned char*>(global);
  m.rank = rank;
  m.esize = esize;
  m.swizzle = span;
  m.strides[0] = esize;
  for (unsigned i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (1ull << 32)) return cudaErrorInvalidValue;
    if (box[i] == 0 || box[i] > 256) return cudaErrorInvalidValue;
    m.dims[i] = dims[i];
    m.box[i] = box[i];
    if (i > 0) {
      if (strides[i - 1] % 16 != 0 || strides[i - 1] >= (1ull << 40)) return cudaErrorInvalidValue;
      m.strides[i] = strides[i - 1];
    }
  }
  const uint64_t row = uint64_t{box[0]} * esize;  // the box's inner extent in bytes
  if (row % 16 != 0 || (span && row > span)) return cudaErrorInvalidValue;
  if (span && row != span) return cudaErrorNotSupported;  // emulated: box rows of the swizzle's span
  std::memset(map, 0, sizeof *map);
  std::memcpy(map, &m, sizeof m);
  return cudaSuccess;
}

void BlockRunner::tma_load(void* dst, const void* map_bytes, int rank, const int* c, void* bar, const char* file,
                           int line) {
  require_arch(90, "cp.async.bulk.tensor (TMA)", file, line);
  CpuTensorMap m;
  std::memcpy(&m, map_bytes, sizeof m);
  if (m.magic != kMagic)
    fail("tma_load_%dd (%s:%d): the map was not made by simt::make_tensor_map (pass it as a __grid_constant__ "
         "parameter, by value)",
         rank, file, line);
  if (static_cast<int>(m.rank) != rank)
    fail("tma_load_%dd (%s:%d): the map has rank %u", rank, file, line, m.rank);
  // The box's address in global memory (its first element's, inside the tensor or not) must be
  // 16-byte aligned (PTX ISA, "Tensors: Bounding Box"); a GPU stops the kernel with an illegal
  // instruction otherwise. The map's address and strides are multiples of 16, so it is the first
  // coordinate's bytes that must be.
  const long long first = static_cast<long long>(c[0]) * m.esize;
  if (first % 16 != 0)
    fail("tma_load_%dd (%s:%d): the box at first coordinate %d starts %lld bytes (%d elements of %u bytes) from a "
         "row's start, not a multiple of 16: a box's address in global memory must be 16-byte aligned (PTX ISA, "
         "Tensors, Bounding Box); a GPU stops the kernel with an illegal instruction",
         rank, file, line, c[0], first, c[0], m.esize);
  const size_t bytes = size_t{m.box[0]} * (rank > 1 ? m.box[1] : 1) * (rank > 2 ? m.box[2] : 1) * m.esize;
  auto* d = static_cast<unsigned char*>(dst);
  const size_t align = m.swizzle ? 8u * m.swizzle : 128u;  // a swizzle's pattern repeats every 8 of its spans
  if (d < smem_ || d + bytes > smem_ + smem_bytes_)
    fail("tma_load_%dd (%s:%d): the box's %zu bytes at %p do not lie in the block's %zu bytes of dynamic shared memory",
         rank, file, line, bytes, dst, smem_bytes_);
  const size_t at = static_cast<size_t>(d - smem_);
  if (at % align != 0)
    fail("tma_load_%dd (%s:%d): the destination, dynamic shared memory + %zu, is not %zu-byte aligned%s", rank, file,
         line, at, align, m.swizzle ? " (the swizzle's pattern)" : "");
  Mbarrier& b = mbarrier_at(bar, rank == 2 ? "tma_load_2d" : "tma_load_3d", file, line);
  StagedCopy copy{d, std::vector<unsigned char>(bytes, 0), b.phase};
  const unsigned box1 = rank > 1 ? m.box[1] : 1, box2 = rank > 2 ? m.box[2] : 1;
  for (unsigned i2 = 0; i2 < box2; ++i2)
    for (unsigned i1 = 0; i1 < box1; ++i1)
      for (unsigned i0 = 0; i0 < m.box[0]; ++i0) {
        const long long g[3] = {static_cast<long long>(c[0]) + i0, static_cast<long long>(c[1]) + i1,
                                rank > 2 ? static_cast<long long>(c[2]) + i2 : 0};
        bool inside = true;
        for (int k = 0; k < rank; ++k) inside &= g[k] >= 0 && static_cast<uint64_t>(g[k]) < m.dims[k];
        const size_t linear = ((size_t{i2} * box1 + i1) * m.box[0] + i0) * m.esize;
        const size_t o = swizzled(at + linear, m.swizzle);
        if (inside)
          std::memcpy(&copy.bytes[o - at], m.global + g[0] * m.strides[0] + g[1] * m.strides[1] + g[2] * m.strides[2],
                      m.esize);
      }
  // The counters: each box row's part inside the tensor (read from global memory), then the box.
  for (unsigned i2 = 0; i2 < box2; ++i2)
    for (unsigned i1 = 0; i1 < box1; ++i1) {
      const long long y = static_cast<long long>(c[1]) + i1, z = rank > 2 ? static_cast<long long>(c[2]) + i2 : 0;
      if (y < 0 || static_cast<uint64_t>(y) >= m.dims[1] || z < 0 || (rank > 2 && static_cast<uint64_t>(z) >= m.dims[2]))
        continue;
      const long long x0 = std::max<long long>(c[0], 0);
      const long long x1 = std::min<long long>(static_cast<long long>(c[0]) + m.box[0], static_cast<long long>(m.dims[0]));
      if (x1 > x0)
        counters::tma_row(m.global + x0 * m.strides[0] + y * m.strides[1] + z * m.strides[2],
                          static_cast<unsigned>((x1 - x0) * m.esize));
    }
  counters::tma_box(static_cast<unsigned>(bytes));
  b.staged.push_back(std::move(copy));
  mbarrier_tx(bar, -static_cast<long long>(bytes), rank == 2 ? "tma_load_2d" : "tma_load_3d", file, line);
}

}  // namespace simt::detail
