// bench_kernels.cu: what the emulator's speed is measured on.
#include "bench_kernels.h"
#include "simt/simt.h"

namespace {

__global__ void barriers(int iters, int* out) {
  int v = static_cast<int>(threadIdx.x);
  for (int i = 0; i < iters; ++i) {
    __syncthreads();
    v += i;
  }
  out[threadIdx.x] = v;
}

__global__ void shuffles(int iters, int* out) {
  int v = static_cast<int>(threadIdx.x);
  for (int i = 0; i < iters; ++i) v += __shfl_xor_sync(0xffffffffu, v, (i & 15) + 1);
  out[threadIdx.x] = v;
}

// A FlashAttention-2-style forward pass in fp32: one block per 64 query rows of one head, 4 warps
// of 16 rows each; 64-row K and V tiles in shared memory; lane l owns keys l and l + 32 of a tile
// and output columns l and l + 32; the online softmax rescales the output as the maximum grows.
constexpr int kBr = 64, kBc = 64, kD = 64, kWarps = 4, kRows = kBr / kWarps;

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void flash_tile(const float* Q, const float* K, const float* V, float* O, int n, float scale) {
  float* sm = simt::dynamic_smem<float>();
  float* Qs = sm;                      // [kBr][kD]
  float* Ks = Qs + kBr * kD;           // [kBc][kD + 1]: the pad keeps lanes on distinct banks
  float* Vs = Ks + kBc * (kD + 1);     // [kBc][kD]
  float* Ps = Vs + kBc * kD;           // [kWarps][kBc]
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int q0 = static_cast<int>(blockIdx.x) * kBr;
  const size_t head = static_cast<size_t>(blockIdx.y) * n * kD;
  for (int i = tid; i < kBr * kD; i += 32 * kWarps) {
    const int r = i / kD;
    Qs[i] = q0 + r < n ? Q[head + static_cast<size_t>(q0) * kD + i] : 0.f;
  }
  float m[kRows], l[kRows], o[kRows][2];
  for (int r = 0; r < kRows; ++r) m[r] = -INFINITY, l[r] = 0.f, o[r][0] = o[r][1] = 0.f;
  for (int k0 = 0; k0 < n; k0 += kBc) {
    __syncthreads();  // the previous tiles are consumed (and Q is in place)
    for (int i = tid; i < kBc * kD; i += 32 * kWarps) {
      const int r = i / kD, c = i % kD;
      const bool in = k0 + r < n;
      Ks[r * (kD + 1) + c] = in ? K[head + static_cast<size_t>(k0 + r) * kD + c] : 0.f;
      Vs[i] = in ? V[head + static_cast<size_t>(k0 + r) * kD + c] : 0.f;
    }
    __syncthreads();
    for (int rr = 0; rr < kRows; ++rr) {
      const float* q = Qs + (warp * kRows + rr) * kD;
      float s0 = 0.f, s1 = 0.f;
      for (int k = 0; k < kD; ++k) {
        s0 = fmaf(q[k], Ks[lane * (kD + 1) + k], s0);
        s1 = fmaf(q[k], Ks[(lane + 32) * (kD + 1) + k], s1);
      }
      s0 = k0 + lane < n ? s0 * scale : -INFINITY;
      s1 = k0 + lane + 32 < n ? s1 * scale : -INFINITY;
      const float m_new = fmaxf(m[rr], warp_max(fmaxf(s0, s1)));
      const float p0 = __expf(s0 - m_new), p1 = __expf(s1 - m_new), alpha = __expf(m[rr] - m_new);
      l[rr] = l[rr] * alpha + warp_sum(p0 + p1);
      m[rr] = m_new;
      Ps[warp * kBc + lane] = p0;
      Ps[warp * kBc + lane + 32] = p1;
      __syncwarp();
      float a0 = 0.f, a1 = 0.f;
      for (int j = 0; j < kBc; ++j) {
        a0 = fmaf(Ps[warp * kBc + j], Vs[j * kD + lane], a0);
        a1 = fmaf(Ps[warp * kBc + j], Vs[j * kD + lane + 32], a1);
      }
      o[rr][0] = o[rr][0] * alpha + a0;
      o[rr][1] = o[rr][1] * alpha + a1;
      __syncwarp();  // the P row is overwritten by the next row
    }
  }
  for (int rr = 0; rr < kRows; ++rr) {
    const int r = q0 + warp * kRows + rr;
    if (r < n) {
      O[head + static_cast<size_t>(r) * kD + lane] = o[rr][0] / l[rr];
      O[head + static_cast<size_t>(r) * kD + lane + 32] = o[rr][1] / l[rr];
    }
  }
}

}  // namespace

cudaError_t bench_barriers(int threads, int iters, int* out) {
  return simt::launch(barriers, dim3(1), dim3(threads), 0, iters, out);
}
cudaError_t bench_shuffles(int threads, int iters, int* out) {
  return simt::launch(shuffles, dim3(1), dim3(threads), 0, iters, out);
}
cudaError_t bench_flash(const float* q, const float* k, const float* v, float* o, int heads, int n, int d, float scale) {
  if (d != kD) return cudaErrorInvalidValue;
  const size_t smem = (kBr * kD + kBc * (kD + 1) + kBc * kD + kWarps * kBc) * sizeof(float);
  return simt::launch(flash_tile, dim3((n + kBr - 1) / kBr, heads), dim3(32 * kWarps), smem, q, k, v, o, n, scale);
}
