// test_kernels.h: launchers of the emulator's test kernels. The kernels compile with nvcc too, so
// that on a GPU the same checks compare the emulator's semantics with the hardware's.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace simt_tests {

// ---- sync_kernels.cu -------------------------------------------------------------------------------
// out[i] = the linear id's of threadIdx, blockIdx, blockDim, gridDim, packed 8 values per thread.
cudaError_t builtin_ids(unsigned* out, dim3 grid, dim3 block);
// Each block reverses its slice of `in` through static shared memory (needs its barrier).
cudaError_t block_reverse(const int* in, int* out, int n, int threads);
// The same through dynamic shared memory.
cudaError_t block_reverse_dynamic(const int* in, int* out, int n, int threads);
// out[3*b + {0,1,2}] = __syncthreads_count/and/or of pred[thread] over block b.
cudaError_t barrier_reductions(const int* pred, int* out, int blocks, int threads);

enum class ShflMode { idx, up, down, bfly };
// One warp: out[lane] = shuffle(mode, in[lane], arg, width) over the full warp.
cudaError_t shuffle_full(ShflMode mode, const int* in, int* out, int arg, int width);
// One warp split in two halves with masks 0x0000ffff and 0xffff0000 shuffling at the same time:
// out[lane] = __shfl_xor_sync(half_mask, in[lane], arg, width).
cudaError_t shuffle_halves(const int* in, int* out, int arg, int width);
// One warp of doubles (64-bit shuffles): out[lane] = __shfl_down_sync(full, in[lane], delta).
cudaError_t shuffle_double(const double* in, double* out, int delta);
// out[3*lane + {0,1,2}] = ballot/all/any of pred[lane] for the lanes of `mask`; lanes outside
// the mask do not vote and write -1.
cudaError_t votes(const int* pred, int* out, unsigned mask);
// Lanes of `mask` exchange values through shared memory with __syncwarp(mask) in between.
cudaError_t syncwarp_exchange(const int* in, int* out, unsigned mask);

// Per block, warp 0 hands `rounds` values to warp 1 with named barriers (bar.arrive / bar.sync,
// 64 threads) while warp 2 has returned; out[(block * rounds + r) * 32 + lane] = 1000 * block +
// 100 * r + lane.
cudaError_t named_barrier_pingpong(int* out, int blocks, int rounds);

// Atomics from many blocks: counters[0] += 1 (int), counters[1] = max, counters[2] = min of the
// global thread ids, fsum += 0.5f per thread (exact), cas-based increment of counters[3].
cudaError_t atomics(int* counters, float* fsum, int blocks, int threads);
// Block sum (shuffles + shared memory) then one atomicAdd per block.
cudaError_t reduce_sum(const int* in, long long* total, int n, int threads);

// ---- tensor_core_kernels.cu ----------------------------------------------------------------------------
// elements: uint16_t bit patterns of __half (bf16 = false) or __nv_bfloat16 (bf16 = true).
// One warp; fragments gathered from global memory with simt::frag: D (16x8) = A (16x16) B (16x8) + C.
cudaError_t mma_from_formulas(bool bf16, const uint16_t* a, const uint16_t* b_kn, const float* c, float* d);
// One warp loads `num` 8x8 b16 matrices stored one after the other (row-major, 8 halves per row)
// with ldmatrix_x{num}[_trans]; out[lane * num + j] = register j of `lane`.
cudaError_t ldmatrix_dump(const uint16_t* mats, uint32_t* out, int num, bool trans);
// One warp: D (16x8) = A (16x16, row-major) B, with A through ldmatrix_x4 and B either stored
// [n][k] and loaded with ldmatrix_x2, or stored [k][n] and loaded with ldmatrix_x2_trans.
cudaError_t mma_ldmatrix(bool bf16, const uint16_t* a, const uint16_t* b, bool b_is_kn, float* d);
// C (M x N, fp32) = A (M x K) B^T with B stored [N][K]; 64x64 block tiles, 32-deep k steps in
// two cp.async stages, ldmatrix.x4 operands. M, N multiples of 64, K a multiple of 32.
cudaError_t gemm_cp_async(bool bf16, const uint16_t* a, const uint16_t* bt, float* c, int m, int n, int k);
// One block of 32 threads copies 32 rows of 16 bytes with cp.async: row r copies
// src_bytes[r] bytes (cg, zero-fill) or 16 bytes with .ca when src_bytes[r] < 0.
cudaError_t cp_async_rows(const uint8_t* src, const int* src_bytes, uint8_t* dst);

// ---- mbarrier_kernels.cu -------------------------------------------------------------------------------
// Per block, a producer warp hands `rounds` tiles of 32 ints to a consumer warp through two slots
// guarded by full and empty mbarriers (transaction bytes included: sm_90 on a GPU);
// out[(block * rounds + r) * 32 + lane] = 1000 * block + 100 * r + lane.
cudaError_t mbarrier_ring(int* out, int blocks, int rounds);

// ---- tma_kernels.cu ------------------------------------------------------------------------------------
// One block: thread 0 loads the box at `coords` of a bf16 tensor (`rank` 2 or 3; dims, strides in
// bytes and box as simt::make_tensor_map takes them; swizzle 0, 32, 64 or 128 bytes) with TMA;
// after the mbarrier wait, out holds shared memory as the box lies there, 16-bit word by word.
cudaError_t tma_box(const uint16_t* tensor, int rank, const uint64_t* dims, const uint64_t* strides,
                    const uint32_t* box, int swizzle_bytes, const int* coords, uint16_t* out);

// ---- warpgroup_kernels.cu ------------------------------------------------------------------------------
// 384 threads per block: warpgroup 0 makes setmaxnreg.dec 24, warpgroups 1 and 2 setmaxnreg.inc 240;
// out[block * 384 + t] = 1000 * (t / 128) + t.
cudaError_t register_split(int* out, int blocks);

// ---- wgmma_kernels.cu ----------------------------------------------------------------------------------
// Where A and B lie in the shared-memory image, and their descriptors' fields; k-step s (of 16)
// starts at a_at + s * a_step (and b_at + s * b_step). Swizzle as the descriptor encodes it.
struct WgmmaOperands {
  unsigned a_at, a_step, a_lbo, a_sbo, a_swizzle;
  unsigned b_at, b_step, b_lbo, b_sbo, b_swizzle;
  int ksteps;
};
// One warpgroup: D (64 x n, fp32, row-major) = A B^T over t.ksteps (at most 4) k-steps of 16, A and B from the
// image of shared memory (`bytes`, a multiple of 16) with descriptors t; n 64 or 128; trans_a /
// trans_b: M- / N-major (the combinations test_wgmma.cpp uses; others: cudaErrorInvalidValue). With
// a_regs, A comes from registers instead: a_regs[((s * 4 + warp) * 32 + lane) * 4 + i] is register i
// of the lane at k-step s.
cudaError_t wgmma_product(bool bf16, const uint8_t* image, unsigned bytes, const WgmmaOperands& t, int n, bool trans_a,
                          bool trans_b, const uint32_t* a_regs, float* d);
// Two fp16 products of A (registers, one k-step, as above) by B1 and B2 (64 x 16 each, K-major, no
// swizzle, lbo 128, sbo 256, at 0 and 4096 of the 8192-byte image), in two commit groups; D1 is read
// after wgmma_wait<1>, D2 after wgmma_wait<0>.
cudaError_t wgmma_groups(const uint8_t* image, const uint32_t* a_regs, float* d1, float* d2);

// ---- math_kernels.cu -----------------------------------------------------------------------------------
// y[i] = simt::ex2_approx_ftz(x[i]).
cudaError_t ex2_approx_ftz(const float* x, float* y, int n);

}  // namespace simt_tests
