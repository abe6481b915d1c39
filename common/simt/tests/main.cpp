// main.cpp: the Catch2 runner of the emulator's tests and of the project's. On the gpu backend
// without a GPU it reports the whole binary as skipped (exit code 77, CTest's SKIP_RETURN_CODE),
// never passed; with a GPU the runtime cannot use (a driver too old), it fails, saying why.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdio>

#if FLASHSTEPS_GPU
#include "simt/gpu_presence.h"
#endif

int main(int argc, char** argv) {
#if FLASHSTEPS_GPU
  if (const simt::GpuPresence g = simt::gpu_presence(); !g.usable) {
    std::printf("%s: the gpu backend's tests %s\n", g.why.c_str(), g.absent ? "are skipped" : "cannot run");
    return g.absent ? 77 : 1;
  }
#endif
  return Catch::Session().run(argc, argv);
}
