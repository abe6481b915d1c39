# Chapter.cmake: what a numbered chapter folder declares, in its CMakeLists.txt:
#   flashsteps_chapter(KERNELS a.cu b.cu SOURCES variants.cpp
#                      [GPU_KERNELS c.cu] [GPU_LIBRARIES CUDA::cublas] [USES 01_naive_attention]
#                      [HOPPER_KERNELS d.cu] [MAIN main.cpp])
# HOPPER_KERNELS use sm_90a's instructions (wgmma, setmaxnreg): nvcc builds them for sm_90a alone
# (flashsteps_hopper_kernel_sources in Kernels.cmake); the cpu build as any kernel.
# GPU_KERNELS are sources only nvcc builds (cuBLAS calls, ...), each named after the one variant
# it implements (math_path.cu: variant math_path, registered under #if FLASHSTEPS_GPU): the cpu
# build then knows that name and says that the variant needs a GPU.
# It builds the chapter's kernels into a library <chapter>_kernels (which a later chapter may
# USE: it then includes "01_naive_attention/naive.h" and calls them), its variants into an object
# library <chapter>_variants, and a binary named after the folder (its variants on one problem),
# and lists the chapter for the tests, the tour and the benchmarks, which link every chapter.
# MAIN replaces the binary's main() (common/harness/chapter_main.cpp) with the chapter's own.
function(flashsteps_chapter)
  cmake_parse_arguments(C "" "MAIN" "KERNELS;SOURCES;GPU_KERNELS;GPU_LIBRARIES;USES;HOPPER_KERNELS" ${ARGN})
  get_filename_component(chapter ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(kernels ${chapter}_kernels)
  add_library(${kernels} STATIC)
  flashsteps_kernel_sources(${kernels} ${C_KERNELS})
  if(C_HOPPER_KERNELS)
    flashsteps_hopper_kernel_sources(${kernels} ${C_HOPPER_KERNELS})
  endif()
  foreach(source IN LISTS C_GPU_KERNELS)
    get_filename_component(variant ${source} NAME_WE)
    set_property(GLOBAL APPEND PROPERTY FLASHSTEPS_GPU_ONLY_VARIANTS ${chapter}/${variant})
  endforeach()
  if(FLASHSTEPS_BACKEND STREQUAL "gpu")
    flashsteps_kernel_sources(${kernels} ${C_GPU_KERNELS})
    target_link_libraries(${kernels} PUBLIC ${C_GPU_LIBRARIES})
  endif()
  target_include_directories(${kernels} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/common)
  target_link_libraries(${kernels} PUBLIC simt)
  foreach(used IN LISTS C_USES)
    target_link_libraries(${kernels} PUBLIC ${used}_kernels)
  endforeach()
  flashsteps_warnings(${kernels})

  set(lib ${chapter}_variants)
  add_library(${lib} OBJECT ${C_SOURCES})
  target_include_directories(${lib} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${lib} PUBLIC harness ${kernels})
  flashsteps_warnings(${lib})

  if(C_MAIN)
    add_executable(${chapter} ${C_MAIN})
  else()
    add_executable(${chapter} ${PROJECT_SOURCE_DIR}/common/harness/chapter_main.cpp)
  endif()
  target_compile_definitions(${chapter} PRIVATE FLASHSTEPS_CHAPTER="${chapter}")
  target_link_libraries(${chapter} PRIVATE ${lib})
  flashsteps_warnings(${chapter})
  set_property(GLOBAL APPEND PROPERTY FLASHSTEPS_CHAPTER_LIBS ${lib})
endfunction()
