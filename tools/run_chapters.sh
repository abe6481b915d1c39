#!/usr/bin/env bash
# run_chapters.sh: the main job. Installs what is missing, builds, and runs every chapter's best
# variant on the default problem: its error against the fp64 reference, its time, its speedup
# over chapter 01. On a machine without a GPU the kernels run on the CPU emulator (small default
# problem; the times are the emulator's, not a GPU's); it then also builds the counters build
# (build-counters/) and shows the GPU time modelled from what the emulator counted, at a GPU-sized
# problem (notes/performance_model.md). Options go to `flashsteps tour`, e.g.
#   tools/run_chapters.sh -n 4096 --dtype bf16 --causal
# It builds the one binary it runs (build/bin/flashsteps); tools/run_tests.sh builds the rest.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$root/tools/install_deps.sh"
configure "$root/build" $(backend_args)
grep -m1 "flashsteps: backend" "$root/build/configure.log" || true
build "$root/build" --target flashsteps
echo "running: build/bin/flashsteps tour $*"
echo
if [ "$(grep -m1 '^FLASHSTEPS_BACKEND' "$root/build/CMakeCache.txt" | cut -d= -f2)" != cpu ]; then
  exec "$root/build/bin/flashsteps" tour "$@"
fi

# No GPU: the emulator's times rank the kernels by their cost on a CPU, on a problem small enough
# to emulate. The counters build says what a GPU would do with the same kernels, at a problem of a
# GPU's size (B=16 H=32 N=1024 d=64, one of the FlashAttention papers' shapes) unless the options
# name a size; at the same size it also shows the emulator's times from the run above.
user_csv=no user_size=no
for arg in "$@"; do
  case $arg in
    --csv | --csv=*) user_csv=yes ;;
    -b | --batch | --batch=* | -H | --heads | --heads=* | -n | --seq | --seq=* | --lq | --lq=* | --lk | --lk=* | \
      -d | --head-dim | --head-dim=* | -b?* | -H?* | -n?* | -d?*) user_size=yes ;;
  esac
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
times=()
if [ $user_csv = no ]; then
  "$root/build/bin/flashsteps" tour "$@" --csv "$scratch/tour.csv"
  [ $user_size = yes ] && times=(--emulator-times "$scratch/tour.csv")
else
  "$root/build/bin/flashsteps" tour "$@"
fi
size=()
[ $user_size = yes ] || size=(-b 16 -H 32 -n 1024 -d 64)
echo
echo "Modelling a GPU from the emulator's counters (building build-counters/, instrumented kernels; once) ..."
configure "$root/build-counters" -DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON
build "$root/build-counters" --target flashsteps
echo "running: build-counters/bin/flashsteps tour --profile ${times[*]} ${size[*]} $*"
echo
"$root/build-counters/bin/flashsteps" tour --profile "${times[@]}" "${size[@]}" "$@"
