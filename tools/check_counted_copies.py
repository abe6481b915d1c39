#!/usr/bin/env python3
"""check_counted_copies.py: in a counters build, no kernel code may lose its counts to the linker.

The counters build instruments the kernels' translation units (-fsanitize=thread's calls, which the
emulator counts: cmake/Counters.cmake) and not the harness's. An inline function or a template
instantiation that both kinds of file emit is one weak symbol, and the linker keeps one copy of it
for both: if it keeps the harness's, the kernels run an uncounted copy and their loads and stores
vanish from every count and every modelled time, silently. This lists every weak function symbol
defined both in an instrumented object (it calls __tsan_*) and in an uninstrumented one whose
instrumented copy counts something: its code calls __tsan_*, or a function tagged for the kernels
(abi_tag "counted", common/kernels/params.h), which the harness's copy would call untagged. Exits 1
if there is any.

    tools/check_counted_copies.py BUILD_DIR      (exit 2: not a counters build, no objects, or no
                                                  nm/objdump that reads them; --help: this text)
"""
import pathlib
import re
import shutil
import subprocess
import sys

# A call into the instrumentation or into a kernels' tagged copy, by relocation (any ELF machine).
COUNTS = re.compile(r"R_\w+\s+(__tsan_\w+|\S*B7counted\S*)")


def symbols(obj):
    """(weak defined function symbols, whether the object is instrumented), from one nm."""
    weak, instrumented = set(), False
    for line in subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] == "W":
            weak.add(fields[2])
        elif len(fields) == 2 and fields[0] == "U" and fields[1].startswith("__tsan_"):
            instrumented = True
    return weak, instrumented


def counts(obj, symbol):
    """Whether the object's copy of the function calls the instrumentation or a tagged function."""
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", f"--disassemble={symbol}", str(obj)],
                         capture_output=True, text=True, check=True).stdout
    return COUNTS.search(out) is not None


def main():
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(sys.argv) != 2:
        print("usage: tools/check_counted_copies.py BUILD_DIR (a counters build's folder; --help for more)", file=sys.stderr)
        return 2
    if sys.argv[1].startswith("-") and not pathlib.Path(sys.argv[1]).exists():
        print(f"check_counted_copies: unknown option {sys.argv[1]}: it takes a build folder (or --help)", file=sys.stderr)
        return 2
    build = pathlib.Path(sys.argv[1])
    cache = build / "CMakeCache.txt"
    on = re.search(r"^FLASHSTEPS_COUNTERS:\w+=(ON|1|TRUE|YES|Y)$", cache.read_text(), re.M | re.I) if cache.is_file() else None
    if not on:
        print(f"check_counted_copies: {build} is not a counters build (-DFLASHSTEPS_COUNTERS=ON)", file=sys.stderr)
        return 2
    objects = sorted(build.rglob("*.o"))
    if not objects:
        print(f"check_counted_copies: no object files under {build}: build it first", file=sys.stderr)
        return 2
    missing = [t for t in ("nm", "objdump", "c++filt") if not shutil.which(t)]
    if missing:
        print(f"check_counted_copies: {', '.join(missing)} not found (binutils)", file=sys.stderr)
        return 2
    counted, uncounted = {}, {}
    try:
        for obj in objects:
            weak, instrumented = symbols(obj)
            for s in weak:
                (counted if instrumented else uncounted).setdefault(s, obj)
        lost = [(s, counted[s], uncounted[s]) for s in sorted(set(counted) & set(uncounted)) if counts(counted[s], s)]
    except subprocess.CalledProcessError as e:
        print(f"check_counted_copies: {' '.join(e.cmd)} failed: {e.stderr.strip()}", file=sys.stderr)
        return 2
    for s, c, u in lost:
        name = subprocess.run(["c++filt", s], capture_output=True, text=True).stdout.strip()
        print(f"{name}\n  counted in {c.relative_to(build)}, uncounted in {u.relative_to(build)}")
    print(f"check_counted_copies: {len(objects)} objects, {len(counted)} weak functions in instrumented ones, "
          f"{len(lost)} also emitted uninstrumented with counts to lose")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
