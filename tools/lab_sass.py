#!/usr/bin/env python3
"""lab_sass.py: a lab's SASS data, compiled from its own kernels when the lab is built.

A lab (cmake/Lab.cmake, common/lab/lab.h) models its kernels on the GPUs it names. Their issue term,
latency floor and registers come from what nvcc makes of the lab's .cu files for each of those GPUs'
architectures: this tool compiles them (nvcc -cubin), reads the SASS (nvdisasm) and counts it by
control flow as tools/sass_issue.py counts the book's kernels (issue_profile: the blocks outside the
loops, the loop that waits at __syncthreads, each other loop), with no mask code set apart (a lab's
kernel has no mask path). It writes a C++ file defining lab::kSass, a row per kernel and
architecture.

  tools/lab_sass.py --gpu a100 --gpu rtx4090 --out build/labs/sgemm_sass.cpp labs/sgemm/kernels.cu

Each GPU is a key of common/gpus/gpus.h, whose row gives its architecture (a100: sm_80). With
--depfile, the files nvcc read are listed for the build (an edited header recompiles the lab's SASS).

Without nvcc or nvdisasm (pip install nvidia-cuda-nvdisasm) it still writes the file, with no rows and
the reason, which the lab prints on stderr: its rows are then modelled without the issue, FMA and
latency terms, marked. A --nvcc or --nvdisasm named is not looked for elsewhere: one that is not an
executable file is bad input.
Exit 2 on bad input (checked before anything is written); 1 when nvcc rejects a source.
"""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402
import sass_issue as si  # noqa: E402


def fail(msg, code=2):
    """One sentence on stderr, named after this tool, and the exit code (2: bad input)."""
    print("lab_sass.py: " + msg, file=sys.stderr)
    sys.exit(code)


def gpu_archs():
    """{key: "sm_XY"} from common/gpus/gpus.h's rows (its key, then its compute capability)."""
    text = open(os.path.join(kr.ROOT, "common", "gpus", "gpus.h")).read()
    return {k: "sm_%s%s" % (a, b) for k, a, b in
            re.findall(r'\.key = "([^"]+)".*?\.cc_major = (\d+), \.cc_minor = (\d+)', text, re.S)}


def write(out, rows, sources, missing, gpus):
    lines = ["// %s: the lab's SASS data (common/lab/lab.h), written by tools/lab_sass.py at build time. Do not edit."
             % os.path.basename(out),
             '#include "lab/lab.h"', ""]
    if rows:
        lines += ["namespace {", "// {arch, {kernel, registers, lockstep, %s, {inner, ...}, producer's loops}}: each part"
                  " {instructions, {seen: %s}, cycles, cycles from DRAM, FP32, IMAD, release}" % (", ".join(si.PARTS), ", ".join(k for k, _ in si.KINDS)),
                  "const lab::SassRow kRows[] = {"]
        lines += ["    {%s, %s}" % (si.c_string(arch), si.row_text(name, r).rstrip(",")) + "," for (arch, name), r in sorted(rows.items())]
        lines += ["};", "}  // namespace", ""]
        lines.append("const lab::SassData lab::kSass = {kRows, %d, %s, %s, %s};" % (len(rows), si.c_string(sources), si.c_string(missing), si.c_string(gpus)))
    else:
        lines.append("const lab::SassData lab::kSass = {nullptr, 0, %s, %s, %s};" % (si.c_string(sources), si.c_string(missing), si.c_string(gpus)))
    si.write_generated(out, "\n".join(lines) + "\n", missing)  # never half-written; rerun while something is missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("\n"):])
    ap.add_argument("sources", nargs="+", help="the lab's .cu files")
    ap.add_argument("--gpu", action="append", required=True, help="a GPU to compile for, a key of common/gpus/gpus.h (a100); repeatable")
    ap.add_argument("--out", required=True, help="the C++ file to write")
    ap.add_argument("--depfile", help="also write the files nvcc read, as a Makefile rule for --out")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin)")
    ap.add_argument("--nvdisasm", help="nvdisasm to use (default: on PATH, the CUDA toolkit or the PyPI package)")
    a = ap.parse_args()
    known = gpu_archs()
    for g in a.gpu:
        if g not in known:
            fail("--gpu %s: not a GPU of common/gpus/gpus.h (%s)" % (g, ", ".join(known)))
    archs = sorted({known[g] for g in a.gpu})
    gpus = ",".join(a.gpu)
    for src in a.sources:
        if not os.path.isfile(src):
            fail("%s: no such file" % src)
    # Every output path and every tool named before anything is written: no half-done output.
    for option, path in (("--out", a.out), ("--depfile", a.depfile)):
        if path is None:
            continue
        if not path or os.path.isdir(path):
            fail("%s %s: a folder, not a file: name the file to write" % (option, path or "''"))
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            fail("%s %s: no such folder" % (option, path))
        if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
            fail("%s %s: cannot be written (permission denied)" % (option, path))
    if a.depfile and os.path.abspath(a.depfile) == os.path.abspath(a.out):
        fail("--depfile %s: the same file as --out: name another" % a.depfile)
    for option, given in (("--nvcc", a.nvcc), ("--nvdisasm", a.nvdisasm)):
        if given is not None and not (os.path.isfile(given) and os.access(given, os.X_OK)):
            fail("%s %s: not an executable file (leave %s out to look for one on PATH)" % (option, given or "''", option))
    names = ", ".join(os.path.relpath(os.path.abspath(s), kr.ROOT) for s in a.sources)
    nvcc, nvdisasm = kr.find_tool("nvcc", a.nvcc), kr.find_tool("nvdisasm", a.nvdisasm)
    if not nvcc or not nvdisasm:
        why = "no SASS for %s: %s not found" % (names, "nvcc" if not nvcc else "nvdisasm (pip install nvidia-cuda-nvdisasm)")
        write(a.out, {}, names, why, gpus)
        print(why)
        if a.depfile:
            open(a.depfile, "w").write("%s: %s\n" % (a.out, " ".join(os.path.abspath(s) for s in a.sources)))
        return
    rows, deps = {}, set()
    with tempfile.TemporaryDirectory() as tmp:
        for src in a.sources:
            deps |= si.files_read(nvcc, os.path.abspath(src)) | {os.path.abspath(src)}
            for arch in archs:
                where = os.path.join(tmp, arch + re.sub(r"\W", "_", os.path.abspath(src)))
                os.makedirs(where)
                log, sass = kr.disassemble(nvcc, nvdisasm, os.path.abspath(src), arch, where)
                ptxas = kr.parse_ptxas(log)
                demangled = kr.demangle(sorted(sass))
                for m, instrs in sass.items():
                    data = si.issue_profile(instrs, set())
                    data["registers"] = ptxas.get((m, arch), {}).get("registers", 0)
                    rows[(arch, demangled[m])] = data
                    print("%-6s %-90s %s, %d registers" % (arch, demangled[m][:90], data["loops"], data["registers"]))
    write(a.out, rows, names, "", gpus)
    if a.depfile:
        open(a.depfile, "w").write("%s: %s\n" % (si.make_path(a.out), " ".join(si.make_path(d) for d in sorted(deps))))


if __name__ == "__main__":
    main()
