#!/usr/bin/env python3
"""fatbin_ptx.py: the PTX a gpu build embeds is the PTX newer GPUs need.

A GPU newer than every SASS in the binary (sm_100, sm_120 for the default "80 90") runs a kernel
only by compiling the PTX embedded beside the SASS when the program loads it, and the newest PTX is
the one the driver picks. So every kernel object of the chapters' libraries must carry PTX for the
highest architecture the build was made for (--ptx-arch). Chapter 09's sm_90a objects must carry
none: arch-specific PTX compiles for sm_90 alone, which their SASS already covers, so it would only
add size, and a reader of the fatbinary could take it for something a newer GPU can use.

  tools/fatbin_ptx.py --ptx-arch 90 --libs build-gpu/01_naive_attention/lib01_naive_attention_kernels.a,... \\
                      --no-ptx-sources wgmma.cu,tma_ring.cu,...

Each library is listed by cuobjdump (-lptx -lelf): a member with SASS must carry PTX for
sm_<ptx-arch>, unless it was built from one of the --no-ptx-sources, which must then carry no PTX
(and must be found). Exit 0 when all is well, 1 when not, 2 on bad input, 77 without cuobjdump
(found on PATH, in the toolkit, or from the PyPI package nvidia-cuda-cuobjdump).
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402  (find_tool)


def fail(msg, code=2):
    print("fatbin_ptx: " + msg, file=sys.stderr)
    sys.exit(code)


def members(cuobjdump, lib):
    """{member: {"ptx": [arch...], "elf": [arch...]}} of a static library, from cuobjdump -lptx -lelf."""
    r = subprocess.run([cuobjdump, "-lptx", "-lelf", lib], capture_output=True, text=True)
    said = (r.stderr or r.stdout).strip()
    if r.returncode != 0 and "does not contain device code" in said:  # bad input: not a library of kernels
        fail("--libs: %s holds no CUDA code: give the chapters' kernel libraries (build-gpu/*/lib*_kernels.a)" % lib)
    if r.returncode != 0:
        fail("cuobjdump failed on %s: %s" % (lib, said[-500:]), 1)
    out, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"member .*:([^:]+)\.o:$", line.strip())
        if m:
            cur = out.setdefault(m.group(1), {"ptx": [], "elf": []})
            continue
        m = re.match(r"(PTX|ELF) file\s+\d+: .*\.(sm_\w+)\.(?:ptx|cubin)$", line.strip())
        if m and cur is not None:
            cur["ptx" if m.group(1) == "PTX" else "elf"].append(m.group(2))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("\n"):])
    ap.add_argument("--ptx-arch", required=True, help="the highest architecture of the build, e.g. 90")
    ap.add_argument("--libs", required=True, help="the chapters' kernel libraries, comma-separated")
    ap.add_argument("--no-ptx-sources", default="", help="sources that must carry no PTX (sm_90a's), comma-separated")
    ap.add_argument("--cuobjdump", help="cuobjdump to use (default: PATH, the toolkit, or the PyPI package)")
    a = ap.parse_args()
    if not re.fullmatch(r"\d+", a.ptx_arch):
        fail("--ptx-arch %s: give the compute capability as a number, e.g. 90" % a.ptx_arch)
    libs = [l for l in a.libs.split(",") if l]
    missing = [l for l in libs if not os.path.isfile(l)]
    if not libs or missing:
        fail("--libs: %s" % ("no such file: " + ", ".join(missing) if missing else "give at least one library"))
    cuobjdump = kr.find_tool("cuobjdump", a.cuobjdump)
    if a.cuobjdump and not cuobjdump:
        fail("--cuobjdump %s does not exist" % a.cuobjdump)
    if not cuobjdump:
        print("fatbin_ptx: cuobjdump not found (the toolkit's, or `pip install nvidia-cuda-cuobjdump`): skipped")
        sys.exit(77)

    want = "sm_" + a.ptx_arch
    no_ptx = {s for s in a.no_ptx_sources.split(",") if s}
    bad, checked, found_no_ptx = [], 0, set()
    for lib in libs:
        for member, kinds in sorted(members(cuobjdump, lib).items()):
            if member in no_ptx:
                found_no_ptx.add(member)
                checked += 1
                if kinds["ptx"]:
                    bad.append("%s: %s carries PTX (%s); sm_90a code must carry none" % (
                        os.path.basename(lib), member, ", ".join(kinds["ptx"])))
            elif kinds["elf"]:
                checked += 1
                if want not in kinds["ptx"]:
                    bad.append("%s: %s has SASS for %s but no PTX for %s: %s" % (
                        os.path.basename(lib), member, ", ".join(kinds["elf"]), want,
                        "a GPU newer than its SASS would compile the older PTX (%s) instead" % ", ".join(kinds["ptx"])
                        if kinds["ptx"] else "a GPU newer than its SASS cannot run it"))
    for source in sorted(no_ptx - found_no_ptx):
        bad.append("%s: not found in any library (expected an sm_90a object)" % source)
    for line in bad:
        print("FAIL " + line)
    print("%d kernel objects in %d libraries checked (PTX for %s in each, none in the %d of sm_90a): %d wrong" % (
        checked, len(libs), want, len(found_no_ptx), len(bad)))
    if not checked:
        fail("no kernel object found in the libraries", 1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
