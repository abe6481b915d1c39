#!/usr/bin/env python3
"""test_check_counted_copies.py: tools/check_counted_copies.py on two hand-made objects.

  python3 tests/test_check_counted_copies.py      # exit 0 pass, 1 fail (77: no g++, nm or objdump)

An inline function that loads, emitted out of line both by an instrumented file (-fsanitize=thread,
as the counters build compiles a kernel) and by an uninstrumented one (the harness), must be
reported; the same pair with the uninstrumented file calling a function of its own must not, nor
a shared function that counts nothing; a folder that is not a counters build, or has no objects,
and an unknown option are refused with exit 2; --help prints its use with exit 0.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "check_counted_copies.py"

SHARED = "inline __attribute__((noipa)) int load(const int* p) { return *p; }\n"
KERNEL = SHARED + "int kernel(const int* p) { return load(p) + 1; }\n"
HARNESS = SHARED + "int harness(const int* p) { return load(p) + 2; }\n"
OWN = "inline __attribute__((noipa)) int own_load(const int* p) { return *p; }\n" \
      "int harness(const int* p) { return own_load(p) + 2; }\n"
# Shared by both, but touching no memory: nothing to count, nothing lost.
NOTHING = "inline __attribute__((noipa)) int twice(int a) { return 2 * a; }\n"
KERNEL_NOTHING = NOTHING + "int kernel(const int* p) { return twice(*p) + 1; }\n"
HARNESS_NOTHING = NOTHING + "int harness(int a) { return twice(a) + 2; }\n"


def build(folder, harness_source, kernel_source=KERNEL):
    (folder / "CMakeCache.txt").write_text("FLASHSTEPS_COUNTERS:BOOL=ON\n")
    (folder / "kernel.cpp").write_text(kernel_source)
    (folder / "harness.cpp").write_text(harness_source)
    subprocess.run(["g++", "-O2", "-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-c",
                    str(folder / "kernel.cpp"), "-o", str(folder / "kernel.o")], check=True)
    subprocess.run(["g++", "-O2", "-c", str(folder / "harness.cpp"), "-o", str(folder / "harness.o")], check=True)


def run(folder):
    return subprocess.run([sys.executable, str(TOOL), str(folder)], capture_output=True, text=True)


def main():
    if not all(shutil.which(t) for t in ("g++", "nm", "objdump", "c++filt")):
        print("test_check_counted_copies: needs g++, nm, objdump and c++filt")
        return 77
    c = Checks("check_counted_copies")
    with tempfile.TemporaryDirectory() as tmp:
        shared, own, nothing, plain, empty = (Path(tmp, n) for n in ("shared", "own", "nothing", "plain", "empty"))
        for d in (shared, own, nothing, plain, empty):
            d.mkdir()
        build(shared, HARNESS)
        r = run(shared)
        c(r.returncode == 1, f"a load emitted counted and uncounted: exit 1 (got {r.returncode}: {r.stdout}{r.stderr})")
        c("load(int const*)" in r.stdout and "kernel.o" in r.stdout and "harness.o" in r.stdout,
          f"it names the function and both objects:\n{r.stdout}")
        build(own, OWN)
        r = run(own)
        c(r.returncode == 0, f"the harness with its own copy: exit 0 (got {r.returncode}: {r.stdout}{r.stderr})")
        build(nothing, HARNESS_NOTHING, KERNEL_NOTHING)
        r = run(nothing)
        c(r.returncode == 0 and "1 weak functions in instrumented ones" in r.stdout,
          f"a shared function that counts nothing: exit 0 (got {r.returncode}: {r.stdout}{r.stderr})")
        (empty / "CMakeCache.txt").write_text("FLASHSTEPS_COUNTERS:BOOL=on\n")
        r = run(empty)
        c(r.returncode == 2 and "no object files" in r.stderr, f"a counters build without objects: exit 2 ({r.returncode}: {r.stderr})")
        r = run(plain)
        c(r.returncode == 2 and "not a counters build" in r.stderr, f"no CMakeCache.txt: exit 2 ({r.returncode}: {r.stderr})")
        r = subprocess.run([sys.executable, str(TOOL), "--help"], capture_output=True, text=True)
        c(r.returncode == 0 and "BUILD_DIR" in r.stdout and not r.stderr, f"--help: its use on stdout, exit 0 ({r.returncode}: {r.stderr})")
        r = subprocess.run([sys.executable, str(TOOL), "--build"], capture_output=True, text=True)
        c(r.returncode == 2 and "unknown option --build" in r.stderr, f"an unknown option: exit 2 ({r.returncode}: {r.stderr})")
    return c.exit_code()


if __name__ == "__main__":
    sys.exit(main())
