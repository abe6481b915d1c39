# Backend.cmake: which compiler the kernels go through.
#   gpu: nvcc, for sm_80 and sm_90 unless CMAKE_CUDA_ARCHITECTURES says otherwise
#        (-DCMAKE_CUDA_ARCHITECTURES=native builds for the GPUs of this machine only; 75 for a T4,
#        which runs chapters 01 to 04). Chapter 09's sm_90a files are built for sm_90a whatever the list.
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
  # Each number builds SASS and PTX: sm_80's runs on sm_86 and sm_89 GPUs too, and compute_90's PTX
  # is compiled at load time by newer GPUs (sm_100, sm_120).
  set(default_archs 80 90)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${default_archs})
  elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "native")
    # CMake's own `native` fails to configure without a GPU and embeds no PTX: instead the compute
    # capabilities nvidia-smi lists, each as SASS and PTX, or the default list when it finds none.
    execute_process(COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
                    RESULT_VARIABLE smi_rc OUTPUT_VARIABLE caps ERROR_QUIET)
    string(REPLACE "." "" caps "${caps}")
    string(REGEX MATCHALL "[0-9]+" caps "${caps}")
    if(smi_rc EQUAL 0 AND caps)
      list(REMOVE_DUPLICATES caps)
      message(STATUS "flashsteps: native: building for ${caps} (the GPUs nvidia-smi lists)")
    else()
      set(caps ${default_archs})
      message(STATUS "flashsteps: native: nvidia-smi finds no GPU; building for the default ${caps}")
    endif()
    set(CMAKE_CUDA_ARCHITECTURES ${caps} CACHE STRING "CUDA architectures (native resolved)" FORCE)
  endif()
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(arch MATCHES "^([0-9]+)" AND CMAKE_MATCH_1 LESS 75)
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES has ${arch}: the book's kernels need sm_75 or later "
                          "(chapters 01 to 04 run on sm_75, a T4; every chapter from sm_80, an A100)")
    endif()
  endforeach()
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
