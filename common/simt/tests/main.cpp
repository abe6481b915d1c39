// main.cpp: the Catch2 runner of the emulator's tests and of the project's. On the gpu backend
// without a GPU it reports the whole binary as skipped (exit code 77, CTest's SKIP_RETURN_CODE),
// never passed.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdio>

int main(int argc, char** argv) {
#if FLASHSTEPS_GPU
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no CUDA GPU on this machine: the gpu backend's tests are skipped\n");
    return 77;
  }
#endif
  return Catch::Session().run(argc, argv);
}
