#!/usr/bin/env python3
"""arch_resources.py: ptxas's registers, spills and stack frame of one kernel file per chapter (01 to
08), for every GPU architecture the book runs on, from sm_75 (T4) to sm_120 (RTX 5090).

Each file of FILES (one or two per chapter, by ptxas's sm_90 counts the most register-hungry) goes
through nvcc's front end once per PTX a build embeds, and ptxas makes each target's SASS from the PTX
that target gets: compute_80's for sm_80, 86 and 89 (the default build's sm_80 SASS runs on 86 and
89; a native build's compute_86 PTX is compute_80's but for its .target line), compute_90's for
sm_90, 100 and 120 (the default build's, which sm_100 and sm_120 compile when they load it: the same
source through compute_80's PTX spills where this does not), and, for chapters 01 to 04, which run on
sm_75 too, compute_75's for sm_75 (a T4 build's: sm_80's instructions behind SIMT_BEFORE_SM80 become
traps there).
Threads per block: the PTX's .maxntid, which __launch_bounds__ sets; a kernel without one may be
launched with any block size, so it is checked at 1024 threads, the most a block may have.

A kernel fails when its registers for that many threads pass 65536 (the register file of one SM
from sm_75 to sm_120, and what one block may use; registers are allocated per warp in units of 256),
when it spills, or when it has a stack frame. Above head dim 128 spills and stack frames are
reported, not failed, as tools/kernel_resources.py --check does (chapter 05's d = 256 spills on
sm_90 too). A compiler report: nothing runs on a GPU.

  tools/arch_resources.py --check                          # exit 1 if a kernel is over a limit
  tools/arch_resources.py --all --out results/static-archs # every kernel of every file of FILES
  tools/arch_resources.py --check --archs 86,89 --files 05_flash_v2/split_q.cu
Exit 2 on bad input or without nvcc (kernel_resources.py's search: PATH, /usr/local/cuda/bin).
"""
import argparse
import concurrent.futures
import csv
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402  (find_tool, parse_ptxas, demangle, describe, commit_of_tree)

# (file, the oldest architecture its chapter runs on, what --check compiles of it by default: "all" its
# kernels, a pattern on their names for some, "none" for a file only --all compiles). The default keeps
# the CTest to a few minutes on two cores; each chapter's most register-hungry file is in it, or, where
# ptxas takes minutes per architecture on it, in --all (the results/static-archs tables).
FILES = [
    ("01_naive_attention/register_blocked.cu", 75, "all"),
    ("02_fused_softmax/softmax_exp2.cu", 75, "all"),
    ("03_tiled_softmax/blocked_softmax_pv.cu", 75, "all"),
    ("04_flash_v1/algorithm1.cu", 75, "all"),
    ("04_flash_v1/register_tiles.cu", 75, "none"),  # 255 registers; about 50 s of ptxas per architecture
    ("05_flash_v2/split_q.cu", 80, "all"),
    ("05_flash_v2/lean_loop.cu", 80, "none"),
    ("06_causal/skip_tiles.cu", 80, r"<__half, 128,"),  # the four policies at the largest d the check covers
    ("07_backward/tensor_cores.cu", 80, "all"),
    ("07_backward/causal.cu", 80, "none"),
    ("08_decoding/split_kv.cu", 80, "all"),
    ("08_decoding/paged.cu", 80, "none"),
    ("08_decoding/kv_together.cu", 80, "none"),
    ("08_decoding/rows_ahead.cu", 80, "none"),
    ("08_decoding/occupancy.cu", 80, "none"),
    ("08_decoding/score_per_lane.cu", 80, "none"),
]
ARCHS = [75, 80, 86, 89, 90, 100, 120]
FLAGS = ["-std=c++20", "-O2", "-DNDEBUG", "-DFLASHSTEPS_GPU=1", "-DSIMT_COUNTERS=0", "-I.", "-Icommon",
         "-Icommon/simt/include"]
REGISTER_FILE, MAX_BLOCK_THREADS = 65536, 1024


def fail(msg, code=2):
    print("arch_resources: " + msg, file=sys.stderr)
    sys.exit(code)


def block_threads(ptx):
    """{mangled: threads per block} from the PTX's .maxntid or .reqntid; kernels without one are absent."""
    out = {}
    for chunk in ptx.split(".entry ")[1:]:
        name = chunk.split("(", 1)[0].strip()
        head = chunk.split("{", 1)[0]
        m = re.search(r"\.(?:maxntid|reqntid)\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", head)
        if m:
            out[name] = int(m.group(1)) * int(m.group(2) or 1) * int(m.group(3) or 1)
    return out


def registers_needed(regs, threads):
    """What a block of `threads` threads takes of the register file: 256-register units per warp."""
    per_warp = -(-regs * 32 // 256) * 256
    return per_warp * -(-threads // 32)


def short_name(demangled):
    """'split_q_kernel<__half, 96>' from 'void ch05::(anonymous namespace)::split_q_kernel<__half, 96>(...)'."""
    name = re.sub(r"^void ", "", demangled)
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # cut the parameter list: the last top-level parentheses
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            name = name[:i]
            break
    return re.sub(r"(?:\b(?:ch\d\d|attn)|\(anonymous namespace\))::", "", name)


def virtual_arch(arch):
    """The PTX a build gives a target: compute_75 for sm_75, compute_80 for sm_8x, compute_90 after."""
    return 75 if arch < 80 else 80 if arch < 90 else 90


def compile_file(nvcc, ptxas, src, virtual, targets, pattern, tmp):
    """[(mangled, arch, ptxas's numbers, threads)] of the kernels of src whose demangled names match
    pattern ("all": every one), from its PTX for compute_<virtual>."""
    start = time.monotonic()
    ptx_path = os.path.join(tmp, "%s.compute_%d.ptx" % (os.path.basename(src), virtual))
    r = subprocess.run([nvcc] + FLAGS + ["-ptx", "-arch=compute_%d" % virtual, src, "-o", ptx_path], cwd=kr.ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("nvcc -ptx failed on %s:\n%s" % (src, r.stderr[-3000:]), 1)
    ptx = open(ptx_path).read()
    threads = block_threads(ptx)
    entries = []
    if pattern != "all":
        names = kr.demangle(sorted(re.findall(r"\.entry\s+([^\s(]+)", ptx)))
        entries = ["-e", ",".join(m for m, d in names.items() if re.search(pattern, d))]
        if entries[1] == "":
            fail("%s: no kernel matches %r" % (src, pattern), 1)
    rows = []
    for arch in targets:
        r = subprocess.run([ptxas, "-arch=sm_%d" % arch, "-v"] + entries + [ptx_path, "-o", os.devnull],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("ptxas -arch=sm_%d failed on %s:\n%s" % (arch, src, r.stderr[-3000:]), 1)
        for (mangled, _), k in kr.parse_ptxas(r.stdout + r.stderr).items():
            rows.append((mangled, arch, k, threads.get(mangled)))
    print("arch_resources: %s, compute_%d to %s: %d kernels in %.0f s" % (
        src, virtual, ",".join("sm_%d" % a for a in targets), len(rows) // len(targets), time.monotonic() - start))
    return rows


def collect(nvcc, ptxas, files, archs, jobs):
    """Every (file, kernel, arch) row; one front-end pass per (file, virtual architecture)."""
    work = []
    for src, oldest, pattern in files:
        for virtual in sorted({virtual_arch(a) for a in archs if a >= oldest}):
            work.append((src, virtual, [a for a in archs if a >= oldest and virtual_arch(a) == virtual], pattern))
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        done = list(pool.map(lambda w: (w[0], compile_file(nvcc, ptxas, w[0], w[1], w[2], w[3], tmp)), work))
    names = kr.demangle(sorted({m for _, rows in done for m, _, _, _ in rows}))
    out = []
    for src, rows in done:
        for mangled, arch, k, threads in rows:
            what = kr.describe(names[mangled])
            bounded = threads is not None
            threads = threads or MAX_BLOCK_THREADS
            regs = k.get("registers", 0)
            row = {"file": src, "kernel": short_name(names[mangled]), "d": what[2] if what else 0, "arch": "sm_%d" % arch,
                   "registers": regs, "threads": threads, "launch_bounds": "yes" if bounded else "no",
                   "register_file": registers_needed(regs, threads), "spill_st": k["spill_st"], "spill_ld": k["spill_ld"],
                   "stack": k["stack"]}
            row["verdict"] = verdict(row)
            out.append(row)
    out.sort(key=lambda r: (r["file"], r["kernel"], int(r["arch"][3:])))
    return out


def verdict(row, max_d=128):
    """'ok', or what is over a limit: 'registers', 'spills', 'stack' ('reported' above max_d)."""
    over = []
    if row["register_file"] > REGISTER_FILE:
        over.append("registers")
    if row["spill_st"] or row["spill_ld"]:
        over.append("spills")
    if row["stack"]:
        over.append("stack")
    if over == [] or (row["d"] > max_d and "registers" not in over):
        return "ok" if not over else "reported (d > %d): %s" % (max_d, " ".join(over))
    return "FAIL: " + " ".join(over)


def write_out(out, rows, version, archs, complete):
    os.makedirs(out, exist_ok=True)
    cols = ["file", "kernel", "arch", "registers", "threads", "launch_bounds", "register_file", "spill_st", "spill_ld",
            "stack", "verdict"]
    with open(os.path.join(out, "resources.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    lines = ["# Registers, spills and stack frames per GPU architecture, chapters 01 to 08", "",
             "Written by `tools/arch_resources.py%s --out results/static-archs` at commit %s on %s." % (
                 " --all" if complete else "", kr.commit_of_tree(), datetime.date.today()),
             "Compiler: %s, nvcc's front end then ptxas -v. Each target from the PTX a build gives it:" % version,
             "compute_75's for sm_75 (chapters 01 to 04), compute_80's for sm_80, 86, 89, compute_90's for sm_90,",
             "100, 120. A compiler report, not a measurement: nothing here ran on a GPU.", "",
             "The files of tools/arch_resources.py's FILES: each chapter's most register-hungry, and, where ptxas",
             "takes minutes per architecture on that one, a cheaper one, which the CTest arch_resources compiles.",
             "`resources.csv` has every kernel instantiation of each file on each architecture%s." % (
                 "" if complete else " (of the files the CTest compiles)"),
             "threads: the PTX's .maxntid (`__launch_bounds__`), or 1024, the most a block may have, for a kernel",
             "without one. register_file: what one block of that many threads takes of the 65536 registers of an",
             "SM (256-register units per warp); over it, the launch fails. A spill or a stack frame fails the check",
             "at head dims up to 128 and is reported above (tools/kernel_resources.py's rule).", "",
             "| file | arch | kernels | most registers | most of the register file | spills | stack frames | over a limit |",
             "|---|---|---|---|---|---|---|---|"]
    for src, _, _ in FILES:
        for arch in archs:
            rs = [r for r in rows if r["file"] == src and r["arch"] == "sm_%d" % arch]
            if not rs:
                continue
            lines.append("| %s | sm_%d | %d | %d | %.0f %% | %d | %d | %s |" % (
                src, arch, len(rs), max(r["registers"] for r in rs),
                100.0 * max(r["register_file"] for r in rs) / REGISTER_FILE,
                sum(1 for r in rs if r["spill_st"] or r["spill_ld"]), sum(1 for r in rs if r["stack"]),
                ", ".join(sorted({"%s (%s)" % (r["kernel"], r["verdict"]) for r in rs if r["verdict"] != "ok"})) or "none"))
    open(os.path.join(out, "README.md"), "w").write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("\n"):])
    ap.add_argument("--out", help="folder to write resources.csv and README.md into")
    ap.add_argument("--check", action="store_true", help="exit 1 when a kernel is over a limit")
    ap.add_argument("--archs", default=",".join(map(str, ARCHS)),
                    help="compute capabilities, comma-separated (default %(default)s)")
    ap.add_argument("--files", help="kernel files, comma-separated, from FILES (default: those --check compiles)")
    ap.add_argument("--all", action="store_true", help="every kernel of every file of FILES, the slow ones too")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin); ptxas beside it")
    ap.add_argument("--jobs", type=int, default=2, help="files compiled at once (default 2)")
    a = ap.parse_args()
    if not a.out and not a.check:
        fail("nothing to do: give --out FOLDER, --check, or both")
    if not re.fullmatch(r"\d+(,\d+)*", a.archs) or not set(map(int, a.archs.split(","))) <= set(ARCHS):
        fail("--archs %s: give compute capabilities from %s, comma-separated" % (a.archs, ",".join(map(str, ARCHS))))
    archs = sorted(set(map(int, a.archs.split(","))))
    files = [(f, oldest, "all" if a.all else pattern) for f, oldest, pattern in FILES if a.all or pattern != "none"]
    if a.files:
        known = {f: oldest for f, oldest, _ in FILES}
        unknown = [f for f in a.files.split(",") if f not in known]
        if unknown:
            fail("--files: %s not among %s" % (", ".join(unknown), ", ".join(known)))
        files = [(f, known[f], "all") for f in a.files.split(",")]
    if a.out and os.path.exists(a.out) and not os.path.isdir(a.out):
        fail("--out %s is a file, not a folder" % a.out)
    if a.jobs < 1:
        fail("--jobs %d: files compiled at once, at least 1" % a.jobs)
    nvcc = kr.find_tool("nvcc", a.nvcc)
    if not nvcc:
        fail("nvcc not found (give --nvcc)")
    ptxas = os.path.join(os.path.dirname(nvcc), "ptxas")
    if not os.path.exists(ptxas):
        fail("no ptxas beside %s" % nvcc)
    supported = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True).stdout.split()
    missing = [a for a in archs if "sm_%d" % a not in supported]
    for arch in missing:
        print("arch_resources: this nvcc cannot compile for sm_%d: skipped" % arch)
    archs = [a for a in archs if a not in missing]
    if not archs:
        fail("none of the architectures asked for is one this nvcc compiles for", 1)

    rows = collect(nvcc, ptxas, files, archs, a.jobs)
    if a.out:
        version = next((l for l in subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.splitlines()
                        if "release" in l), "nvcc")
        write_out(a.out, rows, version, archs, a.all)
    bad = [r for r in rows if r["verdict"].startswith("FAIL")]
    for r in bad:
        print("%s %s %s %s: %d registers x %d threads = %d of %d, %d/%d bytes spill stores/loads, %d bytes stack frame" % (
            r["verdict"], r["file"], r["kernel"], r["arch"], r["registers"], r["threads"], r["register_file"], REGISTER_FILE,
            r["spill_st"], r["spill_ld"], r["stack"]))
    print("%d kernel instantiations of %d files checked for %s: %d over a limit" % (
        len(rows), len(files), ", ".join(sorted({r["arch"] for r in rows}, key=lambda a: int(a[3:]))), len(bad)))
    if a.check and not rows:
        fail("no kernel found to check", 1)
    sys.exit(1 if a.check and bad else 0)


if __name__ == "__main__":
    main()
