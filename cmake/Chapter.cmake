# Chapter.cmake: what a numbered chapter folder declares, in its CMakeLists.txt:
#   flashsteps_chapter(KERNELS a.cu b.cu SOURCES variants.cpp
#                      [GPU_KERNELS c.cu] [GPU_LIBRARIES CUDA::cublas])
# It builds the chapter's kernels and variants into an object library <chapter>_variants, a
# binary named after the folder (its variants on one problem), and lists the chapter for the
# tests, the tour and the benchmarks, which link every chapter.
function(flashsteps_chapter)
  cmake_parse_arguments(C "" "" "KERNELS;SOURCES;GPU_KERNELS;GPU_LIBRARIES" ${ARGN})
  get_filename_component(chapter ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(lib ${chapter}_variants)
  add_library(${lib} OBJECT ${C_SOURCES})
  flashsteps_kernel_sources(${lib} ${C_KERNELS})
  if(FLASHSTEPS_BACKEND STREQUAL "gpu")
    flashsteps_kernel_sources(${lib} ${C_GPU_KERNELS})
    target_link_libraries(${lib} PUBLIC ${C_GPU_LIBRARIES})
  endif()
  target_include_directories(${lib} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${lib} PUBLIC harness)
  flashsteps_warnings(${lib})

  add_executable(${chapter} ${PROJECT_SOURCE_DIR}/common/harness/chapter_main.cpp)
  target_compile_definitions(${chapter} PRIVATE FLASHSTEPS_CHAPTER="${chapter}")
  target_link_libraries(${chapter} PRIVATE ${lib})
  flashsteps_warnings(${chapter})
  set_property(GLOBAL APPEND PROPERTY FLASHSTEPS_CHAPTER_LIBS ${lib})
endfunction()
