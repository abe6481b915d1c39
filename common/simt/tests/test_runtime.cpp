// test_runtime.cpp: the emulated CUDA runtime API (cpu backend only).
#include <cstring>
#include <string>

#include "support.h"

static void test_runtime_marker() {}  // any function address serves as a kernel handle

TEST_CASE("the emulated device describes itself and its memory", "[simt][runtime]") {
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  REQUIRE(count == 1);
  cudaDeviceProp p;
  REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
  REQUIRE(std::string(p.name).find("CPU emulation") != std::string::npos);
  REQUIRE(p.warpSize == 32);
  REQUIRE(p.sharedMemPerBlockOptin == 227 * 1024);
  REQUIRE(p.multiProcessorCount >= 1);
  size_t free_bytes = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  REQUIRE(total > 0);
  REQUIRE(free_bytes <= total);
  int optin = 0;
  REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
  REQUIRE(optin == 227 * 1024);
  REQUIRE(cudaSetDevice(1) == cudaErrorInvalidDevice);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidDevice);
}

TEST_CASE("memory, copies, events and error strings", "[simt][runtime]") {
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0x5a, 64) == cudaSuccess);
  unsigned char h[64];
  REQUIRE(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (unsigned char c : h) REQUIRE(c == 0x5a);
  REQUIRE(cudaFree(d) == cudaSuccess);

  cudaEvent_t a, b;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  float ms = -1;
  REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaErrorInvalidResourceHandle);  // not recorded yet
  REQUIRE(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  REQUIRE(cudaEventRecord(a) == cudaSuccess);
  REQUIRE(cudaEventRecord(b) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(b) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  REQUIRE(ms >= 0);
  REQUIRE(cudaEventDestroy(a) == cudaSuccess);
  REQUIRE(cudaEventDestroy(b) == cudaSuccess);

  REQUIRE(std::strcmp(cudaGetErrorName(cudaErrorLaunchFailure), "cudaErrorLaunchFailure") == 0);
  REQUIRE(std::strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
  REQUIRE(cudaFuncSetAttribute(reinterpret_cast<const void*>(&test_runtime_marker), cudaFuncAttributeMaxDynamicSharedMemorySize,
                               300 * 1024) == cudaErrorInvalidValue);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidValue);
}
