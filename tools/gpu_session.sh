#!/usr/bin/env bash
# gpu_session.sh: what a session with an NVIDIA GPU runs. Everything it writes goes to $OUT
# (default: results/gpu-session).
#
#   tools/gpu_session.sh all [--budget S] [--steps a,b,...]
#                                            the whole first pass in one call, within S seconds
#                                            (default 540): build for this machine's GPU, every test, the
#                                            sanitizers, the chapters beside PyTorch's SDPA in one
#                                            process, ncu on each chapter's best variant, ...; then
#                                            packs $OUT into a few files (summary.txt first). The
#                                            steps the budget left out are named at the end of
#                                            summary.txt, with the --steps that runs them next
#   tools/gpu_session.sh test                build; every test (the timing checks too);
#                                            compute-sanitizer memcheck, racecheck and synccheck
#   tools/gpu_session.sh bench [args...]     `flashsteps bench` into $OUT/chapters.csv
#                                            (e.g. --chapter 05 --chapter 06, or --sweep small)
#   tools/gpu_session.sh sdpa [args...]      tools/bench_torch_sdpa.py with the chapters in the same
#                                            process into $OUT/sdpa.csv (e.g. --shapes uneven)
#   tools/gpu_session.sh torch [args...]     PyTorch's SDPA backends alone into $OUT/torch.csv
#   tools/gpu_session.sh backward            chapter 07's backward steps, then PyTorch's backward
#                                            (flash, efficient, cudnn) on the same shapes, into
#                                            $OUT/backward.csv
#   tools/gpu_session.sh plots               the figures and the README table from $OUT/*.csv
# (`all`'s decode step: chapter 08 beside SDPA with enable_gqa and flash_attn_with_kvcache, into
# $OUT/decode.csv, by tools/bench_torch_decode.py; its masks step: chapter 10 beside FlexAttention,
# SDPA with a bool attn_mask and varlen_attn, into $OUT/masks.csv, by tools/bench_torch_masks.py.)
#
# On a machine without a package registry, stage the header-only dependencies into .deps first;
# CMAKE_PREFIX_PATH then points there. Set FLASHSTEPS_COMMIT when the tree carries no .git (or a
# stale one). A call of the binaries or the tools/bench_torch_*.py scripts made directly, not through
# this script, must export FLASHSTEPS_COMMIT too: otherwise their CSV rows carry the commit the build
# recorded (cmake/WriteCommit.cmake), which a stale .git on a copied tree makes wrong
# (263b52919806-dirty on the first H200 session's direct calls, for a tree at 5676c2862807).
# tests/test_gpu_session.py runs `all` with stand-ins for the GPU's programs, without a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/results/gpu-session}
mkdir -p "$out"
build=${FLASHSTEPS_GPU_BUILD:-$root/build-gpu}  # another folder: tests/test_gpu_session.py
# The commit of the tree's own repository; unknown for a .git in a folder above it (another tree's),
# as cmake/WriteCommit.cmake records it.
tree_commit() {
  local top
  top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null) &&
    [ "$(cd "$top" && pwd -P)" = "$(cd "$root" && pwd -P)" ] &&
    git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown
}
export FLASHSTEPS_COMMIT=${FLASHSTEPS_COMMIT:-$(tree_commit)}
# The torch scripts' progress reaches their logs as it happens, not when a timeout kills them.
export PYTHONUNBUFFERED=1
prefix=()
[ -d "$root/.deps/usr" ] && prefix=(-DCMAKE_PREFIX_PATH="$root/.deps/usr")
start=$SECONDS
budget=540
# The steps of `all`, in the order they run: correctness, then what the targets and the model check
# need (the chapters beside PyTorch, every variant at the promise's shapes, ncu), the long tail last.
all_steps=(tests sdpa promise ncu softmax backward decode masks sdpa_early timing sanitizers tune)
unfinished=()
last_rc=0  # how the last step ended

left() { echo $((budget - (SECONDS - start))); }
note() { echo "$*" | tee -a "$out/summary.txt"; }
# step <name> <seconds> <command...>: runs the command with at most that long (and never past the
# budget), logs it to $out/<name>.log, and notes how it ended in summary.txt. `timeout` runs
# programs, not this script's functions: a function runs through this script again (verb _run).
step() {
  local name=$1 want=$2
  shift 2
  last_rc=1
  local t
  t=$(left)
  ((want < t)) || want=$t
  if ((want < 10)); then
    note "SKIPPED $name: the budget is spent"
    unfinished+=("$name")
    return 0
  fi
  local t0=$SECONDS rc=0 cmd=("$@")
  declare -F "$1" >/dev/null && cmd=("$root/tools/gpu_session.sh" _run "$@")
  timeout --kill-after=10 "$want" "${cmd[@]}" >"$out/$name.log" 2>&1 || rc=$?
  last_rc=$rc
  case $rc in
    0) note "ok      $name ($((SECONDS - t0)) s)" ;;
    77) note "SKIPPED $name (it says why in $name.log)" ;;
    124 | 137)
      note "TIMEOUT $name after $want s (its log has what it did)"
      unfinished+=("$name")
      ;;
    *) note "FAILED  $name (exit $rc, $((SECONDS - t0)) s): see $name.log" ;;
  esac
  return 0
}

# The compute capabilities of this machine's GPUs as CMake's list ("90", "86;120"): the session tests
# and times the SASS a learner with this GPU builds, not the default list's sm_80 SASS or compute_90
# PTX compiled by the driver (chapter 09's sm_90a files are built whatever the list: Kernels.cmake).
# When nvidia-smi answers nothing usable, `native`: cmake/Backend.cmake asks nvidia-smi again, and
# falls back to its default list.
gpu_archs() {
  local caps
  caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '. \r' |
    grep -E '^[0-9]+$' | sort -un | paste -sd';') || true
  echo "${caps:-native}"
}

# configure <folder> [cmake arguments...]: a Release build for the GPUs found (gpu_archs).
configure() {
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -G Ninja -DFLASHSTEPS_BACKEND=gpu -DCMAKE_CUDA_ARCHITECTURES="$(gpu_archs)" \
    -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" "$@"
}
configure_and_build() {
  configure "$build"
  cmake --build "$build" -j "$(nproc)"
}

device_info() {
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv
  nvcc --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
  echo "commit $FLASHSTEPS_COMMIT"
}

# The SMs' clock while the steps run, sampled every 200 ms into clocks.csv (in the archive): the model
# times the H100 and H200 at 1.83 GHz, the clock their tensor peak implies, where the parts boost to
# 1.98 (gpus.h, "Clocks"; issue 35). What a GPU holds under this load only a GPU can say: summary.txt
# gets the samples' median, lowest and highest while the GPU was busy (utilization >= 50 %), and
# nvidia-smi's clock event reasons (power, thermal) at the end.
clock_fields=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
start_clocks() {
  nvidia-smi --query-gpu=$clock_fields --format=csv,noheader,nounits -lms 200 >"$out/clocks.csv" 2>"$out/clocks.err" &
  clock_pid=$!
}
stop_clocks() {
  [ -n "${clock_pid:-}" ] || return 0
  kill "$clock_pid" 2>/dev/null || true
  wait "$clock_pid" 2>/dev/null || true
  clock_pid=
  nvidia-smi -q -d PERFORMANCE,CLOCK >"$out/clocks_end.txt" 2>&1 || true
  # Every GPU's samples together (one line per GPU per sample): a machine of one kind holds one clock.
  local busy
  busy=$(awk -F', *' '$6 >= 50 && $2 ~ /^[0-9]+$/ {print $2}' "$out/clocks.csv" | sort -n)
  if [ -z "$busy" ]; then
    note "SM clock: no sample with the GPU busy ($(wc -l <"$out/clocks.csv") samples in clocks.csv; clocks.err)"
    return 0
  fi
  local n
  n=$(echo "$busy" | wc -l)
  note "SM clock while busy (nvidia-smi every 200 ms, utilization >= 50 %): median $(echo "$busy" | sed -n "$(((n + 1) / 2))p") MHz, lowest $(echo "$busy" | sed -n 1p), highest $(echo "$busy" | tail -1), $n samples (clocks.csv; event reasons at the end: clocks_end.txt)"
}

# Every variant on small shapes that cross tile edges, with and without is_causal and masks.
# Chapter 08 first: no GPU has sanitized it yet (the H200's 60 s reached 6 memcheck runs and 2
# racecheck runs of the forward and backward loop, which it had sanitized before).
sanitize() {
  local status=0
  # Chapter 08: paged, GQA, several new tokens under causal, a split count forced.
  for tool in memcheck racecheck synccheck; do
    for args in "-b 3 --cache-lens 0,17,300 --page-size 7 --new-tokens 3 --causal -H 8 --kv-heads 2 -d 64" \
                "-b 2 --cache-len 700 --splits 5 -d 128 --dtype bf16"; do
      echo "== $tool: flashsteps decode --reps 0 $args"
      # shellcheck disable=SC2086
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/bin/flashsteps" decode --reps 0 $args ||
        { status=1; echo "$tool FAILED on: decode $args"; }
    done
  done
  for tool in memcheck racecheck synccheck; do
    for args in "--lq 130 --lk 97 -d 64" "--lq 77 --lk 200 -d 128 --dtype bf16 --causal bottom-right" \
                "-n 100 -d 96 --mask additive --mask-per-head -b 2"; do
      echo "== $tool: flashsteps run --reps 0 $args"
      # shellcheck disable=SC2086
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/bin/flashsteps" run --reps 0 $args ||
        { status=1; echo "$tool FAILED on: $args"; }
      echo "== $tool: flashsteps backward --reps 0 $args"
      # shellcheck disable=SC2086
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/bin/flashsteps" backward --reps 0 $args ||
        { status=1; echo "$tool FAILED on: backward $args"; }
    done
  done
  return $status
}

# Chapter 07 and PyTorch's backward, one after the other on this GPU (a speedup is taken between rows
# of one session): d = 64 (H = 32) and 128 (H = 16), N = 4k and 8k with B*N = 16k, causal and not.
# The binary also writes the row of the forward that made O and L. d = 128 first: the H200's 90 s
# ran 3 of the 8 problems, all at d = 64 (results/nvidia-h200/logs/backward.log: about 30 s each,
# of which the timed runs, 3 variants x 23 of about 20 ms, are under 2 s; step e, cp_async, came later).
backward_bench() {
  local d n c
  for d in 128 64; do
    for n in 4096 8192; do
      for c in "" --causal; do
        # shellcheck disable=SC2086
        "$build/bin/07_backward" -v tensor_cores -v causal -v deterministic -v cp_async -b $((16384 / n)) -H $((2048 / d)) -n "$n" \
          -d "$d" $c --reps 20 --warmup 3 --csv "$out/backward.csv" || return 1
      done
    done
  done
  python3 "$root/tools/bench_torch_sdpa_backward.py" --shapes flash --seq 4096 8192 --dtype fp16 --reps 20 \
    --csv "$out/backward.csv"
}

# Every variant of every chapter at the promise's shapes (P1: B = 16, H = 32, N = 1024, d = 64;
# P2: B = 32, H = 16, N = 1024, d = 128; P3: B = 1, H = 16, N = 4096, d = 128; fp16), and chapter 08
# at B = 1 with a 32k context: the measured side of the model's check (tools/model_vs_gpu.py).
# 5 timed runs after 1: chapter 04's algorithm1 and row_per_thread take 0.15 to 2 s a run at these shapes
# on an H200, and every variant runs reps + warmup times (at 10 + 2 the step ran out of 80 s at P2).
# The promise's shapes (below), one home for every step that runs them; split into words where used.
p1="-b 16 -H 32 -n 1024 -d 64" p2="-b 32 -H 16 -n 1024 -d 128" p3="-b 1 -H 16 -n 4096 -d 128"
promise_at() {
  # shellcheck disable=SC2086
  "$build/bin/flashsteps" run $1 --dtype fp16 --reps 5 --warmup 1 --csv "$out/promise.csv"
}
promise_shapes() {
  local status=0
  # P2 last: on the H200 it did not finish in the time its call had (results/nvidia-h200/README.md);
  # last, a timeout cuts it alone, not P3 and chapter 08's row behind it.
  promise_at "$p1" || status=1
  promise_at "$p3" || status=1
  "$build/bin/flashsteps" decode -b 1 --cache-len 32768 --reps 20 --warmup 2 --csv "$out/promise.csv" || status=1
  promise_at "$p2" || status=1
  return $status
}

# ncu on issue 35's steps (below), then on each chapter's best variant at one shape (B = 4, H = 16,
# N = 4096, d = 128, fp16), with the counters the emulator models and what the model's issue term
# and occupancy take (warp instructions executed, registers per thread, the SMs' clock); metrics
# this ncu does not know are dropped (and named), not fatal.
profile() {
  local metrics=(gpu__time_duration.sum dram__bytes_read.sum dram__bytes_write.sum lts__t_bytes.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_st.sum l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
    smsp__inst_executed_pipe_tensor_op_hmma.sum sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
    sm__warps_active.avg.pct_of_peak_sustained_active sm__throughput.avg.pct_of_peak_sustained_elapsed
    smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
    smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
    smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
    smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
    smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
    smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
    smsp__inst_executed.sum launch__registers_per_thread sm__cycles_elapsed.avg.per_second)
  local known
  known=$(ncu --query-metrics 2>/dev/null | awk '{print $1}') || { echo "ncu --query-metrics failed"; return 1; }
  # For issue 35's profiles (below) besides: the hit rates.
  local more=(lts__t_sector_hit_rate.pct l1tex__t_sector_hit_rate.pct)
  local use=() extra=() m
  for m in "${metrics[@]}" "${more[@]}"; do
    if ! grep -qx "${m%%.*}" <<<"$known"; then
      echo "ncu does not know ${m%%.*}: dropped"
    elif [[ " ${more[*]} " == *" $m "* ]]; then extra+=("$m")
    else use+=("$m"); fi
  done
  local metric_list
  metric_list=$(IFS=,; echo "${use[*]}")
  local v status=0
  failed() { status=1; echo "ncu FAILED on $1 (LibraryNotLoaded and ERR_NVGPUCTRPERM are the machine's, not the kernel's)"; }
  # Issue 35's two open questions first. Chapter 09's steps d to g ran within 3 % of each other at
  # P3 (promise.csv), where the model separates them by their consumers' chains: do their consumers
  # wait at the ring's full mbarriers (the tiles late), at the wgmma waits, or at the turns? And
  # chapter 08's steps at the 32k context, modelled 1.35 to 1.9 times too fast but paged: how long
  # do their loads wait, and how many hit L1? Each warp state's share (WarpStateStats: every stall
  # reason), the hit rates and the clock the SMs ran at, one process per chapter; then steps f's and
  # g's stalls instruction by instruction (the source page, SASS).
  local why_list=("${use[@]}" "${extra[@]}")
  # --print-units base: bytes and nanoseconds whatever their size (model_vs_published reads them).
  local why=(--clock-control none --csv --print-units base --section WarpStateStats --metrics "$(IFS=,; echo "${why_list[*]}")")
  echo "== ncu: chapter 09, steps c to g at P3"
  # shellcheck disable=SC2086
  ncu "${why[@]}" --log-file "$out/ncu_ch09_steps.csv" "$build/bin/flashsteps" run -v tma_ring -v warp_specialized \
    -v ping_pong -v intra_overlap -v causal_skip --reps 0 $p3 --dtype fp16 || failed "chapter 09"
  # Steps c and g at P1 (d = 64), where each scheduler holds three of step c's blocks: counted by
  # its wgmma rather than by the TMA boxes one thread asks for, step c models 1.19 of the H200's
  # time there and after step g, where the H200 ran it in 0.75 of step g's time
  # (notes/performance_model.md, "Chapter 09's SASS"). Their issue-active share and stalls say how
  # much of three blocks' chains the schedulers hide.
  # And step h, three consumers at d = 64 where step g has two (notes/09, "Step h"): the model has
  # them equal at P1, where two thirds of its last Q tile are rows past Lq; and step i, step h's
  # blocks made persistent (notes/09, "Step i"), whose SMs should be busy for more of the time.
  echo "== ncu: chapter 09, steps c, g, h and i at P1"
  # shellcheck disable=SC2086
  ncu "${why[@]}" --log-file "$out/ncu_ch09_p1.csv" "$build/bin/flashsteps" run -v tma_ring -v causal_skip \
    -v head_dim_tiles -v persistent --reps 0 $p1 --dtype fp16 || failed "chapter 09 at P1"
  # Step g at the Figure 5 shape at N = 512, where every K/V tile comes from DRAM: between N = 512
  # and 2048 the model's tile loop is 0.73 of the H200's, and what its blocks do once 0.95
  # (model_vs_published's second line); its DRAM bytes check the model's re-reads by the grid's
  # order (0.60 GB read there, model.h), and its stalls say what those tiles wait for.
  # Step i there, whose blocks' fill and drain run under their next Q tile's work (the model: 1.36
  # times step h's rate; results/model-h100/hopper_step_i.txt).
  echo "== ncu: chapter 09, steps g and i at B = 32, H = 16, N = 512, d = 128"
  ncu "${why[@]}" --log-file "$out/ncu_ch09_n512.csv" "$build/bin/flashsteps" run -v causal_skip -v persistent --reps 0 -b 32 -H 16 \
    -n 512 -d 128 --dtype fp16 || failed "chapter 09 at N = 512"
  echo "== ncu: chapter 08, steps b to i at a 32k context"
  ncu "${why[@]}" --kernel-name regex:decode_kernel --log-file "$out/ncu_ch08_steps.csv" "$build/bin/flashsteps" \
    decode -b 1 --cache-len 32768 \
    --reps 0 -v decode_kernel -v split_kv -v gqa_packed -v paged -v kv_together -v rows_ahead \
    -v occupancy -v score_per_lane || failed "chapter 08"
  echo "== ncu: chapter 09, steps f and g, stalls by SASS instruction"
  # shellcheck disable=SC2086
  ncu --clock-control none --csv --section SourceCounters --page source --print-source sass \
    --log-file "$out/ncu_ch09_sass.csv" "$build/bin/flashsteps" run -v intra_overlap -v causal_skip --reps 0 \
    $p3 --dtype fp16 || failed "chapter 09's SASS"
  # Chapter 04's step c, modelled a quarter to a third short of the H200's time at P1 and P3,
  # where step d is within 11 % (model_vs_published, "chapter 04's steps c and d"): what its warps
  # wait for, beside step d's, with the hit rates of its O, l and m round trips. Two candidates the
  # warp states tell apart: waits on those round trips (long_scoreboard, lg_throttle) and instruction
  # fetch (no_instruction: a pair's loop runs about 7 000 distinct SASS instructions, 112 KB, where
  # step d's tile runs about 6 100, 98 KB; sass_sm90.inc's parts).
  echo "== ncu: chapter 04, steps c and d at P3"
  # shellcheck disable=SC2086
  ncu "${why[@]}" --log-file "$out/ncu_ch04_steps.csv" "$build/bin/flashsteps" run -v register_tiles -v o_in_registers \
    --reps 0 $p3 --dtype fp16 || failed "chapter 04"
  # --list: a variant's line is "  name  description (best)"; its "supports" line and the closing
  # legend "(best): ..." are not variants.
  for v in $("$build/bin/flashsteps" run --list | awk '/^  [^ ]/ && / \(best\)$/ {print $1}'); do
    echo "== ncu: $v"
    ncu --clock-control none --csv --print-units base --log-file "$out/ncu_$v.csv" --metrics "$metric_list" \
      "$build/bin/flashsteps" run -v "$v" --reps 0 -b 4 -H 16 -n 4096 -d 128 --dtype fp16 || failed "$v"
  done
  # Last, in what time is left: step g and chapter 06's balanced with is_causal at the same shape.
  # Since 61c01c4 step g launches its heads a section at a time (32 MiB of K and V each), and the
  # model reads its K and V once there (about 0.2 GB, notes/09_hopper.md, "What comes next"), where
  # the H200's one-section grid read them again; balanced keeps one section.
  echo "== ncu: causal_skip and balanced with is_causal"
  ncu --clock-control none --csv --print-units base --log-file "$out/ncu_causal_sections.csv" --metrics "$metric_list" \
    "$build/bin/flashsteps" run -v causal_skip -v balanced --causal --reps 0 -b 4 -H 16 -n 4096 -d 128 --dtype fp16 ||
    failed "causal_skip and balanced with is_causal"
  return $status
}

# Chapter 05's steps g, h and chapter 06 at d = 96, 128 with the book's 4 warps per block (Br = 128)
# against 8 (Br = 256, as the H200 ran them; 05_flash_v2/flash_v2.h): a second build of the C
# interface with -DFLASHSTEPS_D128_WARPS=8, then each build in its own process beside the flash
# backend (FA2), so each ratio is same-run; d = 64 is the same kernel in both builds, the control for
# process-to-process noise. Rows: tune_d128_warps4.csv and tune_d128_warps8.csv.
tune() {
  local w8=$build-d128w8
  configure "$w8" -DFLASHSTEPS_D128_WARPS=8 || return 1
  cmake --build "$w8" -j "$(nproc)" --target flashsteps_capi || return 1
  local warps lib status=0
  for warps in 4 8; do
    lib=$build/lib/libflashsteps_capi.so
    if [ "$warps" = 8 ]; then lib=$w8/lib/libflashsteps_capi.so; fi
    echo "== d = 96, 128 with $warps warps per block ($lib)"
    python3 "$root/tools/bench_torch_sdpa.py" --chapters "$lib" --variants best:05,06 --backends flash \
      --shapes flash --dtype fp16 --reps 20 --budget 75 --csv "$out/tune_d128_warps$warps.csv" || status=1
  done
  return $status
}

# A few files to carry home: the summary, the device, the CSVs, and one archive of everything.
# tar's exit 1 says a file changed while it read it (a process a timeout left behind, still
# writing): the archive holds what it read, and the pack goes on; past 1 the logs stay unpacked.
# The device tool brings back at most 8 files of 16 MiB each.
pack() {
  local f rc=0
  (cd "$out" && tar -czf /tmp/gpu_session_all.tar.gz ./*) || rc=$?
  if ((rc > 1)); then
    note "pack: tar failed (exit $rc): the logs stay in $out, unpacked"
    return 0
  fi
  mv /tmp/gpu_session_all.tar.gz "$out/all.tar.gz"
  ((rc == 0)) || note "pack: a file changed while tar read it (exit 1): all.tar.gz holds what it read"
  (($(stat -c %s "$out/all.tar.gz") <= 16 * 1024 * 1024)) ||
    note "pack: all.tar.gz is over 16 MiB, more than the device tool brings back"
  for f in "$out"/*; do
    case ${f##*/} in
      summary.txt | all.tar.gz | promise.csv | sdpa.csv | decode.csv | backward.csv | masks.csv | device.txt) ;;
      *) rm -rf "$f" ;;
    esac
  done
}

case "${1:-}" in
  all)
    shift
    steps=$(IFS=,; echo "${all_steps[*]}")
    while [ $# -gt 0 ]; do
      case $1 in
        --budget) budget=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        *) echo "gpu_session.sh all: unknown argument $1 (--budget S, --steps a,b,...)" >&2; exit 2 ;;
      esac
    done
    [[ $budget =~ ^[0-9]+$ ]] || { echo "gpu_session.sh all: --budget needs whole seconds, not '$budget'" >&2; exit 2; }
    for s in ${steps//,/ }; do
      [[ " ${all_steps[*]} " == *" $s "* ]] ||
        { echo "gpu_session.sh all: no step '$s' (the steps: ${all_steps[*]})" >&2; exit 2; }
    done
    wanted() { [[ ",$steps," == *",$1,"* ]]; }
    : >"$out/summary.txt"
    note "gpu_session.sh all: commit $FLASHSTEPS_COMMIT, budget $budget s, steps $steps, $(date -u +%FT%TZ)"
    device_info >"$out/device.txt" 2>&1 || true
    [ "$FLASHSTEPS_COMMIT" != unknown ] ||
      note "WARNING: no commit for the rows (this tree has no .git of its own): set FLASHSTEPS_COMMIT to the hash, written out in the command"
    [ -d "$root/.deps/usr" ] ||
      note "no .deps/usr: Eigen, Catch2 and CLI11 come from the system or not at all (stage .deps where the commit was made and carry it)"
    note "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo none); building for $(gpu_archs)"
    # Always built: on a machine still warm from the last call Ninja finds little or nothing to do,
    # and an edited tree (a tuning call) is rebuilt. Without a build no step can run.
    # FLASHSTEPS_REUSE_BUILD=1 (a second call on a machine still warm) keeps the build the last call
    # made: a copied tree can come with new timestamps, which would rebuild everything.
    if [ -n "${FLASHSTEPS_REUSE_BUILD:-}" ] && [ -x "$build/bin/flashsteps" ]; then
      note "reusing the build in $build"
      last_rc=0
    else
      step build 300 configure_and_build
    fi
    if [ "$last_rc" != 0 ]; then
      note "no step runs without the build (build.log)"
      pack
      exit 1
    fi
    start_clocks
    trap stop_clocks EXIT
    # The tests that need the GPU (the static and plotting tests ran where the commit was made).
    ! wanted tests || step tests 100 ctest --test-dir "$build" --output-on-failure \
      -R '^(simt|reference|cli|variants|backward|decode|capi)$'
    # The targets first: chapters 05 and 06 against FlashAttention-2 (and the other backends) at
    # d = 64 and 128, N = 512..16k, causal and not, in one process; then the early chapters, smaller.
    ! wanted sdpa || step sdpa 130 python3 "$root/tools/bench_torch_sdpa.py" \
      --chapters "$build/lib/libflashsteps_capi.so" --variants all:05,06 --shapes flash --dtype fp16 --reps 20 \
      --budget 110 --csv "$out/sdpa.csv"
    ! wanted promise || step promise 150 promise_shapes
    # What the model is checked by (issue 35): ncu before the chapters already measured once.
    ! wanted ncu || step ncu 120 profile
    ! wanted softmax || step softmax 20 "$build/bin/02_fused_softmax" -n 4096 --csv "$out/chapters.csv"
    ! wanted backward || step backward 90 backward_bench
    # Chapter 08 beside SDPA (enable_gqa) and flash_attn_with_kvcache when installed: first at
    # FlashInfer's published shapes (B = 1, 32 query heads each with its own KV head, 8k and 32k
    # keys), where the model is 15 points above FlashInfer's share at 8k
    # (results/model-h100/model_vs_published.txt): chapter 08's share measured there says whether
    # that is the model's miss or FlashInfer's kernel's; then Llama-3-8B's heads, B = 1, 8, 64,
    # contexts 1k to 128k, one new token, and four under causal. The small problems first: a step
    # that runs out of time keeps them.
    ! wanted decode || step decode 90 sh -c "python3 '$root/tools/bench_torch_decode.py' --chapters \
      '$build/lib/libflashsteps_capi.so' --batches 1 --contexts 8192,32768 --kv-heads 32 --csv '$out/decode.csv' \
      --reps 20 && python3 '$root/tools/bench_torch_decode.py' --chapters \
      '$build/lib/libflashsteps_capi.so' --csv '$out/decode.csv' --reps 20 &&
      python3 '$root/tools/bench_torch_decode.py' --chapters '$build/lib/libflashsteps_capi.so' --batches 8 \
      --contexts 8192 --new-tokens 4 --csv '$out/decode.csv' --reps 20"
    # Chapter 10 beside FlexAttention, SDPA with the mask as a tensor and varlen_attn (FlashAttention-2's
    # varlen kernel): N = 8k, d = 128 under each pattern and score mod, and packed batches.
    # Its --budget (checked between problems, each compiling FlexAttention anew) leaves 40 s of the
    # step's time for the problem under way.
    masks_time=$(($(left) < 120 ? $(left) : 120))
    ! wanted masks || step masks 120 python3 "$root/tools/bench_torch_masks.py" \
      --chapters "$build/lib/libflashsteps_capi.so" --reps 20 --budget $((masks_time > 50 ? masks_time - 40 : 10)) \
      --csv "$out/masks.csv"
    ! wanted sdpa_early || step sdpa_early 50 python3 "$root/tools/bench_torch_sdpa.py" \
      --chapters "$build/lib/libflashsteps_capi.so" --variants best --shapes small --dtype fp16 --reps 20 \
      --budget 40 --csv "$out/sdpa.csv"
    ! wanted timing || step timing 45 "$build/bin/flashsteps_timing"
    ! wanted sanitizers || step sanitizers 60 sanitize
    ! wanted tune || step tune 240 tune
    stop_clocks
    grep -h "^\[" "$out/sdpa.log" "$out/sdpa_early.log" 2>/dev/null | tail -60 >>"$out/summary.txt" || true
    grep -hE "test cases|assertions|tests passed|ERROR SUMMARY|RACECHECK SUMMARY|FAILED" "$out"/*.log 2>/dev/null |
      sort | uniq -c >>"$out/summary.txt" || true
    pack
    note "done in $((SECONDS - start)) s; files: $(cd "$out" && ls | tr '\n' ' ')"
    if ((${#unfinished[@]})); then
      note "left for the next call: tools/gpu_session.sh all --steps $(IFS=,; echo "${unfinished[*]}") (at once, on the machine still warm: FLASHSTEPS_REUSE_BUILD=1 before it keeps this build, and --budget S under the device time left less a minute, the call's timeout_s at least S + 30)"
    fi
    ;;
  test)
    device_info >"$out/device.txt" 2>&1 || true
    configure_and_build >"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; exit 1; }
    status=0
    ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -25 || status=1
    sanitize >"$out/sanitizer.log" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAILED" "$out/sanitizer.log" | sort | uniq -c
    exit $status
    ;;
  bench)
    shift
    "$build/bin/flashsteps" bench --csv "$out/chapters.csv" "$@" 2> >(tee -a "$out/bench.log" >&2)
    ;;
  sdpa)
    shift
    python3 "$root/tools/bench_torch_sdpa.py" --chapters "$build/lib/libflashsteps_capi.so" --csv "$out/sdpa.csv" "$@" \
      2> >(tee -a "$out/sdpa.log" >&2)
    ;;
  torch)
    shift
    python3 "$root/tools/bench_torch_sdpa.py" --csv "$out/torch.csv" "$@" 2> >(tee -a "$out/torch.log" >&2)
    ;;
  backward)
    backward_bench 2> >(tee -a "$out/backward.log" >&2)
    ;;
  _run)  # step's way to run one of the functions above under `timeout`
    shift
    "$@"
    ;;
  plots)
    python3 "$root/tools/plot_speedups.py" "$out"/*.csv --out "$out" --readme "$root/README.md"
    ;;
  *)
    sed -n '2,23p' "$0"
    exit 2
    ;;
esac
