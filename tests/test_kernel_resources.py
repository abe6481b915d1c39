#!/usr/bin/env python3
"""test_kernel_resources.py: tools/kernel_resources.py counts the tile loop by control flow.

  python3 tests/test_kernel_resources.py      # exit 0 pass, 1 fail

On a hand-written SASS listing (tests/data/tile_loop.sass), so it needs neither nvcc nor nvdisasm:
the loop with the HMMA found by its back edge, one iteration's common path counted with the copy
loop times its trip count (derived from threadIdx.x = 0 and the constant it is compared with), and
the branch into the mask code not followed. The expected counts are worked out by hand from the
listing's blocks below, not read from the script.
"""
import subprocess
import sys
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import kernel_resources as kr  # noqa: E402


def main():
    check = Checks("kernel_resources")
    sass = kr.parse_sass((ROOT / "tests" / "data" / "tile_loop.sass").read_text())
    check(list(sass) == ["_Z6kernelv"], f"one function parsed (got {list(sass)})")
    instrs = sass.get("_Z6kernelv", [])
    blocks = kr.basic_blocks(instrs)
    # 0x00-0x10 | 0x20-0x60 | 0x70-0x90 (mask) | 0xa0 | 0xb0-0xe0 (copy loop) | 0xf0-0x130 | 0x140 | 0x150
    check(len(blocks) == 8, f"8 basic blocks (got {len(blocks)})")
    loops = kr.find_loops(blocks)
    # The self-loop at 0x150 follows the EXIT: no path reaches it, so it is no loop.
    check(sorted(len(b) for b in loops.values()) == [1, 5], f"loops of 1 (copy) and 5 blocks (got {sorted(len(b) for b in loops.values())})")
    cold = {("numeric.cuh", 71), ("numeric.cuh", 72)}
    loop = kr.tile_loop(instrs, cold)
    check(loop is not None and loop["hot"] is not None, "the tile loop is found and walked")
    if not loop or not loop["hot"]:
        return check.exit_code()
    hot = loop["hot"]
    # head block 5 + copy setup 1 + copy loop 4 x 3 trips + tail 5; the mask block (3) is left out.
    check(hot["total"] == 5 + 1 + 4 * 3 + 5, f"one iteration: 23 instructions (got {hot['total']})")
    check(hot.get("HMMA") == 2, f"2 HMMA per iteration (got {hot.get('HMMA')})")
    check(hot.get("LDGSTS") == 3, f"the copy loop counted 3 times: 3 LDGSTS (got {hot.get('LDGSTS')})")
    check(hot.get("global", 0) == 0 and hot.get("FP32", 0) == 0, "the mask code (LDG, FADD, FMUL) not on the common path")
    # LDSM.x4 and each 16-byte cp.async: 4 wavefronts; the @!PT LDS none.
    check(hot["wavefronts"] == 4 + 3 * 4, f"16 wavefronts (got {hot['wavefronts']})")
    check(loop["inner"] == [(3, 4)], f"one inner loop, 3 trips of 4 instructions (got {loop['inner']})")
    check(loop["all"]["total"] == 5 + 3 + 1 + 4 + 5, f"every block of the loop once: 18 (got {loop['all']['total']})")
    issue, shared = kr.ceilings(hot)
    check(abs(issue - 4 * 2 / 23) < 1e-9 and abs(shared - 2 / 16) < 1e-9, f"ceilings 8/23 and 2/16 (got {issue}, {shared})")

    # Without cold lines the rule takes the longer way, through the mask code...
    loop = kr.tile_loop(instrs, set())
    check(loop and loop["hot"] and loop["hot"]["total"] == 26, f"without cold lines the longer path: 26 (got {loop and loop['hot'] and loop['hot']['total']})")
    # ...and a parameter the evaluator knows overrides the rule: 0 leaves @P0 BRA untaken, into the mask code.
    loop = kr.tile_loop(instrs, cold, {"c[0x0][0x260]": 0})
    check(loop and loop["hot"] and loop["hot"].get("global") == 1, "a known parameter decides the branch over the rule")
    # A block that loads the data itself (its LDG from a hot line) beside the mask's code is on the
    # common path: nvcc put an in-bounds load in the block of the tests that guard it.
    hot_load = [dict(x, chain={("fa2_tile.cuh", 12)}) if x["op"].startswith("LDG") else x for x in instrs]
    loop = kr.tile_loop(hot_load, cold)
    check(loop and loop["hot"] and loop["hot"]["total"] == 26 and loop["hot"].get("global") == 1,
          f"a data load's block is taken despite 2 cold instructions beside it: 26 (got {loop and loop['hot'] and loop['hot']['total']})")
    # A copy loop whose bound is unknown has no trip count: counted once, reported as '?'.
    unknown = [dict(x, args=x["args"].replace("R2, 0x3", "R2, c[0x0][0x230]")) for x in instrs]
    loop = kr.tile_loop(unknown, cold)
    check(loop and loop["inner"] == [(None, 4)] and kr.inner_trips(loop) == "?x4", f"unknown trip count reported as ? (got {loop and loop['inner']})")

    # A compare of an unknown value, combined with a known predicate that decides it alone (lean_loop's
    # "k0 + Bc <= Lk && !(causal || mask)" with is_causal known): AND with false is false, OR with true
    # true; otherwise the result stays unknown.
    def isetp(op, combine, known):
        state = {"P1": known}
        kr.execute(state, {"op": op, "args": "P2, PT, R5, c[0x0][0x240], " + combine, "pred": ""})
        return state.get("P2")
    check(isetp("ISETP.LE.AND", "!P1", True) is False, "AND with a known false predicate: false")
    check(isetp("ISETP.LE.OR", "P1", True) is True, "OR with a known true predicate: true")
    check(isetp("ISETP.LE.AND", "P1", True) is None, "AND with a true predicate: still unknown")
    check(isetp("ISETP.LE.OR", "!P1", True) is None, "OR with a false predicate: still unknown")

    # A tool the user names must be an executable file: a folder was taken, then failed with a traceback
    # (the tools that share find_tool: hopper_resources, arch_resources, sass_issue, lab_sass, fatbin_ptx).
    def tool(*argv):
        return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60)
    for script, args in (("hopper_resources.py", ["--nvcc", "/tmp", "--nvdisasm", "/tmp"]),
                         ("arch_resources.py", ["--check", "--nvcc", "/tmp"]),
                         ("fatbin_ptx.py", ["--ptx-arch", "90", "--libs", __file__, "--cuobjdump", "/tmp"])):
        r = tool(str(ROOT / "tools" / script), *args)
        check(r.returncode == 2 and "not an executable file" in r.stderr and "Traceback" not in r.stderr,
              f"{script} {' '.join(args)}: exit 2, not an executable file (got {r.returncode}: {r.stderr.strip()[-150:]})")
    r = tool(str(ROOT / "tools" / "arch_resources.py"), "--check", "--jobs", "0")
    check(r.returncode == 2 and "--jobs 0" in r.stderr, f"arch_resources.py --jobs 0: exit 2 (got {r.returncode})")
    if kr.find_tool("cuobjdump", None):  # a file with no CUDA code in it is bad input, not cuobjdump's failure
        r = tool(str(ROOT / "tools" / "fatbin_ptx.py"), "--ptx-arch", "90", "--libs", __file__)
        check(r.returncode == 2 and "holds no CUDA code" in r.stderr,
              f"fatbin_ptx.py --libs of a file without CUDA code: exit 2 (got {r.returncode}: {r.stderr.strip()[-150:]})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
