#!/usr/bin/env python3
"""hopper_resources.py: what ptxas made of chapter 09's kernels for sm_90a, until kernel_resources.py
(sm_90, chapters 05 and 06) reads sm_90a's SASS too.

For each kernel of 09_hopper/*.cu: registers, stack frame and spills (ptxas -v), and the Hopper
instructions of its SASS (nvdisasm: HGMMA by shape, WARPGROUP.ARRIVE and DEPBAR, UTMALDG (TMA), USETMAXREG,
SYNCS (mbarrier), BAR.SYNC and BAR.ARV (barriers, named ones included)),
counted statically: each instruction once where it appears in the code. A compiler report: nothing
runs on a GPU.

  tools/hopper_resources.py                               # print the table
  tools/hopper_resources.py --out results/static-sm90a    # write 09_hopper_ptxas.txt there
  tools/hopper_resources.py --check                       # exit 1 if a kernel spills or has a stack frame
  tools/hopper_resources.py --check --ptxas-logs build-gpu   # the same from the gpu build's own ptxas
                                                          # reports (<object>.ptxas), compiling nothing

Exit 2 without nvcc or nvdisasm (nvdisasm: on PATH, in the toolkit, or the PyPI package
nvidia-cuda-nvdisasm, as kernel_resources.py finds it).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402  (find_tool, ROOT, commit_of_tree)

FLAGS = ["-DFLASHSTEPS_GPU=1", "-DSIMT_COUNTERS=0", "-I.", "-Icommon", "-Icommon/simt/include", "-O2", "-DNDEBUG",
         "-std=c++20", "-arch=sm_90a", "-cubin", "-Xptxas", "-v"]


def report(nvcc, nvdisasm, src, tmp):
    cubin = os.path.join(tmp, os.path.basename(src) + ".cubin")
    r = subprocess.run([nvcc] + FLAGS + [os.path.relpath(src, kr.ROOT), "-o", cubin], cwd=kr.ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        kr.fail("nvcc failed on %s:\n%s" % (src, r.stderr[-3000:]))
    sass = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout
    counts, cur = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s*\.section\s+\.text\.([^,]+),", line)
        if m:
            cur = m.group(1)
            counts[cur] = {}
            continue
        if cur is None:
            continue
        for op in re.findall(r"\b(HGMMA\.[0-9x]+\.F32(?:\.BF16)?|WARPGROUP\.\w+|BAR\.(?:SYNC|ARV)|UTMALDG\.\w+|SYNCS\.\w+|USETMAXREG[.\w]*)\b", line):
            counts[cur][op] = counts[cur].get(op, 0) + 1
    rows = []
    for entry in re.split(r"ptxas info\s+: Compiling entry function '", r.stdout + r.stderr)[1:]:
        name = entry.split("'")[0]
        regs = int(re.search(r"Used (\d+) registers", entry).group(1))
        frame, st, ld = map(int, re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                                           entry).groups())
        dem = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
        m = re.search(r"(\w+)_kernel<(__half|__nv_bfloat16), (\d+)", dem)
        kernel, dtype, d = (m.group(1), "fp16" if m.group(2) == "__half" else "bf16", int(m.group(3))) if m else (dem, "-", 0)
        rows.append({"file": os.path.basename(src), "kernel": kernel, "dtype": dtype, "d": d, "registers": regs,
                     "frame": frame, "spill": "%d/%d" % (st, ld), "sass": counts.get(name, {})})
    return rows


def check_logs(build):
    """The gpu build's ptxas reports of chapter 09 (cmake/ptxas_log.sh): 1 if a kernel spills or has a
    stack frame, else 0."""
    if not os.path.isdir(build):
        kr.fail("--ptxas-logs %s: no such build folder" % build)
    logs = sorted(glob.glob(os.path.join(build, "**", "09_hopper*", "**", "*.ptxas"), recursive=True))
    if not logs:
        kr.fail("no ptxas reports of chapter 09 under %s: is it a gpu build (cmake/ptxas_log.sh)?" % build, 1)
    kernels = {}
    for f in logs:
        kernels.update(kr.parse_ptxas(open(f).read()))
    names = kr.demangle(sorted({m for m, _ in kernels}))
    bad = 0
    for (mangled, arch), k in sorted(kernels.items()):
        if k["stack"] or k["spill_st"] or k["spill_ld"]:
            bad += 1
            print("FAIL %s %s: %d bytes stack frame, %d/%d bytes spill stores/loads" %
                  (names[mangled], arch, k["stack"], k["spill_st"], k["spill_ld"]))
    print("%d kernels of chapter 09 checked in %d ptxas reports: %d with spills or a stack frame" %
          (len(kernels), len(logs), bad))
    if not kernels:
        kr.fail("the reports name no kernel", 1)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder to write 09_hopper_ptxas.txt into")
    ap.add_argument("--check", action="store_true", help="exit 1 if a kernel spills or has a stack frame")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin)")
    ap.add_argument("--nvdisasm", help="nvdisasm to use")
    ap.add_argument("--ptxas-logs", metavar="BUILD", help="with --check: check the ptxas reports a gpu build left")
    a = ap.parse_args()
    if a.ptxas_logs:
        if not a.check or a.out:
            kr.fail("--ptxas-logs goes with --check alone")
        sys.exit(check_logs(a.ptxas_logs))
    nvcc = kr.find_tool("nvcc", a.nvcc)
    nvdisasm = kr.find_tool("nvdisasm", a.nvdisasm)
    if not nvcc or not nvdisasm:
        kr.fail("needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm)")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted(glob.glob(os.path.join(kr.ROOT, "09_hopper", "*.cu"))):
            rows += report(nvcc, nvdisasm, src, tmp)
    rows.sort(key=lambda r: (r["file"], r["kernel"], r["d"], r["dtype"]))
    lines = ["# ptxas -v and the SASS of chapter 09's kernels, sm_90a (a compiler report: nothing here ran on a GPU)",
             "# the sources of commit %s, %s:" % (kr.commit_of_tree(), version),
             "#   nvcc " + " ".join(FLAGS) + " 09_hopper/<file>.cu   (tools/hopper_resources.py)",
             "# SASS: HGMMA by shape, WARPGROUP.ARRIVE/DEPBAR, UTMALDG, SYNCS, USETMAXREG, BAR.SYNC and BAR.ARV in nvdisasm's listing, each counted once",
             "# where it appears (static counts; the tile loop's body runs once per K/V tile).",
             "%-10s %-8s %-5s %4s %9s %7s %13s  %s" % ("file", "kernel", "dtype", "d", "registers", "stack B",
                                                       "spill st/ld B", "SASS")]
    for r in rows:
        sass = ", ".join("%s x%d" % (k, v) for k, v in sorted(r["sass"].items()))
        lines.append("%-10s %-8s %-5s %4d %9d %7d %13s  %s" % (r["file"], r["kernel"], r["dtype"], r["d"], r["registers"],
                                                              r["frame"], r["spill"], sass))
    text = "\n".join(lines) + "\n"
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "09_hopper_ptxas.txt"), "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if a.check:
        bad = [r for r in rows if r["frame"] or r["spill"] != "0/0"]
        for r in bad:
            print("hopper_resources: %s %s %s d=%d spills (%s B) or has a stack frame (%d B)" %
                  (r["file"], r["kernel"], r["dtype"], r["d"], r["spill"], r["frame"]), file=sys.stderr)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
