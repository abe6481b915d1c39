# Backend.cmake: which compiler the kernels go through.
#   gpu: nvcc, for sm_80 and sm_90 unless CMAKE_CUDA_ARCHITECTURES says otherwise
#        (-DCMAKE_CUDA_ARCHITECTURES=native builds for the GPU of this machine only).
#   cpu: every kernel source is compiled as C++ against the simt emulator (common/simt).
# Default: gpu when nvidia-smi finds a GPU, else cpu.
set(FLASHSTEPS_BACKEND "auto" CACHE STRING "Kernel backend: gpu, cpu or auto")
set_property(CACHE FLASHSTEPS_BACKEND PROPERTY STRINGS auto gpu cpu)

if(FLASHSTEPS_BACKEND STREQUAL "auto")
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE smi_rc OUTPUT_VARIABLE smi_out ERROR_QUIET)
  if(smi_rc EQUAL 0 AND smi_out MATCHES "GPU [0-9]")
    set(resolved gpu)
  else()
    set(resolved cpu)
  endif()
  set(FLASHSTEPS_BACKEND ${resolved} CACHE STRING "Kernel backend: gpu, cpu or auto" FORCE)
  message(STATUS "flashsteps: backend ${resolved} (chosen automatically; -DFLASHSTEPS_BACKEND=gpu|cpu to choose)")
elseif(NOT FLASHSTEPS_BACKEND MATCHES "^(gpu|cpu)$")
  message(FATAL_ERROR "FLASHSTEPS_BACKEND=${FLASHSTEPS_BACKEND}: use gpu, cpu or auto")
else()
  message(STATUS "flashsteps: backend ${FLASHSTEPS_BACKEND}")
endif()

if(FLASHSTEPS_BACKEND STREQUAL "gpu")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "the gpu backend needs nvcc (the CUDA toolkit); configure with -DFLASHSTEPS_BACKEND=cpu to build without it")
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc's C++20 flag; nvcc 12+ has it.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()
