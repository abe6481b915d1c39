#!/usr/bin/env python3
"""test_check_notes.py: tools/check_notes.py on a hand-made tree, each rule once broken.

  python3 tests/test_check_notes.py      # exit 0 pass, 1 fail

A minimal book (one chapter note, its answers, course.md, a counters.csv whose rows carry one
commit, a source file) passes; then one change at a time must be reported: a citation of the CSV
at another commit (named by path, by file name, or as "the CSV" after it), a backticked repository
path that does not exist. And what must not be reported: the rows' own commit by a shorter prefix,
"at" before a number, a CSV without a commit column, a commit in a table row beside one that names
the CSV, a path under a build folder, a path NOT_COMMITTED names. And a diagnostic of the emulator's
buggy kernels quoted at a line its test does not expect (and not at one it does). And a --root that
is not a folder is refused with exit code 2 and one line, not reported as a problem of the notes.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "check_notes.py"
COMMIT = "7063334692d6"

NOTE = """# Chapter 01

Text.

## Exercises

1. **[paper]** Predict, then measure: something.
"""
ANSWER = """# Answers 01

### 1. [paper] Something

{body}
"""
COURSE = """# Course

| lab | exercises |
|---|---|
| 1. First | 01: 1 [paper] |
"""


def tree(tmp, body):
    """A minimal book under tmp whose answer to exercise 1 is `body`."""
    root = Path(tmp)
    for folder in ("notes/answers", "results/cpu-emulation-simt", "common", "build/bin"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# Book\n")
    (root / "results" / "README.md").write_text("# Results\n")
    (root / "notes" / "01_first.md").write_text(NOTE)
    (root / "notes" / "course.md").write_text(COURSE)
    (root / "notes" / "answers" / "01_first.md").write_text(ANSWER.format(body=body))
    (root / "results" / "cpu-emulation-simt" / "counters.csv").write_text(
        f"commit,chapter,variant,mufu\n{COMMIT},01_first,naive,42\n")
    (root / "results" / "cpu-emulation-simt" / "runs.csv").write_text("chapter,ms\n01_first,1.0\n")
    (root / "common" / "a.h").write_text("// a\n")
    (root / "common" / "simt" / "tests").mkdir(parents=True, exist_ok=True)
    (root / "common" / "simt" / "tests" / "test_diagnostics.cpp").write_text(
        'CHECK_THAT(out, Contains("buggy_kernels.cu:15"));\n')
    return root


def run(body):
    with tempfile.TemporaryDirectory(prefix="flashsteps-check-notes-") as tmp:
        r = subprocess.run([sys.executable, str(TOOL), "--root", str(tree(tmp, body))],
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout


def main():
    check = Checks("check_notes")

    def passes(body, what):
        rc, out = run(body)
        check(rc == 0, f"{what}: no problem (got {rc}: {out.strip().splitlines()[0] if out.strip() else ''})")

    def fails(body, says, what):
        rc, out = run(body)
        check(rc == 1 and says in out, f"{what}: reported with \"{says}\" (got {rc}: {out.strip()[:200]})")

    passes("Nothing cited.", "the minimal book")
    passes(f"From `results/cpu-emulation-simt/counters.csv` (commit {COMMIT}): `mufu` 42.",
           "counters.csv cited by path at the commit its rows carry")
    passes(f"The counters agree (`counters.csv` at {COMMIT[:7]}, default problem).",
           "counters.csv by file name, at a 7-digit prefix of that commit")
    passes("From `counters.csv`, run at 1048576 keys.", "'at' before a number is no commit")
    passes("From `runs.csv` (commit 8009f536ffeb): 1.0 ms.", "a CSV without a commit column is not checked")
    passes(f"| `counters.csv` | commit {COMMIT} |\n| `runs.txt` | re-run at 8009f53 |",
           "a table row is its own sentence")
    passes("The header `common/a.h`, the folder `common/`, the binary `build/bin/01_first` and "
           "`01_naive_attention/softmax_two_pass.cu:12`.",
           "existing paths, a build folder's, and one NOT_COMMITTED names")
    fails("From `results/cpu-emulation-simt/counters.csv` (commit de7d6fc3d57d): `mufu` 42.",
          "cites results/cpu-emulation-simt/counters.csv at commit de7d6fc3d57d, but its rows carry 7063334692d6",
          "counters.csv cited by path at an older commit")
    fails("The counters agree (`counters.csv` at 8009f536ffeb, default problem).",
          "at commit 8009f536ffeb, but its rows carry",
          "counters.csv by file name, 'at' an older commit")
    fails(f"From `counters.csv` (commit {COMMIT}).\n\nThe last is the CSV's (`mufu` 42, commit 8009f53).",
          "at commit 8009f53, but its rows carry", "'the CSV' after counters.csv, at an older commit")
    passes("```text\nsimt: divergent __syncthreads (common/simt/tests/buggy_kernels.cu:15)\n```",
           "a diagnostic quoted at the line the test expects")
    fails("```text\nsimt: divergent __syncthreads (common/simt/tests/buggy_kernels.cu:14)\n```",
          "quotes a diagnostic at common/simt/tests/buggy_kernels.cu:14", "a diagnostic quoted at a line that moved")
    fails("In (`common/kernels/online_softmax.cuh`), the counters.",
          "names common/kernels/online_softmax.cuh, which does not exist", "a backticked path that moved")
    with tempfile.TemporaryDirectory(prefix="flashsteps-check-notes-") as tmp:
        for root in (Path(tmp) / "missing", Path(tmp) / "a-file"):
            if root.name == "a-file":
                root.write_text("not a folder\n")
            r = subprocess.run([sys.executable, str(TOOL), "--root", str(root)], capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 2 and "is not a folder" in r.stderr and "Traceback" not in r.stderr and not r.stdout,
                  f"--root {root.name}: exit 2 and \"is not a folder\" (got {r.returncode}: {r.stderr.strip()[-200:]})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
