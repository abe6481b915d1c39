// main.cpp: the SGEMM lab. Each kernel runs at the emulated sizes, is checked against a
// double-precision product, and is modelled at n = 4096 on the GPUs the lab was built for
// (labs/CMakeLists.txt: an A100 and an RTX 4090).
//   build-counters/bin/lab_sgemm [--gpu a100,rtx4090,h100] [--n 4096] [--emulated 32,64,96,128,160]
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels.h"
#include "gpus/gpus.h"
#include "lab/lab.h"
#include "model/published.h"

namespace {

// Runs one SGEMM at n x n x n on seeded inputs; true when every element of C is within fp32's
// rounding of the product (n steps of a sum, each off by half an ulp of its running total at most).
bool run(cudaError_t (*sgemm)(int, const float*, const float*, float*), long long size) {
  const int n = static_cast<int>(size);
  const size_t count = static_cast<size_t>(n) * n;
  std::vector<float> a(count), b(count), c(count);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  float *A = nullptr, *B = nullptr, *C = nullptr;
  const size_t bytes = count * sizeof(float);
  bool ok = cudaMalloc(&A, bytes) == cudaSuccess && cudaMalloc(&B, bytes) == cudaSuccess && cudaMalloc(&C, bytes) == cudaSuccess &&
            cudaMemcpy(A, a.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(B, b.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess;
  const cudaError_t launched = ok ? sgemm(n, A, B, C) : cudaErrorMemoryAllocation;
  ok = ok && launched == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess &&
       cudaMemcpy(c.data(), C, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(A), cudaFree(B), cudaFree(C);
  if (!ok) {
    std::fprintf(stderr, "lab sgemm: n = %d: %s\n", n, cudaGetErrorString(launched != cudaSuccess ? launched : cudaGetLastError()));
    return false;
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (int k = 0; k < n; ++k) {
        exact += static_cast<double>(a[i * n + k]) * b[k * n + j];
        magnitude += std::abs(static_cast<double>(a[i * n + k]) * b[k * n + j]);
      }
      const double got = c[i * n + j];
      if (!std::isfinite(got) || std::abs(got - exact) > n * 0.5 * 0x1p-23 * magnitude) return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lab lab(argc, argv, {.n = 4096, .emulated = {32, 64, 96, 128, 160}, .degree = 3,
                            .flop = [](long long n) { return 2.0 * n * n * n; },
                            .refuse_size = [](long long n) -> std::string {
                              if (n % 32) return "not a multiple of 32, the kernels' tile";
                              return n > 46340 ? "past what the kernels' int indices reach" : "";
                            },
                            // Emulated with the CPU reference: 1.3 s for 32 to 320 on 2 cores, and n^3;
                            // 512 takes seconds, 2048 minutes.
                            .max_emulated = 512});
  lab.profile("naive", [](long long n) { return run(sgemm::naive, n); });
  lab.profile("tiled", [](long long n) { return run(sgemm::tiled, n); });
  // Beside a measurement: siboehm's worklog measured these two kernels (common/model/published.h).
  for (const attn::PublishedLab& p : attn::kSiboehmSgemm) {
    const double us = lab.modelled_us(p.lab, p.gpu);
    if (us > 0 && lab.options().n == p.n)
      std::printf("%s on the %s at n = %lld: modelled %.1f GFLOP/s, published %.1f (siboehm's SGEMM worklog, measured "
                  "there): model / measured %.2f\n", p.lab, gpus::find_gpu(p.gpu)->name, p.n,
                  2.0 * p.n * p.n * p.n / us / 1e3, p.gflops, 2.0 * p.n * p.n * p.n / us / 1e3 / p.gflops);
  }
  return lab.finish();
}
