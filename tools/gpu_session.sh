#!/usr/bin/env bash
# gpu_session.sh: what a session with an NVIDIA GPU runs, in steps that each fit a 10-minute call.
# Everything it writes goes to $OUT (default: results/gpu-session).
#
#   tools/gpu_session.sh test                build for this GPU; every test (the timing checks
#                                            too); compute-sanitizer memcheck and racecheck
#   tools/gpu_session.sh bench [args...]     `flashsteps bench` into $OUT/chapters.csv
#                                            (e.g. --chapter 05 --chapter 06, or --sweep small)
#   tools/gpu_session.sh torch [args...]     PyTorch's SDPA backends into $OUT/torch.csv
#   tools/gpu_session.sh plots               the figures and the README table from $OUT/*.csv
#
# On a machine without a package registry, stage the header-only dependencies into .deps first;
# CMAKE_PREFIX_PATH then points there. Set FLASHSTEPS_COMMIT when the tree carries no .git.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/results/gpu-session}
mkdir -p "$out"
build=$root/build-gpu
export FLASHSTEPS_COMMIT=${FLASHSTEPS_COMMIT:-$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
prefix=()
[ -d "$root/.deps/usr" ] && prefix=(-DCMAKE_PREFIX_PATH="$root/.deps/usr")

case "${1:-}" in
  test)
    { nvidia-smi; nvcc --version; } >"$out/device.txt" 2>&1 || true
    cmake -S "$root" -B "$build" -G Ninja -DFLASHSTEPS_BACKEND=gpu -DCMAKE_CUDA_ARCHITECTURES=native "${prefix[@]}" \
      >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
    cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; exit 1; }
    status=0
    ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -25 || status=1
    # Every variant on small shapes that cross tile edges, with and without is_causal and masks.
    for tool in memcheck racecheck; do
      for args in "--lq 130 --lk 97 -d 64" "--lq 77 --lk 200 -d 128 --dtype bf16 --causal bottom-right" \
                  "-n 100 -d 96 --mask additive --mask-per-head -b 2"; do
        echo "== $tool: flashsteps run --reps 0 $args" >>"$out/sanitizer.log"
        compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/bin/flashsteps" run --reps 0 $args \
          >>"$out/sanitizer.log" 2>&1 || { status=1; echo "$tool FAILED on: $args"; }
      done
    done
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAILED" "$out/sanitizer.log" | sort | uniq -c
    exit $status
    ;;
  bench)
    shift
    "$build/bin/flashsteps" bench --csv "$out/chapters.csv" "$@" 2> >(tee -a "$out/bench.log" >&2)
    ;;
  torch)
    shift
    python3 "$root/tools/bench_torch_sdpa.py" --csv "$out/torch.csv" "$@" 2> >(tee -a "$out/torch.log" >&2)
    ;;
  plots)
    python3 "$root/tools/plot_speedups.py" "$out"/*.csv --out "$out" --readme "$root/README.md"
    ;;
  *)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
