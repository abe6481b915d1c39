# Counters.cmake: -DFLASHSTEPS_COUNTERS=ON, the build in which the emulator counts what a GPU
# profiler would (common/simt/include/simt/counters.h; `flashsteps profile`). Use a build folder
# of its own: its kernels are instrumented, and run slower than in a plain build.
#   cmake -S . -B build-counters -G Ninja -DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON
option(FLASHSTEPS_COUNTERS "cpu backend: count global/shared requests, bank conflicts, mma... (flashsteps profile)" OFF)
# The architectures, besides sm_90, whose SASS the counters build compiles every chapter's kernels
# for, so that `profile --gpu a100` models sm_80's code (model/sass.h's kSassArchs): 75, 80, 86, 89,
# 100, 120 (gpus.h's GPUs). Each is every kernel compiled once (minutes; cached per source by hash,
# so an edit recompiles what it reaches). Empty: those GPUs are modelled with sm_90's code, said so.
set(FLASHSTEPS_SASS_ARCHS "" CACHE STRING "counters build: architectures to compile the kernels' SASS for besides sm_90 (80;89...)")
set(FLASHSTEPS_COUNTER_FLAGS "")
if(FLASHSTEPS_COUNTERS)
  if(NOT FLASHSTEPS_BACKEND STREQUAL "cpu")
    message(FATAL_ERROR "FLASHSTEPS_COUNTERS needs the cpu backend (-DFLASHSTEPS_BACKEND=cpu); on a GPU, Nsight Compute (ncu) counts the same things")
  endif()
  if(FLASHSTEPS_SANITIZE)
    message(FATAL_ERROR "FLASHSTEPS_COUNTERS and FLASHSTEPS_SANITIZE cannot share a build (the counters use the thread sanitizer's instrumentation)")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(FATAL_ERROR "FLASHSTEPS_COUNTERS needs GCC (its -fsanitize=thread instrumentation without the runtime); found ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Only the instrumentation: every load and store of a kernel calls __tsan_readN/__tsan_writeN,
  # which the emulator defines (common/simt/src/tsan_callbacks.cpp); no sanitizer runtime is
  # linked. Function entry/exit is not needed; -fno-tree-sra keeps a float4 access one 16-byte
  # access instead of four scalar ones. FLASHSTEPS_COUNTED_TU gives the helpers a kernel shares with
  # the harness names of their own in the kernels' files (ATTN_HOST_DEVICE, common/kernels/params.h).
  set(FLASHSTEPS_COUNTER_FLAGS "-fsanitize=thread;--param=tsan-instrument-func-entry-exit=0;-fno-tree-sra;-DFLASHSTEPS_COUNTED_TU")
  message(STATUS "flashsteps: counters on (kernels instrumented; flashsteps profile)")
endif()

# A table a tool of tools/ writes at the build (its file starts with the tool's "//" comment). Where
# this build does not run the tool (`run` false), `placeholder` is written instead, only when its
# text changes (file(CONFIGURE): nothing recompiles for nothing); where it does, a placeholder an
# earlier configure left, newer than every input, is removed so that the rule runs.
function(flashsteps_generated_table file run placeholder)
  if(run)
    if(EXISTS ${file})
      file(READ ${file} old)
      if(NOT old MATCHES "^//")
        file(REMOVE ${file})
      endif()
    endif()
  else()
    file(CONFIGURE OUTPUT ${file} CONTENT "${placeholder}" @ONLY)
  endif()
endfunction()
