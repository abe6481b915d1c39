# common.sh: what run_chapters.sh and run_tests.sh share (sourced, not run).
#   FLASHSTEPS_BACKEND=gpu|cpu    force a backend (default: gpu when a GPU is present)
#   FLASHSTEPS_CMAKE_ARGS="..."   more configure arguments (-DCMAKE_PREFIX_PATH=..., -DCMAKE_CUDA_ARCHITECTURES=native)
#   FLASHSTEPS_JOBS=N             parallel build jobs (default: the number of cores)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${FLASHSTEPS_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

# configure <build dir> [cmake arguments...]; build <build dir> [cmake --build arguments...]
configure() {
  local dir=$1
  shift
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$dir" "${generator[@]}" "$@" ${FLASHSTEPS_CMAKE_ARGS:-} >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; return 1; }
}
build() {
  local dir=$1
  shift
  cmake --build "$dir" -j "$jobs" "$@" >"$dir/build.log" 2>&1 || { tail -60 "$dir/build.log"; return 1; }
}

backend_args() {
  [ -n "${FLASHSTEPS_BACKEND:-}" ] && echo "-DFLASHSTEPS_BACKEND=$FLASHSTEPS_BACKEND"
  return 0
}
