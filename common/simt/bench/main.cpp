// simt_bench: what the emulator costs. Prints its figures beside the bounds it is designed for
// (a benchmark, not a timed test: a loaded machine reads slower; only a wrong result fails it).
//   ns per thread per __syncthreads (bound 50), per __shfl_xor_sync (bound 150), one worker;
//   a 64x64-tile FlashAttention-style kernel at B=1, H=2, N=256, d=64 (bound 100 ms).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "bench_kernels.h"
#include "simt/cpu/launch.h"

namespace {
template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (f() != cudaSuccess) {
      std::printf("launch failed: %s\n", simt::last_launch_error().c_str());
      std::exit(1);
    }
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
bool any_over = false;
void row(const char* what, double value, const char* unit, double bound) {
  any_over |= value > bound;
  std::printf("%-52s %9.1f %-3s (bound %g: %s)\n", what, value, unit, bound, value <= bound ? "within" : "over");
}
}  // namespace

int main(int argc, char** argv) {
  // It takes no options (the emulator's settings come from the environment: notes/emulator.md).
  if (argc > 1) {
    const bool help = !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h");
    std::fprintf(help ? stdout : stderr,
                 "%ssimt_bench takes no arguments: it prints what the emulator costs beside the bounds it is designed "
                 "for; SIMT_WORKERS and the other SIMT_* variables of notes/emulator.md apply\n",
                 help ? "" : "error: ");
    return help && argc == 2 ? 0 : 2;
  }
  const simt::Schedule saved = simt::schedule();
  simt::Schedule one = saved;
  one.workers = 1;
  simt::set_schedule(one);
  int* out = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&out), 1024 * sizeof(int));
  const int threads = 1024, iters = 1000;
  const double bar = median_ms(5, [&] { return bench_barriers(threads, iters, out); });
  const double shf = median_ms(5, [&] { return bench_shuffles(threads, iters, out); });
  std::printf("simt emulator benchmark (%u hardware threads)\n", std::thread::hardware_concurrency());
  row("__syncthreads, per thread (1024 threads, 1 worker)", bar * 1e6 / (threads * iters), "ns", 50);
  row("__shfl_xor_sync, per thread (1024 threads, 1 worker)", shf * 1e6 / (threads * iters), "ns", 150);
  cudaFree(out);
  simt::set_schedule(saved);

  const int heads = 2, n = 256, d = 64;
  const size_t elems = static_cast<size_t>(heads) * n * d;
  std::vector<float> q(elems), k(elems), v(elems), o(elems);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (auto* x : {&q, &k, &v})
    for (float& e : *x) e = nd(rng);
  float *dq, *dk, *dv, *dout;
  for (float** p : {&dq, &dk, &dv, &dout}) cudaMalloc(reinterpret_cast<void**>(p), elems * sizeof(float));
  cudaMemcpy(dq, q.data(), elems * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, k.data(), elems * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, v.data(), elems * 4, cudaMemcpyHostToDevice);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const double fl = median_ms(5, [&] { return bench_flash(dq, dk, dv, dout, heads, n, d, scale); });
  cudaMemcpy(o.data(), dout, elems * 4, cudaMemcpyDeviceToHost);
  double err = 0;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < n; ++i) {
      std::vector<double> s(n);
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < n; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += static_cast<double>(q[(h * n + i) * d + c]) * k[(h * n + j) * d + c];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j < n; ++j) sum += s[j] = std::exp(s[j] - mx);
      for (int c = 0; c < d; ++c) {
        double acc = 0;
        for (int j = 0; j < n; ++j) acc += s[j] * v[(h * n + j) * d + c];
        err = std::max(err, std::fabs(acc / sum - o[(h * n + i) * d + c]));
      }
    }
  char what[96];
  std::snprintf(what, sizeof what, "flash-style kernel, B=1 H=2 N=256 d=64 (%d worker(s))", simt::schedule().workers > 0 ? simt::schedule().workers : static_cast<int>(std::thread::hardware_concurrency()));
  row(what, fl, "ms", 100);
  std::printf("flash-style kernel max abs error against a double-precision reference: %.2e\n", err);
  if (any_over)
    std::printf("(a bound is what the emulator is designed to stay within on an idle machine: a figure over one on a "
                "busy machine is no failure; only a wrong result fails this benchmark)\n");
  for (float* p : {dq, dk, dv, dout}) cudaFree(p);
  return err < 1e-4 ? 0 : 1;
}
