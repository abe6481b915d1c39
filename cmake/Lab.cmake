# Lab.cmake: a lab, a program that profiles kernels of your own (common/lab/lab.h, labs/).
#
#   flashsteps_add_lab(<name> KERNELS <file.cu>... MAIN <file.cpp> GPUS <key>...)
#
# builds lab_<name> from the kernels (compiled as every chapter's are: flashsteps_kernel_sources) and
# its main, and the SASS data its model needs: tools/lab_sass.py compiles the kernels for each GPU's
# architecture (keys of common/gpus/gpus.h) into <name>_sass.cpp, again whenever a kernel file or a
# header it includes changes (a depfile), that lab alone. Without nvcc or nvdisasm the data says so
# and the lab models without it (no issue, FMA or latency term). A lab profiles in a counters build
# (-DFLASHSTEPS_COUNTERS=ON); elsewhere it says so and exits with status 2.
function(flashsteps_add_lab name)
  cmake_parse_arguments(PARSE_ARGV 1 LAB "" "MAIN" "KERNELS;GPUS")
  if(NOT LAB_KERNELS OR NOT LAB_MAIN OR NOT LAB_GPUS)
    message(FATAL_ERROR "flashsteps_add_lab(${name}): give KERNELS, MAIN and GPUS")
  endif()
  set(target lab_${name})
  set(sass ${CMAKE_CURRENT_BINARY_DIR}/${name}_sass.cpp)
  set(gpu_args "")
  foreach(gpu IN LISTS LAB_GPUS)
    list(APPEND gpu_args --gpu ${gpu})
  endforeach()
  list(TRANSFORM LAB_KERNELS PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ OUTPUT_VARIABLE kernel_paths)
  list(JOIN LAB_GPUS "," gpus)
  list(JOIN LAB_KERNELS ", " kernels)
  flashsteps_generated_table(${sass} "${FLASHSTEPS_PYTHON}"
    "#include \"lab/lab.h\"\nconst lab::SassData lab::kSass = {nullptr, 0, \"${kernels}\", \"no SASS: python3 not found\", \"${gpus}\"};\n")
  if(FLASHSTEPS_PYTHON)
  add_custom_command(OUTPUT ${sass}
    COMMAND ${FLASHSTEPS_PYTHON} ${PROJECT_SOURCE_DIR}/tools/lab_sass.py ${gpu_args} --out ${sass}
            --depfile ${sass}.d ${kernel_paths}
    DEPENDS ${kernel_paths} ${PROJECT_SOURCE_DIR}/tools/lab_sass.py ${PROJECT_SOURCE_DIR}/tools/sass_issue.py
            ${PROJECT_SOURCE_DIR}/tools/kernel_resources.py ${PROJECT_SOURCE_DIR}/common/gpus/gpus.h
    DEPFILE ${sass}.d
    COMMENT "SASS of lab ${name} for ${LAB_GPUS}"
    VERBATIM)
  endif()
  add_executable(${target} ${LAB_MAIN} ${sass})
  flashsteps_kernel_sources(${target} ${LAB_KERNELS})
  target_link_libraries(${target} PRIVATE lab)
  flashsteps_warnings(${target})
endfunction()
