#!/usr/bin/env python3
"""test_tools.py: the Python tools refuse bad input as the binaries do, before any work.

  python3 tests/test_tools.py      # exit 0 pass, 1 fail

tools/bench_torch_sdpa.py: a --csv that is a folder, in a missing folder, or not one of the
project's files (left as it was) is refused with exit code 2 and one line, before PyTorch is even
imported, so this runs without PyTorch or a GPU. tools/causal_schedule.py: a --png whose folder is
missing is refused before the model runs. tools/arch_resources.py and tools/fatbin_ptx.py refuse an
architecture, a file or a library they do not know before running nvcc or cuobjdump. None prints a
traceback. And arch_resources.py's rules on hand-made input: threads from .maxntid, the register file
a block takes, what fails and what is only reported.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
TORCH = ROOT / "tools" / "bench_torch_sdpa.py"
SCHEDULE = ROOT / "tools" / "causal_schedule.py"
ARCHS = ROOT / "tools" / "arch_resources.py"
FATBIN = ROOT / "tools" / "fatbin_ptx.py"


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
        refused(ARCHS, [], "nothing to do", "without --check or --out")
        refused(ARCHS, ["--check", "--archs", "70"], "give compute capabilities from", "--archs 70 (before sm_75)")
        refused(ARCHS, ["--check", "--files", "05_flash_v2/nope.cu"], "not among", "--files not in its list")
        refused(ARCHS, ["--out", str(foreign)], "is a file", "--out a file")
        refused(FATBIN, ["--ptx-arch", "sm_90", "--libs", str(foreign)], "as a number", "--ptx-arch sm_90")
        refused(FATBIN, ["--ptx-arch", "90", "--libs", str(work / "missing.a")], "no such file", "--libs missing")

    rules(check)
    return check.exit_code()


PTX = """
.visible .entry _Z7boundedv(
	.param .u64 _Z7boundedv_param_0
)
.maxntid 256, 1, 1
{
	ret;
}
.visible .entry _Z9unboundedv()
{
	ret;
}
"""


def rules(check):
    sys.path.insert(0, str(ROOT / "tools"))
    import arch_resources as ar

    check(ar.block_threads(PTX) == {"_Z7boundedv": 256}, "threads per block from .maxntid; none without it")
    check(ar.registers_needed(255, 256) == 65536 and ar.registers_needed(64, 1024) == 65536,
          "255 registers x 256 threads and 64 x 1024 fill the register file exactly (256-register units per warp)")
    check(ar.registers_needed(65, 1024) > 65536 and ar.registers_needed(1, 32) == 256,
          "65 registers x 1024 threads do not fit; one register takes a warp's 256-register unit")
    row = {"register_file": 65536, "spill_st": 0, "spill_ld": 0, "stack": 0, "d": 128}
    check(ar.verdict(row) == "ok", "a kernel within every limit is ok")
    check(ar.verdict(dict(row, spill_st=8, spill_ld=8, stack=8)) == "FAIL: spills stack", "a spill at d = 128 fails")
    check(ar.verdict(dict(row, d=256, spill_st=8)).startswith("reported"), "a spill at d = 256 is reported, not failed")
    check(ar.verdict(dict(row, d=256, register_file=65537)).startswith("FAIL: registers"),
          "too many registers for the block fail at any head dim")
    check(ar.short_name("void ch05::(anonymous namespace)::split_q_kernel<__half, 96>(attn::AttentionParams)")
          == "split_q_kernel<__half, 96>", "kernel names lose their namespaces and parameters")


if __name__ == "__main__":
    sys.exit(main())
