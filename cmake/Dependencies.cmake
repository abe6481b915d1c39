# Dependencies.cmake: everything comes from the distribution's packages. A missing one stops
# configure and names the Debian package that provides it.
macro(flashsteps_require package debian)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "${package} not found: install the Debian package ${debian} "
                        "(apt-get install ${debian}), or add its prefix to CMAKE_PREFIX_PATH")
  endif()
endmacro()

find_package(Threads REQUIRED)
# Both backends need the toolkit's headers (vector types, fp16, bf16); the gpu backend its libraries.
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "the CUDA toolkit was not found. Both backends need it, the cpu one (no GPU) for its headers "
                      "(vector types, fp16, bf16). Install it: on Debian, enable the non-free component and "
                      "apt-get install nvidia-cuda-toolkit; on Ubuntu, apt-get install nvidia-cuda-toolkit; or "
                      "NVIDIA's repository (https://developer.nvidia.com/cuda-downloads, package cuda-toolkit). "
                      "If it is installed elsewhere, set CUDAToolkit_ROOT (or put its nvcc on PATH).")
endif()
flashsteps_require(Eigen3 libeigen3-dev 3.4 NO_MODULE)
flashsteps_require(Catch2 catch2 2.13)
flashsteps_require(CLI11 libcli11-dev)
if(FLASHSTEPS_BACKEND STREQUAL "cpu")
  flashsteps_require(Boost libboost-context-dev 1.74 CONFIG COMPONENTS context)
endif()
# Python 3 (optional): the tools the build and the tests run (tools/, tests/*.py). Without it the
# counters build compiles no SASS of its own (the committed data serves) and those tests are skipped.
find_program(FLASHSTEPS_PYTHON NAMES python3)
