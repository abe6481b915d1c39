// sync_kernels.cu: barriers, shuffles, votes and atomics, in plain CUDA C++.
#include "simt/named_barrier.cuh"
#include "simt/simt.h"
#include "test_kernels.h"

namespace simt_tests {
namespace {

__global__ void builtin_ids_kernel(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned* o = out + 8 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = threadIdx.z;
  o[3] = blockIdx.x;
  o[4] = blockIdx.y;
  o[5] = blockIdx.z;
  o[6] = blockDim.x * blockDim.y * blockDim.z;
  o[7] = gridDim.x * gridDim.y * gridDim.z;
}

__global__ void block_reverse_kernel(const int* in, int* out, int n) {
  __shared__ int tile[1024];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  const int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
  if (j < n) out[j] = tile[threadIdx.x];
}

__global__ void block_reverse_dynamic_kernel(const int* in, int* out, int n) {
  int* tile = simt::dynamic_smem<int>();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  const int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
  if (j < n) out[j] = tile[threadIdx.x];
}

__global__ void barrier_reductions_kernel(const int* pred, int* out) {
  const int p = pred[blockIdx.x * blockDim.x + threadIdx.x];
  const int count = __syncthreads_count(p);
  const int all = __syncthreads_and(p);
  const int any = __syncthreads_or(p);
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x + 0] = count;
    out[3 * blockIdx.x + 1] = all;
    out[3 * blockIdx.x + 2] = any;
  }
}

__global__ void shuffle_full_kernel(ShflMode mode, const int* in, int* out, int arg, int width) {
  const int v = in[threadIdx.x];
  int r = 0;
  switch (mode) {
    case ShflMode::idx: r = __shfl_sync(0xffffffffu, v, arg, width); break;
    case ShflMode::up: r = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width); break;
    case ShflMode::down: r = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width); break;
    case ShflMode::bfly: r = __shfl_xor_sync(0xffffffffu, v, arg, width); break;
  }
  out[threadIdx.x] = r;
}

__global__ void shuffle_halves_kernel(const int* in, int* out, int arg, int width) {
  const unsigned mask = threadIdx.x < 16 ? 0x0000ffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_xor_sync(mask, in[threadIdx.x], arg, width);
}

__global__ void shuffle_double_kernel(const double* in, double* out, int delta) {
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, in[threadIdx.x], static_cast<unsigned>(delta));
}

__global__ void votes_kernel(const int* pred, int* out, unsigned mask) {
  const unsigned lane = threadIdx.x;
  int* o = out + 3 * lane;
  if (mask >> lane & 1u) {
    const int p = pred[lane];
    o[0] = static_cast<int>(__ballot_sync(mask, p));
    o[1] = __all_sync(mask, p);
    o[2] = __any_sync(mask, p);
  } else {
    o[0] = o[1] = o[2] = -1;
  }
}

__global__ void syncwarp_exchange_kernel(const int* in, int* out, unsigned mask) {
  __shared__ int slot[32];
  const unsigned lane = threadIdx.x;
  if (!(mask >> lane & 1u)) {
    out[lane] = -1;
    return;
  }
  slot[lane] = in[lane];
  __syncwarp(mask);
  // The next lane of the mask, cyclically.
  unsigned next = (lane + 1) % 32;
  while (!(mask >> next & 1u)) next = (next + 1) % 32;
  out[lane] = slot[next];
}

__global__ void atomics_kernel(int* counters, float* fsum) {
  const int gid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&counters[0], 1);
  atomicMax(&counters[1], gid);
  atomicMin(&counters[2], gid);
  atomicAdd(fsum, 0.5f);
  int old = counters[3], assumed;
  do {
    assumed = old;
    old = atomicCAS(&counters[3], assumed, assumed + 1);
  } while (old != assumed);
}

__device__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void reduce_sum_kernel(const int* in, unsigned long long* total, int n) {
  __shared__ int partial[32];
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  int v = warp_sum(i < n ? in[i] : 0);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x / 32);
    v = warp_sum(lane < warps ? partial[lane] : 0);
    if (lane == 0) atomicAdd(total, static_cast<unsigned long long>(static_cast<long long>(v)));
  }
}

// Warp 0 writes a value per round and announces it with bar.arrive; warp 1 waits for it with
// bar.sync, reads it and announces that on a third barrier, which warp 0 waits at before the next
// write. Warp 2 takes no part and returns at once.
__global__ void named_barrier_pingpong_kernel(int* out, int rounds) {
  int* slot = simt::dynamic_smem<int>();
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (threadIdx.x >= 64) return;
  for (int r = 0; r < rounds; ++r) {
    const unsigned written = 1 + static_cast<unsigned>(r % 2);  // two ids in turn, as two consumers would
    if (threadIdx.x < 32) {
      if (r > 0) simt::named_barrier_sync(3, 64);
      slot[lane] = 1000 * static_cast<int>(blockIdx.x) + 100 * r + lane;
      simt::named_barrier_arrive(written, 64);
    } else {
      simt::named_barrier_sync(written, 64);
      out[(static_cast<int>(blockIdx.x) * rounds + r) * 32 + lane] = slot[lane];
      if (r + 1 < rounds) simt::named_barrier_arrive(3, 64);
    }
  }
}

}  // namespace

cudaError_t named_barrier_pingpong(int* out, int blocks, int rounds) {
  return simt::launch(named_barrier_pingpong_kernel, dim3(blocks), dim3(96), 32 * sizeof(int), out, rounds);
}
cudaError_t builtin_ids(unsigned* out, dim3 grid, dim3 block) {
  return simt::launch(builtin_ids_kernel, grid, block, 0, out);
}
cudaError_t block_reverse(const int* in, int* out, int n, int threads) {
  return simt::launch(block_reverse_kernel, dim3((n + threads - 1) / threads), dim3(threads), 0, in, out, n);
}
cudaError_t block_reverse_dynamic(const int* in, int* out, int n, int threads) {
  return simt::launch(block_reverse_dynamic_kernel, dim3((n + threads - 1) / threads), dim3(threads),
                      threads * sizeof(int), in, out, n);
}
cudaError_t barrier_reductions(const int* pred, int* out, int blocks, int threads) {
  return simt::launch(barrier_reductions_kernel, dim3(blocks), dim3(threads), 0, pred, out);
}
cudaError_t shuffle_full(ShflMode mode, const int* in, int* out, int arg, int width) {
  return simt::launch(shuffle_full_kernel, dim3(1), dim3(32), 0, mode, in, out, arg, width);
}
cudaError_t shuffle_halves(const int* in, int* out, int arg, int width) {
  return simt::launch(shuffle_halves_kernel, dim3(1), dim3(32), 0, in, out, arg, width);
}
cudaError_t shuffle_double(const double* in, double* out, int delta) {
  return simt::launch(shuffle_double_kernel, dim3(1), dim3(32), 0, in, out, delta);
}
cudaError_t votes(const int* pred, int* out, unsigned mask) {
  return simt::launch(votes_kernel, dim3(1), dim3(32), 0, pred, out, mask);
}
cudaError_t syncwarp_exchange(const int* in, int* out, unsigned mask) {
  return simt::launch(syncwarp_exchange_kernel, dim3(1), dim3(32), 0, in, out, mask);
}
cudaError_t atomics(int* counters, float* fsum, int blocks, int threads) {
  return simt::launch(atomics_kernel, dim3(blocks), dim3(threads), 0, counters, fsum);
}
cudaError_t reduce_sum(const int* in, long long* total, int n, int threads) {
  return simt::launch(reduce_sum_kernel, dim3((n + threads - 1) / threads), dim3(threads), 0, in,
                      reinterpret_cast<unsigned long long*>(total), n);
}

}  // namespace simt_tests
