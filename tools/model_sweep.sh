#!/usr/bin/env bash
# model_sweep.sh: every chapter's best variant modelled on an H100 (a counters build's
# `flashsteps tour --profile`) at the FlashAttention papers' shapes: B·N = 16k tokens, H·d = 2048,
# N = 512 ... 16k, d = 64 and 128, causal and not. Appends the modelled rows to a CSV in the
# project's schema, for tools/plot_speedups.py (results/model-h100/, notes/performance_model.md).
#
#   tools/model_sweep.sh results/model-h100/model.csv              # every shape, the cheap ones first
#   tools/model_sweep.sh build/model.csv 512 1024                  # only these N
#
# Run from the repository root with a counters build in build-counters/ (README). Each shape is
# modelled from one of its heads (every head is alike: the counts scale exactly, and the CTest
# counters_sampling checks it) and, where one head alone would take long, from a few of its row
# groups (notes/performance_model.md); the rows carry the commit of the binary. Exit 2 on bad use;
# a shape that fails stops the sweep.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: tools/model_sweep.sh OUTPUT.csv [N ...]" >&2; exit 2; }
out=$1
shift
ns=("$@")
[ ${#ns[@]} -gt 0 ] || ns=(512 1024 2048 4096 8192 16384)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=$root/build-counters/bin/flashsteps
[ -x "$binary" ] || { echo "model_sweep: no counters build ($binary): configure one first (README)" >&2; exit 2; }
[ -d "$(dirname "$out")" ] || { echo "model_sweep: the folder $(dirname "$out") does not exist" >&2; exit 2; }
for n in "${ns[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] && ((n > 0 && 16384 % n == 0)) ||
    { echo "model_sweep: N must divide 16384 (B·N = 16k), not $n" >&2; exit 2; }
done
for n in "${ns[@]}"; do
  for d in 64 128; do
    for causal in "" --causal; do
      echo "model_sweep: B=$((16384 / n)) H=$((2048 / d)) N=$n d=$d ${causal:-non-causal}" >&2
      "$binary" tour --profile --chapters-only --emulated-heads 1 -b $((16384 / n)) -H $((2048 / d)) -n "$n" -d "$d" $causal \
        --csv "$out" >/dev/null
    done
  done
done
