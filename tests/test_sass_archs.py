#!/usr/bin/env python3
"""test_sass_archs.py: the counters build compiles the kernels' SASS for another GPU's architecture
(sass_issue.py --archs, FLASHSTEPS_SASS_ARCHS), each source's rows cached by hash.

  python3 tests/test_sass_archs.py      # exit 0 pass, 1 fail, 77 skipped (no nvcc or nvdisasm)

On a copy of the repository's tools/, common/ and chapters in a temporary folder, with chapter 02's
four kernel files and chapter 09's (which run on sm_90 alone) the only .cu files: for sm_80, chapter
02's rows with registers, a parameter-dependent row (is_causal's) beside the common path's, none of
chapter 09's, and a depfile naming what nvcc read; the same again, nothing compiled; softmax_warp.cu
edited, that file alone compiled and its row longer; the header all four include edited, all four
compiled again; without nvdisasm, no rows and the reason; bad arguments refused with exit 2 and
nothing written.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks
from sass_fixture import copy_tree, instructions

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import kernel_resources as kr  # noqa: E402

KERNEL = "ch02::(anonymous namespace)::softmax_warp_kernel(attn::AttentionParams, float const*, float*)"
EDIT = ("- m) * inv_l;", "- m) * inv_l * 1.5f;")


def rows(text):
    """{row name: (registers, the instructions of its parts summed)} of a generated table."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'\s*\{"([^"]+)", (\d+), ', line)
        if m:
            out[m.group(1)] = (int(m.group(2)), instructions(line))
    return out


def main():
    if not kr.find_tool("nvcc", None) or not kr.find_tool("nvdisasm", None):
        print("skipped: nvcc or nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
        return 77
    check = Checks("sass_archs")
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        copy_tree(tree)
        for cu in tree.glob("[0-9][0-9]_*/*.cu"):  # the headers stay: the tools read AttentionParams through them
            if not cu.parent.name.startswith(("02_", "09_")):
                cu.unlink()
        out, cache, dep = Path(tmp) / "sass_archs.cpp", Path(tmp) / "cache", Path(tmp) / "sass_archs.d"

        def archs(*args):
            r = subprocess.run([sys.executable, str(tree / "tools" / "sass_issue.py"), "--archs", str(out), *args],
                               capture_output=True, text=True)
            return r, out.read_text() if out.exists() else ""

        base = ["--arch", "sm_80", "--cache", str(cache), "--depfile", str(dep)]
        r, text = archs(*base)
        got = rows(text)
        what = f"(exit {r.returncode}: {r.stdout.strip()[-200:]} {r.stderr.strip()[-300:]})"
        check(r.returncode == 0 and "4 sources compiled" in r.stdout and "{80, kSm80, %d}" % len(got) in text,
              f"sm_80: chapter 02's four files compiled into one table for cc 80 {what}")
        check(KERNEL in got and got[KERNEL][0] > 0 and got[KERNEL][1] > 0,
              f"softmax_warp_kernel's row, with ptxas's registers and instructions ({got.get(KERNEL)})")
        check(KERNEL + " causal=top-left" in got and got[KERNEL + " causal=top-left"] != got[KERNEL],
              "its is_causal row differs from the common path's: the parameters are read at sm_80's offsets")
        check(not any("ch09::" in k for k in got), "no row of chapter 09's (sm_90a only)")
        deps = dep.read_text() if dep.exists() else ""
        check(deps.startswith(str(out) + ":") and "02_fused_softmax/softmax_warp.cu" in deps and "common/kernels/" in deps,
              "the depfile names the sources and the headers they include")
        r, again = archs(*base)
        check(r.returncode == 0 and "0 sources compiled" in r.stdout and again == text,
              f"the same again: nothing compiled, the same table ({r.stdout.strip()[-200:]})")
        src = tree / "02_fused_softmax" / "softmax_warp.cu"
        code = src.read_text()
        check(EDIT[0] in code, "the fixture's edit applies to 02_fused_softmax/softmax_warp.cu")
        src.write_text(code.replace(EDIT[0], EDIT[1]))
        r, edited = archs(*base)
        now = rows(edited)
        check(r.returncode == 0 and "1 sources compiled" in r.stdout, f"edited: that file alone compiled ({r.stdout.strip()[-200:]})")
        check(KERNEL in now and now[KERNEL][1] > got[KERNEL][1], f"its row longer ({now.get(KERNEL)} against {got[KERNEL]})")
        others = [k for k in got if not k.startswith(KERNEL)]
        check(others and all(now.get(k) == got[k] for k in others), "the other files' rows as they were (from the cache)")
        src.write_text(code)
        header = tree / "02_fused_softmax" / "fused_softmax.h"
        header.write_text(header.read_text() + "// an edit\n")
        r, _ = archs(*base)
        check(r.returncode == 0 and "4 sources compiled" in r.stdout,
              f"a header they all include edited: all four compiled again ({r.stdout.strip()[-200:]})")
        r, text = archs(*base, "--nvdisasm", str(Path(tmp) / "no-nvdisasm"))
        check(r.returncode == 0 and not rows(text) and "nvdisasm" in text and "not found" in text,
              "without nvdisasm: no rows, and the reason in the table (the profile prints it)")
        check(out.stat().st_mtime < 1e9, "then older than its inputs: the build runs the rule again")
        for bad, why in ((["--arch", "sm_90", "--cache", str(cache)], "sm_90"), (["--arch", "sm_80"], "--cache"),
                         (["--arch", "compute_80", "--cache", str(cache)], "compute_80")):
            out.unlink(missing_ok=True)
            r, text = archs(*bad)
            check(r.returncode == 2 and why in r.stderr + r.stdout and not out.exists(),
                  f"{' '.join(bad[:2])}{' without --cache' if len(bad) == 2 else ''}: refused, exit 2, nothing written")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
