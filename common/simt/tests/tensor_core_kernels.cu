// tensor_core_kernels.cu: mma.sync, ldmatrix and cp.async through simt/ptx.cuh, used the way
// attention kernels use them.
#include "simt/ptx.cuh"
#include "simt/simt.h"
#include "test_kernels.h"

namespace simt_tests {
namespace {

__device__ __forceinline__ uint32_t pack(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
}

template <class T>
__global__ void mma_from_formulas_kernel(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  namespace frag = simt::frag;
  const int lane = static_cast<int>(threadIdx.x);
  uint16_t ah[8], bh[4];
  float cf[4], df[4];
  for (int i = 0; i < 8; ++i) ah[i] = a[frag::a_row(lane, i) * 16 + frag::a_col(lane, i)];
  for (int i = 0; i < 4; ++i) bh[i] = b[frag::b_k(lane, i) * 8 + frag::b_n(lane, i)];
  for (int i = 0; i < 4; ++i) cf[i] = c[frag::c_row(lane, i) * 8 + frag::c_col(lane, i)];
  const uint32_t ar[4] = {pack(ah[0], ah[1]), pack(ah[2], ah[3]), pack(ah[4], ah[5]), pack(ah[6], ah[7])};
  const uint32_t br[2] = {pack(bh[0], bh[1]), pack(bh[2], bh[3])};
  simt::mma_m16n8k16<T>(df, ar, br, cf);
  for (int i = 0; i < 4; ++i) d[frag::c_row(lane, i) * 8 + frag::c_col(lane, i)] = df[i];
}

__global__ void ldmatrix_dump_kernel(const uint16_t* mats, uint32_t* out, int num, bool trans) {
  __shared__ __align__(16) uint16_t sm[4 * 64];
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < num * 64; i += 32) sm[i] = mats[i];
  __syncwarp();
  const int j = lane / 8 < num ? lane / 8 : 0;  // lanes past the last matrix give unused addresses
  const void* row = &sm[j * 64 + (lane % 8) * 8];
  uint32_t r[4] = {};
  if (num == 1) {
    uint32_t x[1];
    trans ? simt::ldmatrix_x1_trans(x, row) : simt::ldmatrix_x1(x, row);
    r[0] = x[0];
  } else if (num == 2) {
    uint32_t x[2];
    trans ? simt::ldmatrix_x2_trans(x, row) : simt::ldmatrix_x2(x, row);
    r[0] = x[0], r[1] = x[1];
  } else {
    trans ? simt::ldmatrix_x4_trans(r, row) : simt::ldmatrix_x4(r, row);
  }
  for (int k = 0; k < num; ++k) out[lane * num + k] = r[k];
}

template <class T>
__global__ void mma_ldmatrix_kernel(const uint16_t* a, const uint16_t* b, bool b_is_kn, float* d) {
  __shared__ __align__(16) uint16_t As[16 * 16];
  __shared__ __align__(16) uint16_t Bs[16 * 8];
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < 256; i += 32) As[i] = a[i];
  for (int i = lane; i < 128; i += 32) Bs[i] = b[i];
  __syncwarp();
  uint32_t ar[4], br[2];
  // Lanes 0-15 give rows 0-15 of columns 0-7, lanes 16-31 the same rows of columns 8-15.
  simt::ldmatrix_x4(ar, &As[(lane % 16) * 16 + (lane / 16) * 8]);
  if (b_is_kn)
    simt::ldmatrix_x2_trans(br, &Bs[(lane % 16) * 8]);  // rows k = 0..15 of B[k][n]
  else
    simt::ldmatrix_x2(br, &Bs[(lane % 8) * 16 + ((lane / 8) % 2) * 8]);  // B[n][k]: k 0-7, then 8-15
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  simt::mma_m16n8k16<T>(acc, ar, br, acc);
  for (int i = 0; i < 4; ++i) d[simt::frag::c_row(lane, i) * 8 + simt::frag::c_col(lane, i)] = acc[i];
}

// 64x64 block tile, 4 warps in 2x2, each warp 32x32 = 2 x 4 mma tiles; two cp.async stages.
constexpr int BM = 64, BN = 64, BK = 32, LD = BK + 8;  // +8 halves: rows stay 16-byte aligned

template <class T>
__global__ void gemm_kernel(const uint16_t* A, const uint16_t* Bt, float* C, int M, int N, int K) {
  uint16_t* As = simt::dynamic_smem<uint16_t>();  // [2][BM][LD]
  uint16_t* Bs = As + 2 * BM * LD;                // [2][BN][LD]
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;

  auto load_stage = [&](int kt, int stage) {
    for (int c = tid; c < BM * BK / 8; c += 128) {
      const int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
      simt::cp_async_cg_16(&As[(stage * BM + r) * LD + col], A + static_cast<size_t>(m0 + r) * K + kt * BK + col);
      simt::cp_async_cg_16(&Bs[(stage * BN + r) * LD + col], Bt + static_cast<size_t>(n0 + r) * K + kt * BK + col);
    }
    simt::cp_async_commit();
  };

  float acc[2][4][4] = {};
  const int steps = K / BK;
  load_stage(0, 0);
  for (int kt = 0; kt < steps; ++kt) {
    if (kt + 1 < steps) {
      load_stage(kt + 1, (kt + 1) % 2);  // the next stage flies while this one is used
      simt::cp_async_wait<1>();
    } else {
      simt::cp_async_wait<0>();
    }
    __syncthreads();  // every thread's part of stage kt has landed
    const int st = kt % 2;
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[2][4], b[4][2];
      for (int i = 0; i < 2; ++i)
        simt::ldmatrix_x4(a[i], &As[(st * BM + wm * 32 + i * 16 + lane % 16) * LD + kk + (lane / 16) * 8]);
      for (int j = 0; j < 4; ++j)
        simt::ldmatrix_x2(b[j], &Bs[(st * BN + wn * 32 + j * 8 + lane % 8) * LD + kk + ((lane / 8) % 2) * 8]);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) simt::mma_m16n8k16<T>(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // stage kt is refilled by the next iteration's load
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + wm * 32 + i * 16 + simt::frag::c_row(lane, e);
        const int col = n0 + wn * 32 + j * 8 + simt::frag::c_col(lane, e);
        C[static_cast<size_t>(row) * N + col] = acc[i][j][e];
      }
  (void)M;
}

__global__ void cp_async_rows_kernel(const uint8_t* src, const int* src_bytes, uint8_t* dst) {
  uint8_t* sm = simt::dynamic_smem<uint8_t>();
  const int r = static_cast<int>(threadIdx.x);
  if (src_bytes[r] < 0)
    simt::cp_async_ca_16(sm + 16 * r, src + 16 * r);
  else
    simt::cp_async_cg_16_zfill(sm + 16 * r, src + 16 * r, src_bytes[r]);
  simt::cp_async_commit();
  simt::cp_async_wait<0>();
  __syncthreads();
  const int other = 31 - r;  // read a row another thread copied
  for (int i = 0; i < 16; ++i) dst[16 * other + i] = sm[16 * other + i];
}

}  // namespace

cudaError_t mma_from_formulas(bool bf16, const uint16_t* a, const uint16_t* b_kn, const float* c, float* d) {
  return bf16 ? simt::launch(mma_from_formulas_kernel<__nv_bfloat16>, dim3(1), dim3(32), 0, a, b_kn, c, d)
              : simt::launch(mma_from_formulas_kernel<__half>, dim3(1), dim3(32), 0, a, b_kn, c, d);
}
cudaError_t ldmatrix_dump(const uint16_t* mats, uint32_t* out, int num, bool trans) {
  return simt::launch(ldmatrix_dump_kernel, dim3(1), dim3(32), 0, mats, out, num, trans);
}
cudaError_t mma_ldmatrix(bool bf16, const uint16_t* a, const uint16_t* b, bool b_is_kn, float* d) {
  return bf16 ? simt::launch(mma_ldmatrix_kernel<__nv_bfloat16>, dim3(1), dim3(32), 0, a, b, b_is_kn, d)
              : simt::launch(mma_ldmatrix_kernel<__half>, dim3(1), dim3(32), 0, a, b, b_is_kn, d);
}
cudaError_t gemm_cp_async(bool bf16, const uint16_t* a, const uint16_t* bt, float* c, int m, int n, int k) {
  const dim3 grid(n / BN, m / BM), block(128);
  const size_t smem = 2 * (BM + BN) * LD * sizeof(uint16_t);
  return bf16 ? simt::launch(gemm_kernel<__nv_bfloat16>, grid, block, smem, a, bt, c, m, n, k)
              : simt::launch(gemm_kernel<__half>, grid, block, smem, a, bt, c, m, n, k);
}
cudaError_t cp_async_rows(const uint8_t* src, const int* src_bytes, uint8_t* dst) {
  return simt::launch(cp_async_rows_kernel, dim3(1), dim3(32), 32 * 16, src, src_bytes, dst);
}

}  // namespace simt_tests
