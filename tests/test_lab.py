#!/usr/bin/env python3
"""test_lab.py: a lab profiles kernels of its own (common/lab/lab.h, labs/sgemm).

  python3 tests/test_lab.py build-counters/bin/lab_sgemm   # exit 0 pass, 1 fail, 77 skipped

The SGEMM lab's counts at n = 4096, extrapolated from its emulated sizes, against counts worked out
by hand; its issue term from the SASS its build compiled for each GPU's architecture, and none on a
GPU it was not built for (the book's own SASS data does not know its kernels); bad input refused
with exit status 2, by the lab and by tools/lab_sass.py (an output that is a folder or in a missing
folder, a --nvcc that is not an executable file) before it writes anything; an edited copy of its
kernels compiled by tools/lab_sass.py gets other instruction counts than the original; and the
depfile tools/lab_sass.py writes for the build names the lab's kernel and the header it includes, in
the repository or outside it (an edit to either compiles the lab's SASS again).
Without nvdisasm at build time the lab has no SASS: the rest is checked, and the test reports itself
skipped (77) when that passes.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
N = 4096
GPUS = {"A100 SXM4 80GB": "sm_80", "RTX A6000": "sm_86", "GeForce RTX 4090": "sm_89"}


def run(lab, *args):
    return subprocess.run([lab, *args], capture_output=True, text=True, timeout=600)


def rows(text):
    """{(kernel section, GPU name): (SASS label, issue us, time us, bound)} from the lab's tables."""
    out, section = {}, None
    for line in text.splitlines():
        m = re.match(r"(\w+) at n = \d+:", line)
        if m:
            section = m.group(1)
        m = re.match(r"\s{4}(.+?)\s{2,}(sm_\d+|no SASS)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+\s+(\w+)", line)
        if m and section:
            out[(section, m.group(1).strip())] = (m.group(2), float(m.group(4)), float(m.group(5)), m.group(6))
    return out


def counted(text, section, what):
    """A count of a kernel's "counted:" line."""
    block = text.split(section + " at n = ", 1)[1]
    m = re.search(r"([0-9.e+]+) " + what, block)
    return float(m.group(1)) if m else None


def sass_tool_refusals(check):
    """tools/lab_sass.py refuses an output it cannot write (--out or --depfile a folder, or in a missing
    folder) and a --nvcc or --nvdisasm that is not an executable file with exit 2 and one sentence,
    before it writes anything or looks for another tool; no nvcc runs."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "lab.cpp")
        for args, says in [(("--out", tmp), "a folder, not a file"),
                           (("--out", out, "--depfile", tmp), "a folder, not a file"),
                           (("--out", out, "--depfile", os.path.join(tmp, "missing", "lab.d")), "no such folder"),
                           (("--out", out, "--nvcc", os.path.join(tmp, "missing", "nvcc")), "not an executable file"),
                           (("--out", out, "--nvdisasm", tmp), "not an executable file")]:
            r = subprocess.run([sys.executable, str(ROOT / "tools" / "lab_sass.py"), "--gpu", "a100", *args,
                                str(ROOT / "labs" / "sgemm" / "kernels.cu")], capture_output=True, text=True, timeout=60)
            check(r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr and os.listdir(tmp) == [],
                  f"lab_sass.py {' '.join(args[2:] or args)}: exit 2, \"{says}\", nothing written "
                  f"(exit {r.returncode}: {r.stderr.strip()[-160:]}; {os.listdir(tmp)})")


def main():
    if len(sys.argv) != 2:
        print("usage: test_lab.py path/to/lab_sgemm")
        return 2
    if not os.path.isfile(sys.argv[1]):
        print(f"{sys.argv[1]}: no such file: build the lab_sgemm target (the counters tests' build builds it)")
        return 1
    lab = sys.argv[1]
    check = Checks("lab")
    start = time.time()
    r = run(lab)
    seconds = time.time() - start
    sass = "no SASS for" not in r.stderr  # the build had nvcc and nvdisasm
    check(r.returncode == 0, f"lab_sgemm runs, its outputs match the reference (exit {r.returncode}): {r.stderr.strip()[:300]}")
    check(seconds < 120, f"it models in under 2 minutes ({seconds:.1f} s)")
    table = rows(r.stdout)
    for section in ("naive", "tiled"):
        for gpu, arch in GPUS.items():
            row = table.get((section, gpu))
            if sass:
                check(row is not None and row[0] == arch and row[1] > 0,
                      f"{section} on the {gpu}: an issue term from the lab's {arch} SASS (got {row})")
            else:
                check(row is not None and row[0] == "no SASS" and row[1] == 0,
                      f"{section} on the {gpu}: without the build's SASS, no issue term, marked (got {row})")
    # By hand: the naive kernel's warp reads one float of A (a broadcast) and 32 of B per k, so
    # 2 n^3 / 32 load requests; the tiled kernel's warps wait at 2 barriers per 32 keys of k, and a
    # launch has n^2 / 32 warps.
    check(counted(r.stdout, "naive", "global load requests") == float("%.4g" % (2 * N ** 3 / 32)),
          "naive: 2 n^3 / 32 global load requests at n = 4096, extrapolated exactly")
    check(counted(r.stdout, "tiled", "barriers") == float("%.4g" % (2 * (N // 32) * N * N / 32)),
          "tiled: 2 (n / 32) n^2 / 32 barriers at n = 4096")
    # A GPU the lab was not built for: no SASS, said so, and the book's table does not stand in.
    r = run(lab, "--gpu", "h100")
    row = rows(r.stdout).get(("naive", "H100 SXM5"))
    check(r.returncode == 0 and row is not None and row[0] == "no SASS" and row[1] == 0 and
          ("no sm_90 SASS" in r.stderr or not sass),
          f"--gpu h100: modelled without an issue term, marked, and said on stderr (got {row}, {r.stderr.strip()[:200]})")
    for args, what in [(("--gpu", "nope"), "unknown GPU"), (("--emulated", "32,64"), "too few sizes"),
                       (("--n", "0"), "n = 0"), (("--emulated", "32,64,96,128,100"), "a size that is not a multiple of 32"),
                       (("--emulated", "32,64,64,96,128"), "a size twice"),
                       (("--gpu", "a100,"), "an empty item"), (("--emulated", "32,64,96,128,160,"), "an empty item"),
                       (("--emulated", "32,64,96,128,2048"), "a size past the emulator's 512")]:
        r = run(lab, *args)
        check(r.returncode == 2 and r.stderr.strip() and not r.stdout.strip().startswith("naive at"),
              f"{' '.join(args)}: {what} refused with exit 2 and a message (exit {r.returncode}: {r.stderr.strip()[:120]})")
    sass_tool_refusals(check)
    if not sass:
        print(r.stderr.strip() + "\nthe SASS checks skipped: this build had no SASS for the lab "
              "(pip install nvidia-cuda-nvdisasm, rebuild)")
        code = check.exit_code()
        return code or 77
    # An edited kernel gets its own counts: the naive loop with one multiply more.
    with tempfile.TemporaryDirectory() as tmp:
        src = ROOT / "labs" / "sgemm"
        for f in ("kernels.cu", "kernels.h"):
            shutil.copy(src / f, tmp)
        text = (Path(tmp) / "kernels.cu").read_text()
        edited = text.replace("sum += A[row * n + k] * B[k * n + col];", "sum += A[row * n + k] * B[k * n + col] * 1.5f;")
        check(edited != text, "the fixture's edit applies to labs/sgemm/kernels.cu")
        (Path(tmp) / "edited.cu").write_text(edited)
        counts = {}
        for name in ("kernels.cu", "edited.cu"):
            out = os.path.join(tmp, name + ".cpp")
            p = subprocess.run([sys.executable, str(ROOT / "tools" / "lab_sass.py"), "--gpu", "a100", "--out", out,
                                os.path.join(tmp, name)], capture_output=True, text=True)
            m = re.search(r'"sm_80", \{"sgemm::\(anonymous namespace\)::naive_kernel[^"]*", \d+, \w+, (?:\{[^{}]*\{[^{}]*\}[^{}]*\}, ){5}\{\{(\d+),',
                          open(out).read() if p.returncode == 0 else "")
            counts[name] = int(m.group(1)) if m else None
        check(None not in counts.values() and counts["kernels.cu"] != counts["edited.cu"],
              f"an edited copy of the kernel gets another loop count from its own SASS ({counts})")
        # The build's rule reruns when the lab's kernel or a header it includes changes: its depfile
        # names both (every file nvcc read but the system's headers).
        out = os.path.join(tmp, "lab.cpp")
        subprocess.run([sys.executable, str(ROOT / "tools" / "lab_sass.py"), "--gpu", "a100", "--out", out, "--depfile",
                        out + ".d", str(src / "kernels.cu")], capture_output=True, text=True)
        rule = open(out + ".d").read() if os.path.exists(out + ".d") else ""
        target, _, deps = rule.partition(":")
        check(target.strip() == out and {str(src / "kernels.cu"), str(src / "kernels.h")} <= set(deps.split()),
              f"the lab's depfile names its table, its kernel and the header it includes ({rule.strip()[:200]})")
        # And for a lab outside the repository (the copy in tmp): its own header, where it lives.
        subprocess.run([sys.executable, str(ROOT / "tools" / "lab_sass.py"), "--gpu", "a100", "--out", out, "--depfile",
                        out + ".d", os.path.join(tmp, "edited.cu")], capture_output=True, text=True)
        deps = open(out + ".d").read().partition(":")[2].split() if os.path.exists(out + ".d") else []
        check({os.path.realpath(os.path.join(tmp, f)) for f in ("edited.cu", "kernels.h")} <= {os.path.realpath(d) for d in deps},
              f"a lab outside the repository: its depfile names its own header ({' '.join(deps)[:200]})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
