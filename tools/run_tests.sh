#!/usr/bin/env bash
# run_tests.sh: the tests. Installs what is missing, then
#   - builds the backend this machine runs (gpu with a GPU, else cpu) and runs every test: the
#     emulator's, the reference's, every variant of every chapter over the sweep (on the cpu
#     backend in each schedule order: the shape sweep whole in forward order, a third of it in each
#     other; the mask sweep whole, then half in each other), the command line's;
#   - on a machine without a GPU also compiles and links the gpu backend for sm_90 (its tests report
#     themselves skipped), builds the emulator's tests with AddressSanitizer and runs them, builds
#     the counters build and runs its [counters] tests in each schedule order with one and two
#     workers, and prints the emulator's benchmark.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$root/tools/install_deps.sh"
status=0
step() { echo; echo "=== $* ($((SECONDS / 60)) min $((SECONDS % 60)) s in)"; }
# Warnings are errors here (CI), not in a user's build (cmake/Kernels.cmake).
export FLASHSTEPS_CMAKE_ARGS="${FLASHSTEPS_CMAKE_ARGS:-} -DFLASHSTEPS_WERROR=ON"

step "build"
configure "$root/build" $(backend_args)
grep -m1 "flashsteps: backend" "$root/build/configure.log" || true
build "$root/build"
backend=$(grep -m1 '^FLASHSTEPS_BACKEND' "$root/build/CMakeCache.txt" | cut -d= -f2)
step "tests ($backend backend)"
ctest --test-dir "$root/build" --output-on-failure -j 2 || status=1

if [ "$backend" = cpu ]; then
  step "the emulator's tests under AddressSanitizer"
  if configure "$root/build-asan" -DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug &&
     build "$root/build-asan" --target simt_tests; then
    "$root/build-asan/bin/simt_tests" | tail -2 || status=1
  else
    status=1
  fi
  step "the counters build: its [counters] tests in each schedule order, with 1 and 2 workers"
  if configure "$root/build-counters" -DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON &&
     build "$root/build-counters" --target flashsteps_counters_tests; then
    ctest --test-dir "$root/build-counters" -L counters --output-on-failure -j 2 || status=1
  else
    status=1
  fi
  step "the emulator's benchmark (figures beside the bounds it is designed for: a busy machine reads slower; only a wrong result fails it)"
  "$root/build/bin/simt_bench" || status=1
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [ -x "$nvcc" ]; then
    # For sm_90 only (FLASHSTEPS_CHECK_ARCHS to change it): the GPUs the book is measured on, and
    # the SASS its static checks read; the default build adds sm_80, at twice the compile time.
    archs=${FLASHSTEPS_CHECK_ARCHS:-90}
    # In Release, the build type most users pick (the others are RelWithDebInfo and Debug). Its
    # arch_resources check for three architectures (tools/CMakeLists.txt says why these).
    step "the gpu backend compiles and links for sm_$archs in Release (no GPU here: its tests report themselves skipped)"
    if configure "$root/build-gpu" -DFLASHSTEPS_BACKEND=gpu -DCMAKE_CUDA_COMPILER="$nvcc" \
         -DCMAKE_CUDA_ARCHITECTURES="$archs" -DCMAKE_BUILD_TYPE=Release \
         -DFLASHSTEPS_ARCH_RESOURCES_ARCHS="${FLASHSTEPS_ARCH_RESOURCES_ARCHS:-75,86,120}" &&
       build "$root/build-gpu"; then
      echo "built: $(ls "$root/build-gpu/bin" | tr '\n' ' ')"
      # Its own tests only: the tools' (label tools) are the cpu build's, already run above.
      ctest --test-dir "$root/build-gpu" -LE tools | tail -12 || status=1
    else
      status=1
    fi
  fi
fi
step "$([ $status = 0 ] && echo "all passed" || echo "FAILED")"
exit $status
