#!/usr/bin/env python3
"""test_gpu_targets.py: tools/gpu_targets.py and tools/model_vs_gpu.py on a hand-made results folder.

  python3 tests/test_gpu_targets.py      # exit 0 pass, 1 fail

The ratios are PyTorch's time over the chapter's on the same shape, met at the target and not under
it; chapter 08's share is its fastest step's GB/s over the copy bandwidth the logs measured (their
median); chapter 09's is its fastest measured step that passed (not step a), named; a target without
rows says "not measured"; modelled rows are never read; a missing folder, one that holds none of the
files it reads, a sdpa.csv that is a folder, a CSV with another header and a row whose shape or time
is not a number are refused with exit code 2. model_vs_gpu.py pairs a modelled row with the measured row of the same
variant and shape only, and counts the pairs within +-15 %; it refuses a CSV with another header.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "gpu_targets.py"
MODEL = ROOT / "tools" / "model_vs_gpu.py"
HEAD = "device,driver,cuda,commit,timestamp,chapter,variant,dtype,B,H,Lq,Lk,d,causal,mask,median_ms,min_ms,tflops,gbps," \
       "extra_bytes,max_err,pass,kind,bound,mods\n"


def row(chapter, variant, n, d, causal, ms, gbps=0, kind="measured", b=1, h=16, ok=1):
    return f"GPU,1,13.0,c0ffee,t,{chapter},{variant},fp16,{b},{h},{n},{n},{d},{causal},none,{ms},{ms},1,{gbps},0,0,{ok},{kind},,none\n"


def main():
    check = Checks("gpu_targets")
    with tempfile.TemporaryDirectory(prefix="flashsteps-gpu-targets-") as tmp:
        f = Path(tmp)
        (f / "logs").mkdir()
        (f / "sdpa.csv").write_text(HEAD + row("05_flash_v2", "lean_loop", 4096, 64, "none", 2.0)
                                    + row("torch", "sdpa_flash", 4096, 64, "none", 2.5)
                                    + row("05_flash_v2", "lean_loop", 8192, 128, "none", 4.0)
                                    + row("torch", "sdpa_flash", 8192, 128, "none", 3.0)
                                    + row("05_flash_v2", "lean_loop", 2048, 64, "none", 9.0)
                                    + row("torch", "sdpa_flash", 2048, 64, "none", 1.0)
                                    + row("09_hopper", "causal_skip", 4096, 128, "none", 1.0, kind="modelled")
                                    + row("09_hopper", "persistent", 4096, 128, "none", 1.1)
                                    + row("09_hopper", "head_dim_tiles", 4096, 128, "none", 1.3)
                                    + row("09_hopper", "causal_skip", 4096, 128, "none", 0.2, ok=0)
                                    + row("09_hopper", "fa2_baseline", 4096, 128, "none", 0.5)
                                    + row("torch", "sdpa_cudnn", 4096, 128, "none", 1.0))
        (f / "promise.csv").write_text(HEAD + row("08_decoding", "split_kv", "32768.0", 128, "none", 0.3, gbps=1500)
                                       + row("08_decoding", "gqa_packed", 32768, 128, "none", 0.2, gbps=900))
        (f / "logs" / "a.log").write_text("x = 1% of a device copy (4000 GB/s, measured now)\n" * 2)
        (f / "logs" / "b.log").write_text("y = 1% of a device copy (9000 GB/s, measured now)\n")
        r = subprocess.run([sys.executable, str(TOOL), str(f)], capture_output=True, text=True, timeout=60)
        out = r.stdout
        lines = out.splitlines()
        check(r.returncode == 0, f"exit 0 (got {r.returncode}: {r.stderr.strip()[-200:]})")
        check(any("d=64 N=4096" in l and "1.25x" in l and l.endswith("yes") for l in lines),
              "05 at 2.0 ms against FA2's 2.5: 1.25x, met")
        check(any("d=128 N=8192" in l and "0.75x" in l and l.endswith("no") for l in lines),
              "05 at 4.0 ms against FA2's 3.0: 0.75x, not met")
        check(not any("N=2048" in l for l in lines), "05's target is for N >= 4k: N = 2048 is not a row")
        check(any(l.startswith("09") and "persistent" in l and "0.91x (1.100 ms against 1.000 ms)" in l and l.endswith("yes")
                  for l in lines),
              "09: its fastest measured step (persistent, 1.1 ms; step h took 1.3) against cuDNN's 1.0, met, the step "
              "named; not the modelled row's 1.0 ms, nor a step that failed its check (0.2), nor step a's 0.5 "
              "(chapter 05's kernel)")
        check(any(l.startswith("08") and "gqa_packed" in l and "22% (900 of 4000 GB/s)" in l and l.endswith("no")
                  for l in lines), "08: the fastest step's GB/s over the logs' median copy (4000 GB/s)")
        check(any(l.startswith("07") and "not measured" in l for l in lines), "no backward rows: not measured")
        r = subprocess.run([sys.executable, str(TOOL), str(f), "--markdown"], capture_output=True, text=True, timeout=60)
        first = r.stdout.splitlines()[0] if r.stdout else ""
        check(r.returncode == 0 and "GPU, driver 1, CUDA 13.0, commit c0ffee" in first and "sdpa_flash" not in first,
              "--markdown names what its measured rows ran on, once, above the table (got: %s)" % first[:120])
        r = subprocess.run([sys.executable, str(TOOL), str(f / "missing")], capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "is not a folder" in r.stderr and "Traceback" not in r.stderr,
              "a missing folder: exit 2, one line")
        (f / "model.csv").write_text(HEAD + row("05_flash_v2", "lean_loop", 4096, 64, "none", 1.0, kind="modelled")
                                     + row("05_flash_v2", "lean_loop", 8192, 128, "none", 3.6, kind="modelled")
                                     + row("05_flash_v2", "lean_loop", 4096, 128, "none", 1.0, kind="modelled"))
        r = subprocess.run([sys.executable, str(MODEL), str(f / "model.csv"), str(f / "sdpa.csv")], capture_output=True,
                           text=True, timeout=60)
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and any("N=4096 d=64" in l and l.split()[-1] == "2.00" for l in lines)
              and any("N=8192 d=128" in l and l.split()[-1] == "1.11" for l in lines),
              "measured / modelled for each shape in both files (2.0 / 1.0, 4.0 / 3.6)")
        check(not any("N=4096 d=128" in l for l in lines), "a modelled shape never measured makes no line")
        check(r.stdout.strip().endswith("1 of 2 within +-15 % of the GPU"), "one of the two within 15 %")

        def refused(tool, argv, says, what):
            r = subprocess.run([sys.executable, str(tool), *map(str, argv)], capture_output=True, text=True, timeout=60)
            check(r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr and not r.stdout,
                  f"{tool.name} {what}: exit 2 and \"{says}\", nothing printed (got {r.returncode}: "
                  f"{(r.stderr.strip().splitlines() or [''])[-1]})")

        foreign = f / "foreign"
        foreign.mkdir()
        (foreign / "sdpa.csv").write_text("name,age\nada,36\n")
        says = "its header is not one of this project's results CSVs"
        refused(TOOL, [foreign], f"{foreign / 'sdpa.csv'}: {says}", "a sdpa.csv with another header")
        refused(MODEL, [foreign / "sdpa.csv", f / "sdpa.csv"], f"{foreign / 'sdpa.csv'}: {says}",
                "a modelled CSV with another header")
        refused(MODEL, [f / "model.csv", foreign / "sdpa.csv"], f"{foreign / 'sdpa.csv'}: {says}",
                "a measured CSV with another header")
        empty = f / "empty"
        empty.mkdir()
        refused(TOOL, [empty], "holds none of the files it reads", "an empty folder")
        (empty / "sdpa.csv").mkdir()
        refused(TOOL, [empty], "is not a file", "a sdpa.csv that is a folder")
        only = f / "only"
        only.mkdir()
        (only / "backward.csv").write_text(HEAD)
        r = subprocess.run([sys.executable, str(TOOL), str(only)], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "not measured" in r.stdout, "one CSV of the four, no rows: exit 0, not measured")
        odd = f / "odd"
        odd.mkdir()
        (odd / "sdpa.csv").write_text(HEAD + row("05_flash_v2", "lean_loop", 4096, 64, "none", "nan"))
        refused(TOOL, [odd], "has median_ms = 'nan', not a number", "a measured time that is not a number")
        (odd / "sdpa.csv").write_text(HEAD + row("05_flash_v2", "lean_loop", "4k", 64, "none", 1.0))
        refused(TOOL, [odd], "has Lq = '4k', not a number", "a shape that is not a number")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
