#!/usr/bin/env python3
"""test_gpu_session.py: tools/gpu_session.sh `all`, the one call a session with a GPU makes first,
run here without a GPU: cmake, ctest, nvidia-smi, nvcc, ncu, compute-sanitizer, python3 and the
book's binaries are stand-ins that log how they were called. A GPU session is rare and short; this
checks before one that every step reaches its programs with the arguments it means, that the build is
for the GPU nvidia-smi reports, that the budget and --steps behave, and that what comes back fits the
device's limits (at most 8 files).
"""
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gpu_session.sh"
STEPS = ["tests", "sdpa", "promise", "ncu", "softmax", "backward", "decode", "masks", "sdpa_early", "timing", "sanitizers",
         "tune"]

# One stand-in for every program: it logs its name and arguments, and does what the script reads back.
STUB = r"""#!/usr/bin/env bash
echo "$(basename "$0") $*" >>"$STUB_LOG"
case $(basename "$0") in
  cmake)
    if [ "$1" = --build ]; then  # a build leaves the binaries and the library the steps run
      [ -n "${STUB_BUILD_FAILS:-}" ] && { echo "error: the stand-in build fails"; exit 1; }
      mkdir -p "$2/bin" "$2/lib"
      for b in flashsteps 02_fused_softmax 07_backward flashsteps_timing; do cp "$0" "$2/bin/$b"; done
      : >"$2/lib/libflashsteps_capi.so"
    fi ;;
  ctest) sleep "${STUB_CTEST_SECONDS:-0}" ;;
  nvidia-smi)
    [ "$1" = --query-gpu=compute_cap ] && printf '%b' "${STUB_COMPUTE_CAP:-}"
    # The clock sampler (-lms): three samples busy, one idle, as nvidia-smi's csv,noheader,nounits prints them.
    [[ " $* " == *" -lms 200 "* ]] && printf '%s\n' "2026/12/07 10:00:00.000, 1980, 2619, 512.30, 61, 100" \
      "2026/12/07 10:00:00.200, 345, 2619, 71.02, 35, 0" "2026/12/07 10:00:00.400, 1755, 2619, 699.90, 70, 98" \
      "2026/12/07 10:00:00.600, 1980, 2619, 520.00, 62, 57"
    ;;
  ncu) [ "$1" = --query-metrics ] && printf 'Device GH100\ngpu__time_duration\ndram__bytes_read\nlts__t_sector_hit_rate\n' ;;
  flashsteps)  # `run --list` as the binary prints it (common/harness/cli.cpp, print_list), shortened
    [ "$1 $2" = "run --list" ] && cat <<'LIST'
01_naive_attention
  naive                three kernels: S = scale*QK^T, a three-pass softmax per row, O = PV; S and P in global memory
                       supports fp32, fp16, bf16; d 1..256; causal; masks
  register_blocked     both products register-blocked: 8 x 8 outputs per thread, 128-bit shared loads (best)
                       supports fp32, fp16, bf16; d 1..256; causal; masks

05_flash_v2
  rows_32              32 query rows per warp: every K/V fragment feeds 4 mma; tiles per head dim
                       supports fp16, bf16; d 32, 64, 96, 128, 256; causal; masks
  lean_loop            the inner loop lean: unrolled copies, zero-fill and mask on the last tile only, scale in exp2's FFMA, ex2.approx.ftz (best)
                       supports fp16, bf16; d 32, 64, 96, 128, 256; causal; masks

(best): the variant the chapter ends on, the one `flashsteps tour` runs
LIST
    ;;
esac
exit 0
"""


def main():
    check = Checks("gpu_session")
    with tempfile.TemporaryDirectory(prefix="flashsteps-gpu-session-") as tmp:
        work = Path(tmp)
        stubs = work / "stubs"
        stubs.mkdir()
        for name in ("cmake", "ctest", "nvidia-smi", "nvcc", "ncu", "compute-sanitizer", "python3"):
            (stubs / name).write_text(STUB)
            (stubs / name).chmod(stat.S_IRWXU)
        log = work / "calls.log"
        build = work / "build-gpu"
        env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", STUB_LOG=str(log), FLASHSTEPS_COMMIT="c0ffee",
                   FLASHSTEPS_GPU_BUILD=str(build), STUB_COMPUTE_CAP="9.0\n")

        def calls_since(offset):
            return log.read_text()[offset:] if log.exists() else ""

        def session(out, *args, **extra):
            return subprocess.run(["bash", str(SCRIPT), "all", *args], env=dict(env, OUT=str(out), **extra),
                                  capture_output=True, text=True, timeout=120)

        out = work / "out1"
        r = session(out, "--budget", "200")
        summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
        calls = log.read_text() if log.exists() else ""
        check(r.returncode == 0, f"all exits 0 (got {r.returncode}: {r.stderr.strip()[-300:]})")
        for name in ["build", *STEPS]:
            check(f"ok      {name} (" in summary, f"step {name} ran and ended well")
        ran = [line.split()[1] for line in summary.splitlines() if line.startswith("ok      ")]
        check(ran == ["build", *STEPS], f"the steps run in their order, ncu right after promise (got {ran})")
        check("FAILED" not in summary and "SKIPPED" not in summary, "no step failed or was skipped")
        check("-DCMAKE_CUDA_ARCHITECTURES=90 " in calls and "-DCMAKE_BUILD_TYPE=Release" in calls,
              "the build is configured for the GPU nvidia-smi reports (9.0: sm_90), Release")
        check(f"ctest --test-dir {build} --output-on-failure -R ^(simt|reference|cli|variants|backward|decode|capi)$"
              in calls, "the tests that need the GPU")
        promise = [line for line in calls.splitlines() if line.startswith("flashsteps run -b ")]
        check(len(promise) == 3 and all("--reps 5 --warmup 1 " in line for line in promise)
              and "flashsteps decode -b 1 --cache-len 32768" in calls,
              "every variant at P1, P2 and P3 (5 runs after 1: chapter 04 takes seconds a run there), and chapter 08 "
              "at a 32k context (promise.csv)")
        for tool in ("memcheck", "racecheck", "synccheck"):
            check(f"compute-sanitizer --tool {tool} --error-exitcode 9 {build}/bin/flashsteps run" in calls
                  and f"compute-sanitizer --tool {tool} --error-exitcode 9 {build}/bin/flashsteps backward" in calls,
                  f"compute-sanitizer {tool} on the forward and the backward")
        ncu = [line for line in calls.splitlines() if line.startswith("ncu --clock-control")]
        best = [line for line in ncu if "-b 4 -H 16 -n 4096" in line and "--causal" not in line]
        profiled = [line.split(" -v ", 1)[-1].split(" ", 1)[0] for line in best]
        check(profiled == ["register_blocked", "lean_loop"]
              and all("--metrics gpu__time_duration.sum,dram__bytes_read.sum " in line for line in best),
              f"ncu on each best variant, nothing else (not the list's \"(best):\" legend), with the metrics "
              f"this ncu knows only (got {profiled})")
        sections = [line for line in ncu if "--causal" in line]
        check(len(sections) == 1 and ncu[-1] == sections[0]
              and "-v causal_skip -v balanced --causal --reps 0 -b 4 -H 16 -n 4096 -d 128" in sections[0]
              and "--metrics gpu__time_duration.sum,dram__bytes_read.sum " in sections[0],
              f"ncu last on step g's sections beside balanced with is_causal, the DRAM bytes among its metrics "
              f"(got {sections})")
        states = [line for line in ncu if "--section WarpStateStats" in line]
        check(len(states) == 5 and all("--metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct "
                                       in line for line in states)
              and "-v tma_ring -v warp_specialized -v ping_pong -v intra_overlap -v causal_skip --reps 0 -b 1 -H 16 -n 4096"
              in states[0] and "-v tma_ring -v causal_skip -v head_dim_tiles -v persistent --reps 0 -b 16 -H 32 -n 1024 -d 64"
              in states[1] and "-v causal_skip -v persistent --reps 0 -b 32 -H 16 -n 512 -d 128" in states[2]
              and "decode -b 1 --cache-len 32768 --reps 0 -v decode_kernel" in states[3]
              and "-v register_tiles -v o_in_registers --reps 0 -b 1 -H 16 -n 4096 -d 128" in states[4]
              and any("--section SourceCounters --page source --print-source sass" in line
                      and "-v intra_overlap -v causal_skip" in line for line in ncu),
              f"issue 35's profiles: every warp state of chapter 09's steps c to g at P3, of steps c, g, h and i at P1, of "
              f"steps g and i at N = 512 and of "
              f"chapter 08's steps at 32k, of chapter 04's steps c and d at P3, "
              f"the hit rates this ncu knows, steps f and g by SASS instruction (got {states})")
        sdpa = [line for line in calls.splitlines() if "bench_torch_sdpa.py" in line]
        check(any("--variants all:05,06 --shapes flash" in line for line in sdpa), "chapters 05, 06 beside SDPA")
        check("-DFLASHSTEPS_D128_WARPS=8" in calls and "--target flashsteps_capi" in calls,
              "tune builds the 8-warp C interface")
        check(any(f"{build}-d128w8/lib/libflashsteps_capi.so" in line and "tune_d128_warps8.csv" in line for line in sdpa)
              and any(f"{build}/lib/libflashsteps_capi.so" in line and "tune_d128_warps4.csv" in line for line in sdpa),
              "tune runs each build in its own process, into its own CSV")
        check("07_backward -v tensor_cores" in calls and "bench_torch_sdpa_backward.py" in calls,
              "the backward beside PyTorch's")
        check(f"compute-sanitizer --tool racecheck --error-exitcode 9 {build}/bin/flashsteps decode" in calls,
              "compute-sanitizer on the decoding steps")
        check("bench_torch_decode.py --chapters" in calls and "--new-tokens 4" in calls,
              "decoding beside SDPA and flash_attn_with_kvcache")
        check("--batches 1 --contexts 8192,32768 --kv-heads 32" in calls,
              "decoding at FlashInfer's published shapes (one sequence, 8k and 32k keys, 32 KV heads)")
        check(f"bench_torch_masks.py --chapters {build}/lib/libflashsteps_capi.so" in calls and "masks.csv" in calls,
              "chapter 10 beside FlexAttention and varlen_attn")
        check(any(line.startswith("nvidia-smi --query-gpu=timestamp,clocks.sm,") and " -lms 200" in line
                  for line in calls.splitlines())
              and "SM clock while busy (nvidia-smi every 200 ms, utilization >= 50 %): median 1980 MHz, lowest 1755, "
                  "highest 1980, 3 samples" in summary,
              "the SMs' clock sampled while the steps run, its median, lowest and highest while busy in the summary "
              f"(the idle sample left out; got {[line for line in summary.splitlines() if 'clock' in line]})")
        files = sorted(p.name for p in out.iterdir())
        check(len(files) <= 8 and {"summary.txt", "device.txt", "all.tar.gz"} <= set(files),
              f"at most 8 files come back, the summary and the archive among them (got {files})")
        if (out / "all.tar.gz").exists():
            with tarfile.open(out / "all.tar.gz") as t:
                names = {Path(n).name for n in t.getnames()}
            check({f"{s}.log" for s in STEPS} <= names, "the archive holds every step's log")
            check({"clocks.csv", "clocks_end.txt"} <= names, "the archive holds the clock's samples and its end state")

        # A second call: only the steps asked for; a budget that runs out names what is left, as
        # the next call's --steps. Its machine has two kinds of GPU, one of them twice.
        out = work / "out2"
        offset = len(log.read_text())
        r = session(out, "--budget", "20", "--steps", "tests,ncu,tune", STUB_CTEST_SECONDS="12",
                    STUB_COMPUTE_CAP="12.0\n8.6\n8.6\n")
        summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
        configures = [line for line in calls_since(offset).splitlines() if line.startswith("cmake -S")]
        check(configures and all("-DCMAKE_CUDA_ARCHITECTURES=86;120 " in line for line in configures),
              f"two kinds of GPU: built for each, once (got {configures})")
        check(r.returncode == 0 and "ok      build (" in summary, "the second call builds (incrementally) first")
        check("ok      tests (" in summary and "SKIPPED ncu" in summary and "SKIPPED tune" in summary
              and "sdpa" not in summary.split("steps", 2)[-1].split("\n", 1)[1],
              "only the steps asked for run, within the budget")
        check("left for the next call: tools/gpu_session.sh all --steps ncu,tune" in summary,
              "the summary names the steps left, as a command")

        # A build that fails stops the pass: no step runs against an old build, and the logs come back.
        # Its nvidia-smi names no compute capability: the build asks CMake for `native`.
        out = work / "out4"
        offset = len(log.read_text())
        r = session(out, "--budget", "100", STUB_BUILD_FAILS="1", STUB_COMPUTE_CAP="")
        summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
        check("-DCMAKE_CUDA_ARCHITECTURES=native " in calls_since(offset),
              "no compute capability from nvidia-smi: CMake's native (cmake/Backend.cmake resolves it)")
        check(r.returncode == 1 and "FAILED  build" in summary and "no step runs without the build" in summary
              and "ok      tests" not in summary and (out / "all.tar.gz").exists(),
              f"a failed build: exit 1, no step runs, the logs packed (got {r.returncode}: {summary[-200:]})")

        for argv, says in ((["--steps", "tests,bogus"], "no step 'bogus'"), (["--budget", "ten"], "whole seconds"),
                           (["--frobnicate"], "unknown argument")):
            r = session(work / "out3", *argv)
            check(r.returncode == 2 and says in r.stderr, f"all {' '.join(argv)}: exit 2, \"{says}\" (got {r.returncode})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
