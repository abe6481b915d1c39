#!/usr/bin/env bash
# run_chapters.sh: the main job. Installs what is missing, builds, and runs every chapter's best
# variant on the default problem: its error against the fp64 reference, its time, its speedup
# over chapter 01. On a machine without a GPU the kernels run on the CPU emulator (small default
# problem; the times are the emulator's, not a GPU's). Options go to `flashsteps tour`, e.g.
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
exec "$root/build/bin/flashsteps" tour "$@"
