#!/usr/bin/env python3
"""test_tools.py: the Python tools refuse bad input as the binaries do, before any work.

  python3 tests/test_tools.py      # exit 0 pass, 1 fail

tools/bench_torch_sdpa.py: a --csv that is a folder, in a missing folder, or not one of the
project's files (left as it was) is refused with exit code 2 and one line, before PyTorch is even
imported, so this runs without PyTorch or a GPU. tools/causal_schedule.py: a --png whose folder is
missing is refused before the model runs. Neither prints a traceback.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
TORCH = ROOT / "tools" / "bench_torch_sdpa.py"
SCHEDULE = ROOT / "tools" / "causal_schedule.py"


def main():
    check = Checks("tools")

    def refused(script, argv, says, what):
        r = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, timeout=120)
        check(r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr,
              f"{script.name} {what}: exit 2 and \"{says}\" (got {r.returncode}: {(r.stderr.strip().splitlines() or [''])[-1]})")

    with tempfile.TemporaryDirectory(prefix="flashsteps-tools-") as tmp:
        work = Path(tmp)
        foreign = work / "foreign.csv"
        foreign.write_text("name,age\nada,36\n")
        refused(TORCH, ["--csv", str(work)], "is a folder", "--csv a folder")
        refused(TORCH, ["--csv", str(work / "missing" / "t.csv")], "does not exist", "--csv in a missing folder")
        refused(TORCH, ["--csv", str(foreign)], "does not start with the project's CSV header", "--csv not ours")
        check(foreign.read_text() == "name,age\nada,36\n", "bench_torch_sdpa.py leaves a file not its own as it was")
        check(not (work / "missing").exists(), "bench_torch_sdpa.py creates no folder")
        refused(TORCH, ["--csv", ""], "needs a file name", "--csv ''")
        refused(SCHEDULE, ["--png", str(work / "missing" / "s.png")], "missing or not writable", "--png in a missing folder")
        refused(SCHEDULE, ["--png", str(work)], "a folder", "--png a folder")

    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
