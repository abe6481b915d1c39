// runtime_state.h: what the launch path and the emulated runtime API share.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "simt/cpu/launch.h"

namespace simt::detail {

// Shared memory a block may use without opting in: static and dynamic together.
constexpr int kSmemWithoutOptIn = 48 * 1024;

// Sets the error that cudaGetLastError returns next; returns e.
cudaError_t record_error(cudaError_t e);
// A launch (or its opt-in) refused before any block ran: records e, and m as the launch's message,
// printed unless the schedule is quiet.
cudaError_t refuse_launch(cudaError_t e, const std::string& m);
// The dynamic shared memory a kernel may use: what cudaFuncSetAttribute opted it in to, or what
// 48 KB leave beside its static shared memory.
size_t max_dynamic_smem(const void* kernel);
// Shows a launch to the observer of simt::set_launch_observer, if any.
void observe(const LaunchRecord& r);
// "the emulated Tesla T4 (sm_75)", for messages.
std::string emulated_gpu_name();

}  // namespace simt::detail
