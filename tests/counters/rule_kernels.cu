// rule_kernels.cu: the kernels of rule_kernels.h. Each does one kind of access in a way whose
// counts can be worked out by hand; the tests compare the counters with those counts.
#include "rule_kernels.h"
#include "simt/ptx.cuh"
#include "simt/simt.h"
#include "simt/tma.cuh"
#include "simt/wgmma.cuh"

namespace rules {
namespace {

__global__ void strided_copy_kernel(const float* in, float* out, int n, int stride) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[static_cast<size_t>(i) * stride];
}

__global__ void builtins_only_kernel(unsigned* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = threadIdx.x + 7 * blockIdx.x + 11 * blockDim.x + 13 * gridDim.x + threadIdx.y + blockIdx.y;
}

template <bool Dynamic>
__global__ void shared_stride_kernel(float* out, int stride) {
  __shared__ float fixed[32 * 33];
  float* buf = Dynamic ? simt::dynamic_smem<float>() : fixed;
  const int lane = static_cast<int>(threadIdx.x);
  buf[lane * stride] = static_cast<float>(lane);
  __syncwarp();
  out[lane] = buf[lane * stride] + buf[0];
}

__global__ void shared_vector_kernel(float* out, int width, int spread) {
  __shared__ __align__(16) float buf[32 * 4 * 4];
  const int lane = static_cast<int>(threadIdx.x);
  const int at = lane * width / 4 * spread;  // in floats
  if (width == 4) {
    buf[at] = 1.f;
    __syncwarp();
    out[lane] = buf[at];
  } else if (width == 8) {
    *reinterpret_cast<float2*>(buf + at) = make_float2(1.f, 2.f);
    __syncwarp();
    const float2 v = *reinterpret_cast<const float2*>(buf + at);
    out[lane] = v.x + v.y;
  } else {
    *reinterpret_cast<float4*>(buf + at) = make_float4(1.f, 2.f, 3.f, 4.f);
    __syncwarp();
    const float4 v = *reinterpret_cast<const float4*>(buf + at);
    out[lane] = v.x + v.y + v.z + v.w;
  }
}

__global__ void divergent_kernel(const float* in, float* out, int n) {
  const int lane = static_cast<int>(threadIdx.x);
  float a;
  if (lane < 16)
    a = in[lane];
  else
    a = in[lane + 64] * in[lane + 96];
  float sum = 0.f;
  for (int j = lane; j < n; j += 32) sum += in[j];
  out[lane] = a + sum;
}

__global__ void operations_kernel(float* out, int per_warp, int exps, int shuffles, int barriers) {
  const int lane = static_cast<int>(threadIdx.x);
  const uint32_t a[4] = {0x3c003c00u, 0, 0, 0x3c003c00u}, b[2] = {0x3c003c00u, 0};
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int i = 0; i < per_warp; ++i) simt::mma_m16n8k16<__half>(acc, a, b, acc);
  float x = 0.f;
  for (int i = 0; i < exps; ++i) x += exp2f(-0.01f * static_cast<float>(i + lane)) + __expf(-0.02f * static_cast<float>(i));
  for (int i = 0; i < shuffles; ++i) x += __shfl_xor_sync(0xffffffffu, x, 1 + i % 16);
  for (int i = 0; i < barriers; ++i) __syncthreads();
  out[blockIdx.x * 32 + static_cast<unsigned>(lane)] = x + acc[0] + acc[1] + acc[2] + acc[3];
}

__global__ void phases_kernel(const float* in, float* out) {
  const unsigned lane = threadIdx.x, base = blockIdx.x * 64;
  float x = in[base + lane];  // fill
  __syncthreads();
  out[base + lane] = x;  // between the barriers: neither
  x += in[base + 32 + lane];
  __syncthreads();
  out[base + 32 + lane] = x;  // drain
}

__global__ void atomics_kernel(int* counter) { atomicAdd(&counter[threadIdx.x % 32], 1); }

__global__ void cas_atomics_kernel(float* sum, int* most) {
  atomicAdd(&sum[threadIdx.x % 32], 1.0f);
  atomicMax(&most[threadIdx.x % 32], static_cast<int>(blockIdx.x));
}

__global__ void read_twice_kernel(const float* in, float* out, int n, int shift) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i] + in[(i + shift) % n];
}

__global__ void sweeps_kernel(const float* rows, float* scratch, float* out, int len, int passes, bool store_first) {
  const int b = static_cast<int>(blockIdx.x), l = static_cast<int>(threadIdx.x);
  const float* row = rows + static_cast<long long>(b) * len;
  if (store_first) {
    for (int i = l; i < len; i += 32) scratch[static_cast<long long>(b) * len + i] = row[i];
    row = scratch + static_cast<long long>(b) * len;
  }
  float sum = 0;
  for (int pass = 0; pass < passes; ++pass)
    for (int i = l; i < len; i += 32) sum += row[i];
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (l == 0) out[b] = sum;
}

__global__ void shared_rows_kernel(const float* kv, float* out, int len, int skip, bool heads_first) {
  const int t = static_cast<int>(heads_first ? blockIdx.y : blockIdx.x), h = static_cast<int>(heads_first ? blockIdx.x : blockIdx.y);
  const int tiles = static_cast<int>(heads_first ? gridDim.y : gridDim.x);
  float sum = 0;
  for (int i = t * skip + static_cast<int>(threadIdx.x); i < len; i += 32) sum += kv[h * len + i];
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x == 0) out[h * tiles + t] = sum;
}

constexpr int kBc = 64, kD = 64;

__global__ void unswizzled_k_tile_kernel(const uint16_t* K, float* out) {
  uint16_t* Ks = simt::dynamic_smem<uint16_t>();  // [kBc][kD], row after row
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, mtx = lane / 8;
  for (int c = tid; c < kBc * kD / 8; c += 128) {
    const int r = c / (kD / 8), col = (c % (kD / 8)) * 8;
    simt::cp_async_cg_16(Ks + r * kD + col, K + r * kD + col);
  }
  simt::cp_async_commit();
  simt::cp_async_wait<0>();
  __syncthreads();
  uint32_t sum = 0;
  for (int kk = 0; kk < kD / 16; ++kk)
    for (int nt = 0; nt < kBc / 8; nt += 2) {
      uint32_t kb[4];
      simt::ldmatrix_x4(kb, &Ks[((nt + mtx / 2) * 8 + lane % 8) * kD + kk * 16 + (mtx % 2) * 8]);
      sum += kb[0] ^ kb[1] ^ kb[2] ^ kb[3];
    }
  out[tid] = static_cast<float>(sum & 0xffff);
}

// One warpgroup: thread 0 loads a 64 x 64 fp16 box (128-byte swizzle) with TMA; then 4 wgmma
// (k-steps of 16) multiply it by itself, A and B both the box, K-major, n = 64. ahead > 0: thread 0
// asks for a second box (on a second mbarrier) right after the first, which every thread waits for
// after the products (ahead = 1, as a ring's next tile) or before them (ahead = 2).
__global__ void tma_wgmma_kernel(const __grid_constant__ CUtensorMap map, float* out, int ahead) {
  unsigned char* smem = simt::dynamic_smem<unsigned char>();
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem);
  unsigned char* tile = smem + 1024;
  if (threadIdx.x == 0) simt::mbarrier_init(bar, 1), simt::mbarrier_init(bar + 1, 1);
  simt::fence_mbarrier_init();
  __syncthreads();
  if (threadIdx.x == 0) {
    simt::mbarrier_arrive_expect_tx(bar, 64 * 64 * 2);
    simt::tma_load_2d(tile, &map, 0, 0, bar);
    if (ahead > 0) {
      simt::mbarrier_arrive_expect_tx(bar + 1, 64 * 64 * 2);
      simt::tma_load_2d(tile + 64 * 64 * 2, &map, 0, 0, bar + 1);
    }
  }
  simt::mbarrier_wait_parity(bar, 0);
  if (ahead == 2) simt::mbarrier_wait_parity(bar + 1, 0);
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_fence();
  for (int s = 0; s < 4; ++s) {
    const uint64_t d = simt::wgmma_desc(tile + 32 * s, simt::WgmmaSwizzle::b128, 0, 1024);
    simt::wgmma_ss<__half, 64>(acc, d, d, s > 0);
  }
  simt::wgmma_commit();
  simt::wgmma_wait<0>(acc);
  if (ahead == 1) simt::mbarrier_wait_parity(bar + 1, 0);
  out[threadIdx.x] = acc[0];
}

}  // namespace

cudaError_t strided_copy(const float* in, float* out, int n, int stride) {
  return simt::launch(strided_copy_kernel, dim3((n + 127) / 128), dim3(128), 0, in, out, n, stride);
}
cudaError_t builtins_only(unsigned* out, int blocks, int threads) {
  return simt::launch(builtins_only_kernel, dim3(blocks), dim3(threads), 0, out);
}
cudaError_t shared_stride(float* out, int stride, bool dynamic) {
  if (dynamic) return simt::launch(shared_stride_kernel<true>, dim3(1), dim3(32), 32 * 33 * sizeof(float), out, stride);
  return simt::launch(shared_stride_kernel<false>, dim3(1), dim3(32), 0, out, stride);
}
cudaError_t shared_vector(float* out, int width, int spread) {
  return simt::launch(shared_vector_kernel, dim3(1), dim3(32), 0, out, width, spread);
}
cudaError_t divergent(const float* in, float* out, int n) {
  return simt::launch(divergent_kernel, dim3(1), dim3(32), 0, in, out, n);
}
cudaError_t operations(float* out, int blocks, int per_warp, int exps, int shuffles, int barriers) {
  return simt::launch(operations_kernel, dim3(blocks), dim3(32), 0, out, per_warp, exps, shuffles, barriers);
}
cudaError_t phases(const float* in, float* out, int blocks) {
  return simt::launch(phases_kernel, dim3(blocks), dim3(32), 0, in, out);
}
cudaError_t atomics(int* counter, int blocks) { return simt::launch(atomics_kernel, dim3(blocks), dim3(128), 0, counter); }
cudaError_t cas_atomics(float* sum, int* most, int blocks) {
  return simt::launch(cas_atomics_kernel, dim3(blocks), dim3(128), 0, sum, most);
}
cudaError_t read_twice(const float* in, float* out, int n, int shift) {
  return simt::launch(read_twice_kernel, dim3((n + 127) / 128), dim3(128), 0, in, out, n, shift);
}
cudaError_t sweeps(const float* rows, float* scratch, float* out, int blocks, int len, int passes, bool store_first) {
  return simt::launch(sweeps_kernel, dim3(blocks), dim3(32), 0, rows, scratch, out, len, passes, store_first);
}
cudaError_t shared_rows(const float* kv, float* out, int tiles, int heads, int len, int skip, bool heads_first) {
  const dim3 grid = heads_first ? dim3(heads, tiles) : dim3(tiles, heads);
  return simt::launch(shared_rows_kernel, grid, dim3(32), 0, kv, out, len, skip, heads_first);
}
cudaError_t unswizzled_k_tile(const uint16_t* K, float* out) {
  return simt::launch(unswizzled_k_tile_kernel, dim3(1), dim3(128), kBc * kD * sizeof(uint16_t), K, out);
}

cudaError_t tma_wgmma(const uint16_t* tensor, float* out, int ahead) {
  const cuuint64_t dims[2] = {64, 64}, strides[1] = {64 * 2};
  const cuuint32_t box[2] = {64, 64};
  CUtensorMap map;
  const cudaError_t e = simt::make_tensor_map(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, tensor, dims, strides, box,
                                              CU_TENSOR_MAP_SWIZZLE_128B);
  if (e != cudaSuccess) return e;
  return simt::launch(tma_wgmma_kernel, dim3(1), dim3(128), 1024 + 2 * 64 * 64 * 2, map, out, ahead);
}

}  // namespace rules
