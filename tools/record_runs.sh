#!/usr/bin/env bash
# record_runs.sh: runs commands and keeps their whole output in one file under results/, with what
# a reader needs to weigh it: the commit, the machine, and the load average before each command
# (the emulator's times move with it). The notes quote these files, never a terminal.
#
#   tools/record_runs.sh results/cpu-emulation-simt/flash_v2_runs.txt \
#       "build/bin/05_flash_v2 -n 256 -d 64 --reps 3" "build/bin/06_causal --causal -n 512 --reps 3"
#
#   FLASHSTEPS_BUILD=build-counters tools/record_runs.sh --again results/model-h100/*.txt
#       each file recorded again with its own commands (its "## $" lines), one file after another:
#       after a change to the model, `git diff` then shows every modelled number it moved, and
#       tools/stale_quotes.py the notes that quote the old ones
#
# Run from the repository root. It refuses a dirty tree (the numbers would belong to no commit) and
# first builds the build folder (FLASHSTEPS_BUILD, default build/) so that the binaries are the commit's. Exit 2 on bad use; a command that fails
# stops the recording and leaves no file.
set -euo pipefail
if [ "${1:-}" = --again ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: tools/record_runs.sh --again RECORDED.txt [...]" >&2; exit 2; }
  declare -A commands
  for f in "$@"; do  # every file's commands first: a file that names none stops before any work
    [ -f "$f" ] || { echo "record_runs: no file $f" >&2; exit 2; }
    commands[$f]=$(sed -n 's/^## \$ \(.*\)   (load average before: [^)]*)$/\1/p' "$f")
    [ -n "${commands[$f]}" ] || { echo "record_runs: $f records no command (no \"## \$\" line): not written by this script" >&2; exit 2; }
  done
  [ -z "$(git -C "$(dirname "$0")/.." status --porcelain)" ] ||
    { echo "record_runs: the working tree has uncommitted changes or untracked files; commit or remove them first" >&2; exit 2; }
  for f in "$@"; do
    mapfile -t cmds <<<"${commands[$f]}"
    # The tree was clean when this began: the files rewritten before this one are this run's own.
    RECORD_RUNS_AGAIN=1 "$0" "$f" "${cmds[@]}"
  done
  exit 0
fi
if [ $# -lt 2 ]; then
  echo "usage: tools/record_runs.sh OUTPUT.txt \"command\" [\"command\" ...]" >&2
  echo "       tools/record_runs.sh --again RECORDED.txt [...]" >&2
  exit 2
fi
out=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$root"  # the commands' paths (build/bin/...) are the repository's
[ -d "$(dirname "$out")" ] || { echo "record_runs: the folder $(dirname "$out") does not exist" >&2; exit 2; }
# Untracked files count too: the build globs the chapter folders.
if [ -z "${RECORD_RUNS_AGAIN:-}" ] && [ -n "$(git -C "$root" status --porcelain)" ]; then
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
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
  echo "# tools/record_runs.sh at commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# machine: ${cpu:-unknown CPU}, $(nproc --all) cores; GPU: ${gpu:-none (the times are the CPU emulator's, not a GPU's)}"
  echo
} >"$tmp"
for cmd in "$@"; do
  echo "recording: $cmd" >&2
  echo "## \$ $cmd   (load average before: $(cut -d' ' -f1-3 /proc/loadavg))" >>"$tmp"
  rc=0
  bash -c "$cmd" >>"$tmp" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { echo "record_runs: '$cmd' exited with $rc; nothing written" >&2; exit 1; }
  echo >>"$tmp"
done
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out" >&2
