// buggy_kernels.cu: deliberately wrong kernels. On a GPU they hang, race or read garbage; the
// emulator must turn each into a launch error naming the place, or into a visibly wrong result
// (cpu backend only). test_diagnostics.cpp checks the messages' file:line: add kernels at the end.
#include "buggy_kernels.h"
#include "simt/named_barrier.cuh"
#include "simt/ptx.cuh"
#include "simt/setmaxnreg.cuh"
#include "simt/tma.cuh"  // and mbarrier.cuh
#include "simt/wgmma.cuh"
namespace simt_tests {
namespace {

__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void barrier_after_return(int* out) {
  if (threadIdx.x == 3) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void mismatched_masks(int* out) {
  const unsigned mask = threadIdx.x < 16 ? 0x0000ffffu : 0xffffffffu;
  out[threadIdx.x] = __shfl_xor_sync(mask, static_cast<int>(threadIdx.x), 1);
}

__global__ void shuffle_outside_mask(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 16, 32);
}

__global__ void deadlock(int* out) {
  // Half a warp waits for the other half at a shuffle; the other half waits at the block barrier.
  if (threadIdx.x < 16) {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
  } else {
    __syncthreads();
  }
}

__global__ void warp_collective_after_return(int* out) {
  if (threadIdx.x % 2) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 2);
}

__global__ void missing_barrier(const int* in, int* out) {
  // Each thread reads the value its left neighbour stored, without a barrier in between: the
  // result depends on who ran first.
  int* tile = simt::dynamic_smem<int>();
  tile[threadIdx.x] = in[threadIdx.x];
  if (threadIdx.x > 0) out[threadIdx.x] = tile[threadIdx.x - 1];
}

__global__ void read_unwritten(float* out) {
  float* tile = simt::dynamic_smem<float>();
  out[threadIdx.x] = tile[threadIdx.x];
}

__global__ void cp_async_without_wait(const float* in, float* out) {
  float* tile = simt::dynamic_smem<float>();
  simt::cp_async_cg_16(tile + 4 * threadIdx.x, in + 4 * threadIdx.x);
  simt::cp_async_commit();
  __syncthreads();  // a barrier does not complete a cp.async: cp_async_wait does
  for (int i = 0; i < 4; ++i) out[4 * threadIdx.x + i] = tile[4 * threadIdx.x + i];
}

__global__ void misaligned_ldmatrix(int* out) {
  __shared__ __align__(16) uint16_t tile[8 * 8 + 8];
  for (int i = static_cast<int>(threadIdx.x); i < 72; i += 32) tile[i] = 0;
  __syncwarp();
  uint32_t r[1];
  simt::ldmatrix_x1(r, &tile[1 + 8 * (threadIdx.x % 8)]);
  out[threadIdx.x] = static_cast<int>(r[0]);
}

__global__ void mma_by_half_a_warp(float* out) {
  if (threadIdx.x >= 16) return;
  const uint32_t a[4] = {}, b[2] = {};
  float d[4] = {};
  simt::mma_m16n8k16<__half>(d, a, b, d);
  out[threadIdx.x] = d[0];
}

__global__ void uses_smem(int* out) {
  int* tile = simt::dynamic_smem<int>();
  tile[threadIdx.x] = 1;
  out[threadIdx.x] = tile[threadIdx.x];
}

// The mbarriers' misuses. Each initialises one barrier, count 2 (thread 0), in dynamic shared memory.
__device__ uint64_t* two_arrivals() {
  uint64_t* bar = simt::dynamic_smem<uint64_t>();
  if (threadIdx.x == 0) simt::mbarrier_init(bar, 2);
  simt::fence_mbarrier_init();
  __syncthreads();
  return bar;
}

__global__ void mbarrier_missing_arrival(int* out) {
  uint64_t* bar = two_arrivals();
  if (threadIdx.x == 0) simt::mbarrier_arrive(bar);  // the second arrival never comes
  simt::mbarrier_wait_parity(bar, 0);
  out[threadIdx.x] = 1;
}

__global__ void mbarrier_extra_arrival(int* out) {
  uint64_t* bar = two_arrivals();
  if (threadIdx.x == 0) simt::mbarrier_expect_tx(bar, 16);  // the phase waits for 16 bytes after its arrivals
  __syncthreads();
  if (threadIdx.x < 3) simt::mbarrier_arrive(bar);  // three arrivals for a count of 2
  out[threadIdx.x] = 1;
}

__global__ void mbarrier_bytes_beyond(int* out) {
  uint64_t* bar = two_arrivals();
  if (threadIdx.x == 0) simt::mbarrier_arrive_expect_tx(bar, 64);
  if (threadIdx.x == 1) simt::mbarrier_arrive(bar);
  if (threadIdx.x < 3) simt::mbarrier_complete_tx(bar, 32);  // 96 bytes for the 64 announced
  out[threadIdx.x] = 1;
}

__global__ void mbarrier_uninitialised(int* out) {
  uint64_t* bar = two_arrivals();
  simt::mbarrier_arrive(bar + 1);  // the next 8 bytes are no barrier
  out[threadIdx.x] = 1;
}

__global__ void mbarrier_before_sync(int* out) {
  uint64_t* bar = simt::dynamic_smem<uint64_t>();
  if (threadIdx.x == 0) simt::mbarrier_init(bar, 32);
  simt::mbarrier_arrive(bar);  // no __syncthreads after the init
  out[threadIdx.x] = 1;
}

__global__ void mbarrier_overwritten(int* out) {
  uint64_t* bar = two_arrivals();
  if (threadIdx.x == 0) *bar = 0;  // a store over the barrier
  __syncthreads();
  simt::mbarrier_arrive(bar);
  out[threadIdx.x] = 1;
}

__global__ void named_barrier_alone(int* out) {
  if (threadIdx.x < 32) simt::named_barrier_sync(1, 64);  // warp 1 never arrives
  out[threadIdx.x] = 1;
}

__global__ void named_barrier_counts(int* out) {
  simt::named_barrier_sync(1, threadIdx.x < 32 ? 64 : 96);  // one barrier, two counts
  out[threadIdx.x] = 1;
}

__global__ void setmaxnreg_disagree(int* out) {
  if (threadIdx.x < 32) {
    simt::setmaxnreg_dec<24>();
  } else {
    simt::setmaxnreg_dec<32>();  // warps 1 to 3 ask for another count
  }
  out[threadIdx.x] = 1;
}

__global__ void setmaxnreg_skipped(int* out) {
  if (threadIdx.x >= 32) simt::setmaxnreg_inc<240>();  // warp 0 makes no call
  out[threadIdx.x] = 1;
}

__global__ void setmaxnreg_partial_group(int* out) {
  simt::setmaxnreg_inc<240>();
  out[threadIdx.x] = 1;
}

// One thread loads a 16 x 8 box of bf16 (256 bytes) with TMA into dynamic shared memory at `at`.
__device__ uint64_t* tma_box_at(const CUtensorMap& map, unsigned at) {
  unsigned char* smem = simt::dynamic_smem<unsigned char>();
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem);
  if (threadIdx.x == 0) simt::mbarrier_init(bar, 1);
  simt::fence_mbarrier_init();
  __syncthreads();
  if (threadIdx.x == 0) {
    simt::mbarrier_arrive_expect_tx(bar, 256);
    simt::tma_load_2d(smem + at, &map, 0, 0, bar);
  }
  return bar;
}

__global__ void tma_without_wait(const __grid_constant__ CUtensorMap map, int* out) {
  tma_box_at(map, 1024);
  __syncthreads();  // not the mbarrier's wait: the box has not landed
  const auto* tile = reinterpret_cast<const uint16_t*>(simt::dynamic_smem<unsigned char>() + 1024);
  out[threadIdx.x] = tile[threadIdx.x];
}

__global__ void tma_misaligned(const __grid_constant__ CUtensorMap map, int* out) {
  uint64_t* bar = tma_box_at(map, 128);  // a 32-byte swizzle's pattern needs 256
  simt::mbarrier_wait_parity(bar, 0);
  out[threadIdx.x] = 1;
}

// A 16 x 16 bf16 tensor in `in` (512 bytes), a box of 16 x 8, swizzled by 32 bytes or not.
CUtensorMap box_map(const void* in, bool swizzle) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {16, 16}, strides[1] = {32};
  const cuuint32_t box[2] = {16, 8};
  if (simt::make_tensor_map(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, in, dims, strides, box,
                            swizzle ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE) != cudaSuccess)
    std::abort();
  return map;
}

__global__ void named_barrier_three_warps(int* out) {
  simt::named_barrier_sync(1, 64);  // 3 warps for a count of 2: the third waits alone
  out[threadIdx.x] = 1;
}

__global__ void mbarrier_extra_expect_tx(int* out) {
  uint64_t* bar = simt::dynamic_smem<uint64_t>();
  if (threadIdx.x == 0) {
    simt::mbarrier_init(bar, 1);
    simt::mbarrier_complete_tx(bar, 16);        // bytes before they are announced: the count is -16
    simt::mbarrier_arrive(bar);                 // the one arrival; the phase waits for its bytes
    simt::mbarrier_arrive_expect_tx(bar, 16);   // a second arrival, which the bytes would hide
  }
  out[threadIdx.x] = 1;
}

__global__ void setmaxnreg_too_many(int* out) {
  if (threadIdx.x < 128) {
    simt::setmaxnreg_dec<80>();
  } else {
    simt::setmaxnreg_inc<224>();  // 80 + 2 x 224 registers for 128 threads each: 67584 > 65536
  }
  out[threadIdx.x % 128] = 1;  // out holds 128
}

__global__ void setmaxnreg_lowering_inc(int* out) {
  simt::setmaxnreg_inc<240>();
  simt::setmaxnreg_inc<232>();  // an .inc below the count the warps have
  out[threadIdx.x] = 1;
}

// wgmma: 128 threads, 4096 bytes of dynamic shared memory (zeros), A from registers (zeros), B
// K-major without swizzle at the start.
__device__ uint64_t zero_b() {
  unsigned char* smem = simt::dynamic_smem<unsigned char>();
  for (int i = static_cast<int>(threadIdx.x); i < 4096; i += 128) smem[i] = 0;
  simt::fence_proxy_async();
  __syncthreads();
  return simt::wgmma_desc(smem, simt::WgmmaSwizzle::none, 128, 256);
}

__global__ void wgmma_read_before_wait(float* out) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_fence();
  simt::wgmma_rs<__half, 64>(acc, a, b, false);
  simt::wgmma_commit();
  out[threadIdx.x] = acc[0];  // before the wait
  simt::wgmma_wait<0>(acc);
}

__global__ void wgmma_without_fence(float* out) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_rs<__half, 64>(acc, a, b, false);
  simt::wgmma_commit();
  simt::wgmma_wait<0>(acc);
  out[threadIdx.x] = acc[0];
}

__global__ void wgmma_operand_overwritten(float* out) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_fence();
  simt::wgmma_rs<__half, 64>(acc, a, b, false);
  simt::wgmma_commit();
  if (threadIdx.x == 0) simt::dynamic_smem<__half>()[0] = __float2half(1.f);  // B(0, 0), still being read
  simt::wgmma_wait<0>(acc);
  out[threadIdx.x] = acc[0];
}

__global__ void wgmma_misaligned_swizzle(float* out) {
  zero_b();
  const uint64_t b = simt::wgmma_desc(simt::dynamic_smem<unsigned char>() + 128, simt::WgmmaSwizzle::b128, 0, 1024);
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_fence();
  simt::wgmma_rs<__half, 64>(acc, a, b, false);
  simt::wgmma_commit();
  simt::wgmma_wait<0>(acc);
  out[threadIdx.x] = acc[0];
}

__global__ void wgmma_returns_in_flight(float*) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_fence();
  simt::wgmma_rs<__half, 64>(acc, a, b, false);
  simt::wgmma_commit();
}  // no wait

__global__ void wgmma_warps_disagree(float* out) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc;
  simt::wgmma_fence();
  simt::wgmma_rs<__half, 64>(acc, a, threadIdx.x / 32 == 1 ? b + 2 : b, false);  // warp 1: B 32 bytes on
  simt::wgmma_commit();
  simt::wgmma_wait<0>(acc);
  out[threadIdx.x] = acc[0];
}

__global__ void wgmma_read_newer_group(float* out) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::WgmmaAccumulator<64> acc1, acc2;
  simt::wgmma_fence();
  simt::wgmma_rs<__half, 64>(acc1, a, b, false);
  simt::wgmma_commit();
  simt::wgmma_rs<__half, 64>(acc2, a, b, false);
  simt::wgmma_commit();
  simt::wgmma_wait<1>(acc1);  // completes the older group only
  out[threadIdx.x] = acc1[0] + acc2[0];
  simt::wgmma_wait<0>(acc2);
}

__global__ void wgmma_out_of_scope(float* out) {
  const uint64_t b = zero_b();
  const uint32_t a[4] = {};
  simt::wgmma_fence();
  {
    simt::WgmmaAccumulator<64> acc;
    simt::wgmma_rs<__half, 64>(acc, a, b, false);
    simt::wgmma_commit();
  }  // acc gone, its wgmma in flight
  simt::wgmma_wait<0>();
  out[threadIdx.x] = 0.f;
}

__global__ void named_barrier_divergent(int* out) {
  if (threadIdx.x % 32 < 16) simt::named_barrier_sync(1, 64);  // half of each warp waits,
  else simt::named_barrier_arrive(1, 64);                        // the other half only arrives
  out[threadIdx.x] = 1;
}

// Odd lanes run the loop twice, even lanes once: after its first iteration an even lane is at the
// second mma while the odd lanes are at the first again.
__global__ void mma_loop_exit(float* out) {
  const uint32_t a[4] = {}, b[2] = {};
  float d[4] = {};
  for (int k = 0; k <= static_cast<int>(threadIdx.x % 2); ++k) simt::mma_m16n8k16<__half>(d, a, b, d);
  simt::mma_m16n8k16<__half>(d, a, b, d);
  out[threadIdx.x] = d[0];
}

// Even lanes run the inner loop once and then twice, odd lanes twice and then once: three mma at one
// line for every lane, the second of an even lane in another iteration than the second of an odd one.
__global__ void mma_loop_iterations(float* out) {
  const uint32_t a[4] = {}, b[2] = {};
  float d[4] = {};
  for (int outer = 0; outer < 2; ++outer)
    for (int k = 0; k < 1 + static_cast<int>((threadIdx.x + outer) % 2); ++k) simt::mma_m16n8k16<__half>(d, a, b, d);
  out[threadIdx.x] = d[0];
}

}  // namespace

cudaError_t run_buggy(Bug bug, void* out, const void* in, size_t smem_bytes) {
  int* iout = static_cast<int*>(out);
  float* fout = static_cast<float*>(out);
  const dim3 one(1), warp(32);
  switch (bug) {
    case Bug::divergent_barrier: return simt::launch(divergent_barrier, one, warp, 0, iout);
    case Bug::barrier_after_return: return simt::launch(barrier_after_return, one, dim3(64), 0, iout);
    case Bug::mismatched_masks: return simt::launch(mismatched_masks, one, warp, 0, iout);
    case Bug::shuffle_outside_mask: return simt::launch(shuffle_outside_mask, one, warp, 0, iout);
    case Bug::deadlock: return simt::launch(deadlock, one, warp, 0, iout);
    case Bug::warp_collective_after_return: return simt::launch(warp_collective_after_return, one, warp, 0, iout);
    case Bug::missing_barrier:
      return simt::launch(missing_barrier, one, dim3(128), 128 * sizeof(int), static_cast<const int*>(in), iout);
    case Bug::read_unwritten: return simt::launch(read_unwritten, one, warp, 32 * sizeof(float), fout);
    case Bug::cp_async_without_wait:
      return simt::launch(cp_async_without_wait, one, warp, 128 * sizeof(float), static_cast<const float*>(in), fout);
    case Bug::misaligned_ldmatrix: return simt::launch(misaligned_ldmatrix, one, warp, 0, iout);
    case Bug::mma_by_half_a_warp: return simt::launch(mma_by_half_a_warp, one, warp, 0, fout);
    case Bug::smem_without_opt_in: return simt::launch_exact(uses_smem, one, warp, smem_bytes, iout);
    case Bug::smem_with_opt_in: return simt::launch(uses_smem, one, warp, smem_bytes, iout);
    case Bug::too_many_threads: return simt::launch(uses_smem, one, dim3(2048), 0, iout);
    case Bug::mbarrier_missing_arrival: return simt::launch(mbarrier_missing_arrival, one, warp, 16, iout);
    case Bug::mbarrier_extra_arrival: return simt::launch(mbarrier_extra_arrival, one, warp, 16, iout);
    case Bug::mbarrier_bytes_beyond: return simt::launch(mbarrier_bytes_beyond, one, warp, 16, iout);
    case Bug::mbarrier_uninitialised: return simt::launch(mbarrier_uninitialised, one, warp, 16, iout);
    case Bug::mbarrier_before_sync: return simt::launch(mbarrier_before_sync, one, warp, 16, iout);
    case Bug::mbarrier_overwritten: return simt::launch(mbarrier_overwritten, one, warp, 16, iout);
    case Bug::named_barrier_alone: return simt::launch(named_barrier_alone, one, dim3(64), 0, iout);
    case Bug::named_barrier_counts: return simt::launch(named_barrier_counts, one, dim3(96), 0, iout);
    case Bug::setmaxnreg_disagree: return simt::launch(setmaxnreg_disagree, one, dim3(128), 0, iout);
    case Bug::setmaxnreg_skipped: return simt::launch(setmaxnreg_skipped, one, dim3(128), 0, iout);
    case Bug::setmaxnreg_partial_group: return simt::launch(setmaxnreg_partial_group, one, dim3(96), 0, iout);
    case Bug::tma_without_wait: return simt::launch(tma_without_wait, one, warp, 1024 + 256, box_map(in, false), iout);
    case Bug::tma_misaligned: return simt::launch(tma_misaligned, one, warp, 1024 + 256, box_map(in, true), iout);
    case Bug::named_barrier_three_warps: return simt::launch(named_barrier_three_warps, one, dim3(96), 0, iout);
    case Bug::mbarrier_extra_expect_tx: return simt::launch(mbarrier_extra_expect_tx, one, warp, 16, iout);
    case Bug::setmaxnreg_too_many: return simt::launch(setmaxnreg_too_many, one, dim3(384), 0, iout);
    case Bug::setmaxnreg_lowering_inc: return simt::launch(setmaxnreg_lowering_inc, one, dim3(128), 0, iout);
    case Bug::wgmma_read_before_wait: return simt::launch(wgmma_read_before_wait, one, dim3(128), 4096, fout);
    case Bug::wgmma_without_fence: return simt::launch(wgmma_without_fence, one, dim3(128), 4096, fout);
    case Bug::wgmma_operand_overwritten: return simt::launch(wgmma_operand_overwritten, one, dim3(128), 4096, fout);
    case Bug::wgmma_misaligned_swizzle: return simt::launch(wgmma_misaligned_swizzle, one, dim3(128), 4096, fout);
    case Bug::wgmma_returns_in_flight: return simt::launch(wgmma_returns_in_flight, one, dim3(128), 4096, fout);
    case Bug::wgmma_warps_disagree: return simt::launch(wgmma_warps_disagree, one, dim3(128), 4096, fout);
    case Bug::wgmma_partial_warpgroup: return simt::launch(wgmma_read_before_wait, one, dim3(96), 4096, fout);
    case Bug::wgmma_read_newer_group: return simt::launch(wgmma_read_newer_group, one, dim3(128), 4096, fout);
    case Bug::wgmma_out_of_scope: return simt::launch(wgmma_out_of_scope, one, dim3(128), 4096, fout);
    case Bug::named_barrier_divergent: return simt::launch(named_barrier_divergent, one, dim3(64), 0, iout);
    case Bug::mma_loop_exit: return simt::launch(mma_loop_exit, one, warp, 0, fout);
    case Bug::mma_loop_iterations: return simt::launch(mma_loop_iterations, one, warp, 0, fout);
  }
  return cudaErrorInvalidValue;
}

}  // namespace simt_tests
