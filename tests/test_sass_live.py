#!/usr/bin/env python3
"""test_sass_live.py: the counters build compiles an edited kernel's SASS itself (sass_issue.py --live).

  python3 tests/test_sass_live.py      # exit 0 pass, 1 fail, 77 skipped (no nvcc or nvdisasm)

On a copy of the repository's tools/, common/ and chapters in a temporary folder: with nothing
edited, no rows and nothing compiled; with chapter 02's softmax_warp.cu edited (one multiply more
per probability), the rows of its kernel, compiled from the edited file, with more instructions than
the committed data's row; the same edit at the next build, nothing recompiled; another edit without
nvdisasm, or the counting tools edited, no rows and the reason. And --out without a C++ compiler (no
AttentionParams offsets to decide the paths by) refuses to write a data file.
"""
import os
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


def row(text, name):
    """The instructions of a row's parts, summed, or None."""
    for line in text.splitlines():
        if line.strip().startswith('{"%s", ' % name):
            return instructions(line)
    return None


def main():
    if not kr.find_tool("nvcc", None) or not kr.find_tool("nvdisasm", None):
        print("skipped: nvcc or nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
        return 77
    check = Checks("sass_live")
    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(Path(tmp))
        out = Path(tmp) / "sass_live.cpp"

        def live(*args):
            r = subprocess.run([sys.executable, str(Path(tmp) / "tools" / "sass_issue.py"), "--live", str(out), *args],
                               capture_output=True, text=True)
            return r, out.read_text() if out.exists() else ""

        r, text = live()
        check(r.returncode == 0 and "kSassLive = {nullptr, 0, nullptr, 0, \"\"}" in text,
              f"nothing edited: no rows, nothing compiled (exit {r.returncode}: {r.stdout.strip()[-200:]} {r.stderr.strip()[-200:]})")
        src = Path(tmp) / "02_fused_softmax" / "softmax_warp.cu"
        code = src.read_text()
        check(EDIT[0] in code, "the fixture's edit applies to 02_fused_softmax/softmax_warp.cu")
        src.write_text(code.replace(EDIT[0], EDIT[1]))
        r, text = live()
        committed = row((ROOT / "common" / "model" / "sass_sm90.inc").read_text(), KERNEL)
        edited = row(text, KERNEL)
        check(r.returncode == 0 and committed is not None and edited is not None and edited > committed,
              f"edited: the kernel's own row, more instructions than the committed one ({edited} against {committed}; "
              f"{r.stdout.strip()[-200:]} {r.stderr.strip()[-300:]})")
        check("02_fused_softmax/softmax_warp.cu" in text and not re.search(r'"softmax_block_kernel', text),
              "it names the edited file, and holds no row of a kernel built from another")
        os.utime(out, (1, 1))
        r, again = live()
        check(r.returncode == 0 and "up to date" in r.stdout and again == text,
              f"the same edit at the next build: nothing compiled again ({r.stdout.strip()[-200:]})")
        check(out.stat().st_mtime > 1e9, "the file is touched, so the build's rule is done")
        src.write_text(code.replace(EDIT[0], EDIT[1].replace("1.5f", "2.5f")))  # edited again
        r, text = live("--nvdisasm", str(Path(tmp) / "no-nvdisasm"))
        check(r.returncode == 0 and row(text, KERNEL) is None and "nvdisasm not found" in text,
              "edited again, without nvdisasm: no rows, and the reason in the table (the profile prints it)")
        check(out.stat().st_mtime < 1e9, "then older than its inputs: the build runs the rule again, nvdisasm installed")
        (Path(tmp) / "tools" / "kernel_resources.py").write_text((ROOT / "tools" / "kernel_resources.py").read_text() + "\n# an edit\n")
        r, text = live()
        check(r.returncode == 0 and row(text, KERNEL) is None and "kernel_resources.py changed" in text,
              "the counting tools edited: no rows (every row would change), and the reason")
    # Without a C++ compiler the tool cannot read AttentionParams' offsets, so every row would be the
    # common path's: --out refuses (exit 2, a missing tool) and writes nothing.
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "data.inc"
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "sass_issue.py"), "--out", str(out),
                            "--nvcc", kr.find_tool("nvcc", None), "--nvdisasm", kr.find_tool("nvdisasm", None)],
                           capture_output=True, text=True, env=dict(os.environ, PATH=tmp))
        check(r.returncode == 2 and "AttentionParams' offsets" in r.stderr + r.stdout and not out.exists(),
              f"no C++ compiler: --out refused, nothing written (exit {r.returncode}: {(r.stderr + r.stdout).strip()[-200:]})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
