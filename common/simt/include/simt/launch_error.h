// simt/launch_error.h: what the last launch that failed or was refused said (the shared memory it
// asked for and the GPU's limit, the emulator's diagnostic), for host code of either backend to add
// to a CUDA error's name.
#pragma once
#include <string>

namespace simt {

// nvcc compiles a kernel file for the GPU whatever the build says (a tool compiling one file alone
// may not define FLASHSTEPS_GPU); g++ compiles the gpu backend's host files with FLASHSTEPS_GPU=1.
#if FLASHSTEPS_GPU || defined(__CUDACC__)
namespace detail {
inline std::string& launch_message() {  // simt::launch (simt/gpu.h) sets it
  static std::string m;
  return m;
}
}  // namespace detail
// "" when the last simt::launch was not refused.
inline std::string last_launch_error() { return detail::launch_message(); }
#else
// The message of the last failed launch on this process ("" if none): the emulator's (grid.cpp).
std::string last_launch_error();
#endif

}  // namespace simt
