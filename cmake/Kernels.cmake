# Kernels.cmake: how a .cu file is built, and the warning flags of the project's own code.

# flashsteps_kernel_sources(<target> <file.cu>...): nvcc compiles them (gpu backend), or the C++
# compiler does, with the simt shim force-included (cpu backend).
function(flashsteps_kernel_sources target)
  target_sources(${target} PRIVATE ${ARGN})
  if(FLASHSTEPS_BACKEND STREQUAL "cpu")
    set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES
      LANGUAGE CXX
      # -fno-strict-aliasing: kernels reinterpret_cast buffers to float4 and half2, as CUDA allows.
      # The prefix map makes the emulator's messages name files relative to the repository;
      # #pragma unroll is nvcc's, the C++ compiler may ignore it.
      COMPILE_OPTIONS "-include;simt/simt.h;-fno-strict-aliasing;-fmacro-prefix-map=${PROJECT_SOURCE_DIR}/=;-Wno-unknown-pragmas;${FLASHSTEPS_COUNTER_FLAGS}")
  endif()
  target_link_libraries(${target} PRIVATE simt)
endfunction()

# flashsteps_hopper_kernel_sources(<target> <file.cu>...): kernels with sm_90a's instructions (wgmma,
# setmaxnreg). On the gpu backend nvcc compiles them for sm_90a alone, in an object library of their
# own (sm_90a code runs on sm_90 GPUs only; elsewhere their launches fail); on the cpu backend as
# flashsteps_kernel_sources, with SIMT_ARCH_SPECIFIC=90 (simt/cpu/launch.h).
function(flashsteps_hopper_kernel_sources target)
  if(FLASHSTEPS_BACKEND STREQUAL "gpu")
    add_library(${target}_sm90a OBJECT ${ARGN})
    # SASS only (-real): sm_90a's PTX compiles for sm_90 alone, which the SASS covers already
    # (tools/fatbin_ptx.py checks that these objects carry none).
    set_target_properties(${target}_sm90a PROPERTIES CUDA_ARCHITECTURES 90a-real)
    target_include_directories(${target}_sm90a PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
    target_link_libraries(${target}_sm90a PRIVATE simt)
    flashsteps_warnings(${target}_sm90a)
    flashsteps_ptxas_report(${target}_sm90a)  # tools/hopper_resources.py --ptxas-logs reads them
    target_link_libraries(${target} PRIVATE ${target}_sm90a)
  else()
    flashsteps_kernel_sources(${target} ${ARGN})
    # Their launches carry the target, and the emulator refuses them on a GPU other than sm_90.
    set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_DEFINITIONS SIMT_ARCH_SPECIFIC=90)
  endif()
endfunction()

# Warnings in our code (not in the toolkit's or the distribution's headers). They are errors with
# -DFLASHSTEPS_WERROR=ON, as tools/run_tests.sh (CI) builds; a user's compiler, version or build type
# must not stop their build over a warning, so not by default.
# Designated initializers leave fields to their defaults on purpose: GCC 12 would warn.
option(FLASHSTEPS_WERROR "warnings in the project's code are errors (CI)" OFF)
function(flashsteps_warnings target)
  if(FLASHSTEPS_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-missing-field-initializers>
      $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror,-Wno-missing-field-initializers>)
  else()
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-missing-field-initializers>
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-missing-field-initializers>)
  endif()
endfunction()

# flashsteps_ptxas_report(<target>): on the gpu backend, ptxas reports the registers, spills and
# stack frame of every kernel of the target into <object>.ptxas (cmake/ptxas_log.sh), where
# tools/kernel_resources.py --ptxas-logs reads them (the kernel_resources test).
function(flashsteps_ptxas_report target)
  if(FLASHSTEPS_BACKEND STREQUAL "gpu")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-v>)
    set_target_properties(${target} PROPERTIES CUDA_COMPILER_LAUNCHER ${PROJECT_SOURCE_DIR}/cmake/ptxas_log.sh)
  endif()
endfunction()

# -DFLASHSTEPS_D128_WARPS=8: chapter 05's steps g, h (and chapter 06) at d = 96, 128 with blocks of
# 8 warps, as the H200 ran them, instead of the book's 4 (05_flash_v2/flash_v2.h), for a GPU to
# compare the two.
set(FLASHSTEPS_D128_WARPS "" CACHE STRING "warps per block of chapter 05's steps g, h at d = 96, 128: 4 or 8 (empty: the book's 4)")
if(FLASHSTEPS_D128_WARPS)
  if(NOT FLASHSTEPS_D128_WARPS MATCHES "^(4|8)$")
    message(FATAL_ERROR "FLASHSTEPS_D128_WARPS must be 4 or 8 (got '${FLASHSTEPS_D128_WARPS}')")
  endif()
  add_compile_definitions(FLASHSTEPS_D128_WARPS=${FLASHSTEPS_D128_WARPS})
  message(STATUS "flashsteps: chapter 05's steps g, h at d = 96, 128 with ${FLASHSTEPS_D128_WARPS} warps per block")
endif()
