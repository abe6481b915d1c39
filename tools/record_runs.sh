#!/usr/bin/env bash
# record_runs.sh: runs commands and keeps their whole output in one file under results/, with what
# a reader needs to weigh it: the commit, the machine, and the load average before each command
# (the emulator's times move with it). The notes quote these files, never a terminal.
#
#   tools/record_runs.sh results/cpu-emulation-simt/flash_v2_runs.txt \
#       "build/bin/05_flash_v2 -n 256 -d 64 --reps 3" "build/bin/06_causal --causal -n 512 --reps 3"
#
#   FLASHSTEPS_BUILD=build-counters tools/record_runs.sh --again results/model-h100/hopper_steps.txt ...
#       each file recorded again with its own commands (its "## $" lines), one after another: after
#       a change to the model, `git diff` shows every number it moved, and tools/stale_quotes.py the
#       notes that quote the old ones. Only files this script wrote (a test's output such as
#       results/model-h100/model_vs_published.txt is refused: its header says how it was made).
#
# Run from the repository root. It refuses a dirty tree (the numbers would belong to no commit) and
# first builds the build folder (FLASHSTEPS_BUILD, default build/) so that the binaries are the
# commit's. Exit 2 on bad use, before any work; a command that fails stops the recording and leaves
# its file as it was (with --again, the files recorded before it stay rewritten).
set -euo pipefail
usage() {
  echo "usage: tools/record_runs.sh OUTPUT.txt \"command\" [\"command\" ...]" >&2
  echo "       tools/record_runs.sh --again RECORDED.txt [...]" >&2
  exit 2
}
again=0
if [ "${1:-}" = --again ]; then
  again=1
  shift
  [ $# -ge 1 ] || usage
else
  [ $# -ge 2 ] || usage
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
# What to record: OUTPUT and its commands, or each RECORDED file and the commands it names.
declare -a outs=()
declare -A commands=()
if ((again)); then
  for f in "$@"; do
    [ -f "$f" ] || { echo "record_runs: no file $f" >&2; exit 2; }
    cmds=$(sed -n 's/^## \$ \(.*\)   (load average before: [^)]*)$/\1/p' "$f")
    [ -n "$cmds" ] || { echo "record_runs: $f records no command (no \"## \$\" line): not written by this script" >&2; exit 2; }
    outs+=("$(absolute "$f")")
    commands[${outs[-1]}]=$cmds
  done
else
  outs=("$(absolute "$1")")
  shift
  given=("$@")
fi
cd "$root"  # the commands' paths (build/bin/...) are the repository's
for out in "${outs[@]}"; do
  [ -d "$(dirname "$out")" ] || { echo "record_runs: the folder $(dirname "$out") does not exist" >&2; exit 2; }
done
# Untracked files count too: the build globs the chapter folders.
if [ -n "$(git -C "$root" status --porcelain)" ]; then
  echo "record_runs: the working tree has uncommitted changes or untracked files; commit or remove them first" >&2
  exit 2
fi
# The binaries must be the commit's: bring the build folder up to date first (FLASHSTEPS_BUILD,
# default build/), quietly, and stop if it fails.
build=${FLASHSTEPS_BUILD:-$root/build}
# Only that folder: commands that run binaries of another folder (build-counters/) need
# FLASHSTEPS_BUILD to name it.
[ -d "$build" ] || { echo "record_runs: no build folder $build: configure it first (README)" >&2; exit 2; }
echo "record_runs: bringing $build up to date" >&2
cmake --build "$build" -j "$(nproc --all)" >"$build/record_runs_build.log" 2>&1 ||
  { echo "record_runs: the build failed (log: $build/record_runs_build.log)" >&2; exit 1; }
commit=$(git -C "$root" rev-parse --short=12 HEAD)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
tmp=""
trap '[ -z "$tmp" ] || rm -f "$tmp"' EXIT
for out in "${outs[@]}"; do
  tmp=$(mktemp "$out.XXXXXX")
  {
    echo "# tools/record_runs.sh at commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# machine: ${cpu:-unknown CPU}, $(nproc --all) cores; GPU: ${gpu:-none (no time in this file was measured on a GPU)}"
    echo
  } >"$tmp"
  if ((again)); then mapfile -t cmds <<<"${commands[$out]}"; else cmds=("${given[@]}"); fi
  for cmd in "${cmds[@]}"; do
    echo "recording: $cmd" >&2
    echo "## \$ $cmd   (load average before: $(cut -d' ' -f1-3 /proc/loadavg))" >>"$tmp"
    rc=0
    bash -c "$cmd" >>"$tmp" 2>&1 || rc=$?
    [ "$rc" = 0 ] || { echo "record_runs: '$cmd' exited with $rc; $out not written" >&2; exit 1; }
    echo >>"$tmp"
  done
  mv "$tmp" "$out"
  tmp=""
  echo "wrote $out" >&2
done
