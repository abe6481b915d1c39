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
  echo "configuring ${dir#"$root"/} (log: ${dir#"$root"/}/configure.log)"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$dir" "${generator[@]}" "$@" ${FLASHSTEPS_CMAKE_ARGS:-} >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; return 1; }
}

# The build's own lines go to the log; the terminal gets a line every 10 % of the steps, and one
# when 30 s pass without any (then 60, 120, ...): how far, what was built last, the time so far.
build() {
  local dir=$1
  shift
  echo "building ${dir#"$root"/} with $jobs jobs (log: ${dir#"$root"/}/build.log)"
  local start=$SECONDS status=0
  cmake --build "$dir" -j "$jobs" "$@" 2>&1 | tee "$dir/build.log" | progress "$start" || status=${PIPESTATUS[0]}
  if [ "$status" != 0 ]; then
    tail -60 "$dir/build.log"
    echo "the build failed after $((SECONDS - start)) s (log: ${dir#"$root"/}/build.log)"
    return 1
  fi
  echo "built in $((SECONDS - start)) s"
}
progress() {
  local start=$1 line done=0 total=1 what="" shown=-1 said=$SECONDS ended=$SECONDS rc wait=30
  while :; do
    IFS= read -r -t "$wait" line && rc=0 || rc=$?  # (the callers' set -e must not end the loop)
    if ((rc > 128)); then  # no step ended for a while: one file takes long (nvcc, ptxas)
      printf '  [%3d%%] %d of %d steps, %3d s: still building (no step ended in %d s; the last: %s)\n' \
        $((done * 100 / total)) "$done" "$total" $((SECONDS - start)) $((SECONDS - ended)) "$what"
      wait=$((wait * 2)) said=$SECONDS  # 30 s, then 60, 120, ...: a few lines for a long compile
      continue
    fi
    ((rc == 0)) || break
    wait=30
    # Ninja's "[12/81] Building CXX object 05_flash_v2/CMakeFiles/...dir/pipelined.cu.o", printed
    # as a step ends when the output is no terminal; Make's "[ 45%] Building ..." has no counts.
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\ (.*) ]]; then
      done=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]} what=${BASH_REMATCH[3]}
    elif [[ $line =~ ^\[\ *([0-9]+)%\]\ (.*) ]]; then
      done=${BASH_REMATCH[1]} total=100 what=${BASH_REMATCH[2]}
    else
      continue
    fi
    ended=$SECONDS
    if [[ $what =~ ^Building\ [A-Z]+\ object\ (.*/)?CMakeFiles/[^/]+\.dir/(.*)\.o$ ]]; then
      what="compiled ${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
    elif [[ $what =~ ^Linking\ [A-Z]+\ (static\ library|executable)\ (.*) ]]; then
      what="linked ${BASH_REMATCH[2]}"
    fi
    if ((done * 10 / total > shown || SECONDS - said >= 30 || done == total)); then
      printf '  [%3d%%] %d of %d steps, %3d s: %s\n' $((done * 100 / total)) "$done" "$total" $((SECONDS - start)) "$what"
      shown=$((done * 10 / total)) said=$SECONDS
    fi
  done
}

# The backend, and on a machine with a GPU its architecture: `native` (cmake/Backend.cmake resolves it
# through nvidia-smi), so that a T4 or a GeForce card gets code it runs, unless
# FLASHSTEPS_CMAKE_ARGS names the architectures.
backend_args() {
  [ -n "${FLASHSTEPS_BACKEND:-}" ] && echo "-DFLASHSTEPS_BACKEND=$FLASHSTEPS_BACKEND"
  if [ "${FLASHSTEPS_BACKEND:-auto}" != cpu ] && [[ "${FLASHSTEPS_CMAKE_ARGS:-}" != *CMAKE_CUDA_ARCHITECTURES* ]] &&
     nvidia-smi -L 2>/dev/null | grep -q "GPU [0-9]"; then
    echo "-DCMAKE_CUDA_ARCHITECTURES=native"
  fi
  return 0
}
