#!/usr/bin/env python3
"""test_tools.py: the Python tools refuse bad input as the binaries do, before any work.

  python3 tests/test_tools.py      # exit 0 pass, 1 fail

tools/bench_torch_sdpa.py: a --csv that is a folder, in a missing folder, or not one of the
project's files (left as it was) is refused with exit code 2 and one line, before PyTorch is even
imported, so this runs without PyTorch or a GPU; so are bench_torch_sdpa.py's --variants without
--chapters and a --commit the CSV would have to quote, bench_torch_decode.py's empty list items, a
--head-dim below 1, more new tokens than chapter 08 takes and a --csv not its own, and
bench_torch_sdpa_backward.py's --seq that is no length of its sweep. tests/support_matrix.py refuses
a missing, folder or non-UTF-8 README, paths given the wrong way round and a binary that fails, with
exit 2; tools/figures.py answers --help and refuses bad options without matplotlib (drawing
without it is a skip, 77). tools/causal_schedule.py: a --png whose folder is
missing is refused before the model runs, and so are an --overhead that is not a number from 0 up,
a problem too large to finish in seconds, an --orders that names none, and negative counts. tools/arch_resources.py and tools/fatbin_ptx.py refuse an
architecture, a file or a library they do not know before running nvcc or cuobjdump. None prints a
traceback. And arch_resources.py's rules on hand-made input: threads from .maxntid, the register file
a block takes, what fails and what is only reported. And bench_torch_sdpa.py, bench_torch_decode.py and
bench_torch_masks.py import torch before they load the book's library (a stand-in torch and ctypes.CDLL log the order):
`import torch` after the library segfaults on a GPU machine. And cmake/WriteCommit.cmake records
"unknown", not another repository's commit, for a tree that lies in a repository without being its top.
And tools/record_runs.sh --again with tools/stale_quotes.py, in a repository of their own (and
stale_quotes.py refuses a file named that is not a results file: outside results/, a README, an image).
"""
import os
import shutil
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
MASKS = ROOT / "tools" / "bench_torch_masks.py"
DECODE = ROOT / "tools" / "bench_torch_decode.py"
BACKWARD = ROOT / "tools" / "bench_torch_sdpa_backward.py"
SUPPORT = ROOT / "tests" / "support_matrix.py"
FIGURES = ROOT / "tools" / "figures.py"
# Runs a script with `import matplotlib` failing, whether or not this Python has it.
NO_MATPLOTLIB = ("import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = sys.argv[1:]; "
                 "runpy.run_path(sys.argv[0], run_name='__main__')")


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
        refused(MASKS, ["--chapters", str(foreign), "--csv", str(work)], "is a folder", "--csv a folder")
        refused(MASKS, ["--chapters", str(foreign), "--reps", "5"], "at least 20", "--reps 5")
        refused(MASKS, ["--chapters", str(foreign), "--baselines", "flex,xformers"], "unknown xformers", "--baselines xformers")
        refused(SCHEDULE, ["--png", str(work / "missing" / "s.png")], "missing or not writable", "--png in a missing folder")
        refused(SCHEDULE, ["--png", str(work)], "a folder", "--png a folder")
        for value in ("nan", "inf", "-100"):
            refused(SCHEDULE, ["-n", "256", "--overhead", value], "--overhead", f"--overhead {value}")
        refused(SCHEDULE, ["-n", "2000000000"], "at most 1048576", "-n 2000000000 (too large to finish soon)")
        refused(SCHEDULE, ["-n", "300000", "--br", "1", "--bc", "1"], "tile pairs per head", "Br = Bc = 1 at 300k")
        refused(SCHEDULE, ["-H", "100000"], "blocks, more than", "-H 100000")
        refused(SCHEDULE, ["-n", "65536", "--png", str(work / "s.png")], "--png draws", "--png of 49152 blocks")
        check(not (work / "s.png").exists(), "causal_schedule.py refuses before it draws")
        refused(SCHEDULE, ["--orders", ","], "names no order", "--orders ','")
        for option, value in (("--gantt", "-3"), ("--gantt-width", "-5"), ("--tail", "-1"), ("--grid-rows", "-1")):
            refused(SCHEDULE, [option, value], f"{option} {value}: it takes", f"{option} {value}")
        refused(ARCHS, [], "nothing to do", "without --check or --out")
        refused(ARCHS, ["--check", "--archs", "70"], "give compute capabilities from", "--archs 70 (before sm_75)")
        refused(ARCHS, ["--check", "--files", "05_flash_v2/nope.cu"], "not among", "--files not in its list")
        refused(ARCHS, ["--out", str(foreign)], "is a file", "--out a file")
        refused(FATBIN, ["--ptx-arch", "sm_90", "--libs", str(foreign)], "as a number", "--ptx-arch sm_90")
        refused(FATBIN, ["--ptx-arch", "90", "--libs", str(work / "missing.a")], "no such file", "--libs missing")
        refused(TORCH, ["--variants", "all"], "give --chapters", "--variants without --chapters")
        refused(TORCH, ["--commit", "a,b"], "a commit is letters", "--commit 'a,b' (a comma in the CSV)")
        refused(TORCH, ["--commit", ""], "a commit is letters", "--commit ''")
        lib = str(work / "missing.so")  # the arguments are refused before torch or the library is loaded
        refused(DECODE, ["--chapters", lib, "--contexts", "1,,2"], "an empty item", "--contexts 1,,2")
        for value in ("0", "-7"):
            refused(DECODE, ["--chapters", lib, "--head-dim", value], f"--head-dim {value}: it must be at least 1",
                    f"--head-dim {value}")
        refused(DECODE, ["--chapters", lib, "--new-tokens", "100000"], "at most 128 new tokens", "--new-tokens 100000")
        refused(DECODE, ["--chapters", lib, "--csv", str(work)], "is a folder", "--csv a folder")
        refused(DECODE, ["--chapters", lib, "--csv", str(foreign)], "does not start with the header", "--csv not ours")
        check(foreign.read_text() == "name,age\nada,36\n", "bench_torch_decode.py leaves a file not its own as it was")
        for seq in (["0"], ["-5"], ["777"], ["512", "513"]):
            refused(BACKWARD, ["--seq", *seq], "not a sequence length of --shapes flash", f"--seq {' '.join(seq)}")
        readme, folder, latin = work / "README.md", work / "folder", work / "latin.md"
        readme.write_text("<!-- flashsteps support -d 64 -->\nx\n<!-- end -->\n")
        folder.mkdir()
        latin.write_bytes(b"caf\xe9\n")
        for argv, says, what in (([shutil.which("false") or "/bin/false", str(work / "missing.md")], "is missing",
                                  "a missing README"),
                                 (["/bin/sh", str(folder)], "is a folder", "a folder as README"),
                                 (["/bin/sh", str(latin)], "not UTF-8", "a README not UTF-8"),
                                 ([shutil.which("false") or "/bin/false", str(readme)], "failed with exit code 1",
                                  "a FLASHSTEPS that fails"),
                                 ([str(readme), "/bin/sh"], "not an executable file", "the paths swapped")):
            refused(SUPPORT, argv, says, what)
        r = subprocess.run([sys.executable, "-c", NO_MATPLOTLIB, str(FIGURES), "--help"], capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 0 and "--only" in r.stdout, f"figures.py --help without matplotlib: exit 0 (got {r.returncode})")
        r = subprocess.run([sys.executable, "-c", NO_MATPLOTLIB, str(FIGURES), "--br", "0"], capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 2 and "--br must be at least 1" in r.stderr,
              f"figures.py --br 0 without matplotlib: exit 2, the option named (got {r.returncode}: {r.stderr.strip()[-120:]})")
        refused(FIGURES, ["--out", str(foreign)], "is not a folder", "--out a file")
        r = subprocess.run([sys.executable, "-c", NO_MATPLOTLIB, str(FIGURES), "--out", str(work / "figures")],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 77 and "needs matplotlib" in r.stderr and not (work / "figures").exists(),
              f"figures.py drawing without matplotlib: skipped (77), no folder made (got {r.returncode})")

    rules(check)
    measured_rows(check)
    torch_before_library(check)
    commit_recording(check)
    recording_again(check)
    return check.exit_code()


def recording_again(check):
    """tools/record_runs.sh --again records a file again with its own commands, and
    tools/stale_quotes.py then names the lines of the notes that quote a number the file no longer
    holds; in a repository of their own (a copy of the two tools), with a stand-in command whose
    output a file decides."""
    git = shutil.which("git")
    if not git:
        print("skip record_runs.sh --again: needs git")
        return
    with tempfile.TemporaryDirectory(prefix="flashsteps-again-") as tmp:
        work = Path(tmp).resolve()
        env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(work), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", FLASHSTEPS_BUILD=str(work / "build"))
        for d in ("tools", "results", "notes", "build"):
            (work / d).mkdir()
        for tool in ("record_runs.sh", "stale_quotes.py"):
            shutil.copy(ROOT / "tools" / tool, work / "tools" / tool)
        (work / ".gitignore").write_text("build/\nbin/\nvalue\n")
        fake_cmake = work / "bin"  # the build folder's update: a cmake that succeeds
        fake_cmake.mkdir()
        (fake_cmake / "cmake").write_text("#!/bin/sh\nexit 0\n")
        (fake_cmake / "cmake").chmod(0o755)
        env["PATH"] = f"{fake_cmake}:{env['PATH']}"
        (work / "value").write_text("1234.56\n")
        recorded = work / "results" / "model.txt"
        recorded.write_text("# old header\n\n## $ cat value   (load average before: 0.00 0.01 0.05)\n1234.56\n\n")
        second = work / "results" / "two.txt"  # two commands, one of them quoted
        second.write_text("# old\n\n## $ echo 'a  b'   (load average before: 0.00 0.01 0.05)\na  b\n\n"
                          "## $ cat value   (load average before: 0.00 0.01 0.05)\n1234.56\n\n")
        (work / "notes" / "n.md").write_text("The model says 1234.56 us (model.txt), and 0.93 of it.\n"
                                             "<!-- counters-table:begin x -->\n| 1234.56 |\n<!-- counters-table:end -->\n")
        (work / "notes" / "other.md").write_text("1234.56 here cites nothing.\n")
        (work / "results" / "c.csv").write_text("modelled_us\n22.67923497\n")  # a CSV quoted rounded
        (work / "notes" / "c.md").write_text("c.csv models 22.68 us.\n")
        (work / "results" / "README.md").write_text("1234.56\n")  # prose and an image: no results files
        (work / "results" / "f.png").write_bytes(b"\x89PNG\r\n\x1a\n\0")
        run = lambda *a: subprocess.run(list(a), cwd=work, env=env, capture_output=True, text=True, timeout=120)
        run(git, "init", "-q")
        run(git, "add", "-A")
        run(git, "commit", "-q", "-m", "recorded")
        (work / "value").write_text("2345.67\n")  # what the command prints now: the model changed
        r = run("tools/record_runs.sh", "--again", "results/model.txt", "results/two.txt")
        text = recorded.read_text()
        two = second.read_text()
        check("2345.67" in two and "1234.56" not in two and "\na  b\n" in two and two.count("## $ ") == 2,
              "record_runs.sh --again rewrites every file named, each with all of its commands")
        check(r.returncode == 0 and "## $ cat value   (load average before:" in text and "2345.67" in text
              and "1234.56" not in text, f"record_runs.sh --again reruns the file's command (got {r.returncode}: {r.stderr.strip()[-200:]})")
        r = run(sys.executable, "tools/stale_quotes.py", "--check")
        check(r.returncode == 1 and r.stdout == "notes/n.md:1: 1234.56 (results/model.txt)\n",
              f"stale_quotes.py names the quote of the number gone, in the note that cites the file (got {r.returncode}: {r.stdout!r})")
        (work / "results" / "c.csv").write_text("modelled_us\n25.1\n")
        r = run(sys.executable, "tools/stale_quotes.py", "--check", "results/c.csv")
        check(r.returncode == 1 and r.stdout == "notes/c.md:1: 22.68 (results/c.csv)\n",
              f"stale_quotes.py finds a CSV's value quoted to 2 decimals (got {r.returncode}: {r.stdout!r})")
        r = run(sys.executable, "tools/stale_quotes.py", "--since", "no-such-rev")
        check(r.returncode == 2 and "no revision" in r.stderr, "stale_quotes.py refuses an unknown revision with exit 2")
        for named, says in (("notes/n.md", "is not a results file"), ("tools/record_runs.sh", "is not a results file"),
                            ("results/README.md", "is prose"), ("results/f.png", "is an image")):
            r = run(sys.executable, "tools/stale_quotes.py", "--check", named)
            check(r.returncode == 2 and says in r.stderr and not r.stdout,
                  f"stale_quotes.py --check {named}: exit 2, \"{says}\" (got {r.returncode}: {r.stderr.strip()})")
        r = run("tools/record_runs.sh", "--again", "notes/n.md")
        check(r.returncode == 2 and "records no command" in r.stderr, "record_runs.sh --again refuses a file it did not write")
        run(git, "add", "-A")
        run(git, "commit", "-q", "-m", "again")
        r = run("tools/record_runs.sh", "results/new.txt", "echo 'x  y'", "cat value")
        new = (work / "results" / "new.txt").read_text() if (work / "results" / "new.txt").exists() else ""
        check(r.returncode == 0 and "## $ echo 'x  y'   (load average before:" in new and "\nx  y\n" in new
              and "\n2345.67\n" in new, f"record_runs.sh records its commands into a new file (got {r.returncode})")
        r = run("tools/record_runs.sh", "--again", "results/model.txt")  # the tree is dirty now
        check(r.returncode == 2 and "uncommitted changes" in r.stderr, "record_runs.sh --again refuses a dirty tree")


def commit_recording(check):
    """cmake/WriteCommit.cmake records the commit of the repository whose top is the source tree: a
    .git in a folder above a copy of the tree (a copy without its own .git) is another tree's, and the
    build records "unknown" rather than that commit."""
    cmake, git = shutil.which("cmake"), shutil.which("git")
    if not cmake or not git:
        print("skip WriteCommit.cmake: needs cmake and git")
        return
    with tempfile.TemporaryDirectory(prefix="flashsteps-commit-") as tmp:
        work = Path(tmp).resolve()
        # No repository above the temporary folder counts: git stops its search there.
        env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(work.parent), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
        outer, copy = work / "outer", work / "outer" / "copy"
        copy.mkdir(parents=True)
        (outer / "a.txt").write_text("a\n")
        subprocess.run([git, "init", "-q", str(outer)], env=env, check=True)
        subprocess.run([git, "-C", str(outer), "add", "a.txt"], env=env, check=True)
        subprocess.run([git, "-C", str(outer), "commit", "-q", "-m", "outer"], env=env, check=True)
        (outer / ".gitignore").write_text("copy/\n*.cpp\n*.tmp\n")
        subprocess.run([git, "-C", str(outer), "add", ".gitignore"], env=env, check=True)
        subprocess.run([git, "-C", str(outer), "commit", "-q", "-m", "ignore"], env=env, check=True)
        head = subprocess.run([git, "-C", str(outer), "rev-parse", "--short=12", "HEAD"], env=env, check=True,
                              capture_output=True, text=True).stdout.strip()

        def recorded(src):
            out = work / "commit.cpp"
            subprocess.run([cmake, f"-DSRC={src}", f"-DOUT={out}", "-P", str(ROOT / "cmake" / "WriteCommit.cmake")],
                           env=env, check=True, capture_output=True)
            text = out.read_text()
            return text.split('return "', 1)[-1].split('"', 1)[0]

        got = recorded(outer)
        check(got == head, f"WriteCommit.cmake: a source tree with its own .git, clean: its commit ({head}; got {got})")
        (outer / "a.txt").write_text("b\n")
        got = recorded(outer)
        check(got == head + "-dirty", f"WriteCommit.cmake: a tracked file changed: {head}-dirty (got {got})")
        got = recorded(copy)
        check(got == "unknown", f"WriteCommit.cmake: a tree without a .git inside another repository: unknown (got {got})")
        got = recorded(work)
        check(got == "unknown", f"WriteCommit.cmake: no repository at all: unknown (got {got})")


# Runs a tool with ctypes.CDLL stood in for when it loads STAND_IN_LIB (it logs "library" and fails to
# load), and, unless NO_TORCH is set, a stand-in torch on the path that logs "torch" when imported.
RUNNER = r"""
import ctypes, os, runpy, sys
real = ctypes.CDLL
def log(what):
    with open(os.environ["ORDER_LOG"], "a") as f:
        f.write(what + "\n")
def cdll(name, *args, **kwargs):
    if str(name) == os.environ["STAND_IN_LIB"]:
        log("library")
        raise OSError("the stand-in library does not load")
    return real(name, *args, **kwargs)
ctypes.CDLL = cdll
if os.environ.get("NO_TORCH"):
    sys.modules["torch"] = sys.modules["flash_attn"] = None  # `import torch` raises ImportError
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""
STAND_IN_TORCH = r"""
import os
with open(os.environ["ORDER_LOG"], "a") as f:
    f.write("torch\n")
__version__ = "0+stand-in"
class cuda:
    @staticmethod
    def is_available():
        return False
"""


def measured_rows(check):
    """results_csv.measured_row: the header's columns, a chapter 10 problem's words whole in its mods
    column (commas and spaces inside quotes), its alignment in causal."""
    import csv
    sys.path.insert(0, str(ROOT / "tools"))
    from results_csv import CSV_HEADER, measured_row
    fixed = '"NVIDIA H200",580.1,13.0,abc123'
    for kw, causal, mods in (({}, "none", "none"), ({"causal_name": "bottom-right",
                             "mods": "mask_mod=varlen seqlens=3,4 kv_heads=2"}, "bottom-right",
                                                   "mask_mod=varlen seqlens=3,4 kv_heads=2")):
        line = measured_row(fixed, "10_masks", "varlen", "fp16", 1, 4, 7, 7, 64, False, 1.5, 1.25, 2.0, 3.0, 0, 1e-3,
                            True, **kw)
        row = next(csv.DictReader([CSV_HEADER, line]))
        check(len(row) == len(CSV_HEADER.split(",")) and None not in row and row["mods"] == mods
              and row["causal"] == causal and row["kind"] == "measured" and row["device"] == "NVIDIA H200",
              f"measured_row: every column, mods {mods!r}, causal {causal} (got {row.get('mods')!r}, {row.get('causal')})")


def torch_before_library(check):
    """The scripts that load libflashsteps_capi.so and use torch import torch first: the library links
    the system's CUDA, and `import torch` after it segfaults (an H200 with CUDA 13.0). Without torch
    they still refuse a library that does not load, with exit 2."""
    with tempfile.TemporaryDirectory(prefix="flashsteps-torch-order-") as tmp:
        work = Path(tmp)
        (work / "torch" / "nn").mkdir(parents=True)
        (work / "torch" / "__init__.py").write_text(STAND_IN_TORCH)
        (work / "torch" / "nn" / "__init__.py").write_text("")
        (work / "torch" / "nn" / "functional.py").write_text("")
        lib = str(work / "libflashsteps_capi.so")
        for script in (ROOT / "tools" / "bench_torch_sdpa.py", ROOT / "tools" / "bench_torch_decode.py",
                       ROOT / "tools" / "bench_torch_masks.py"):
            for no_torch in (False, True):
                order = work / "order.log"
                order.unlink(missing_ok=True)
                env = dict(os.environ, ORDER_LOG=str(order), STAND_IN_LIB=lib,
                           PYTHONPATH=os.pathsep.join([str(work)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
                if no_torch:
                    env["NO_TORCH"] = "1"
                r = subprocess.run([sys.executable, "-c", RUNNER, str(script), "--chapters", lib], env=env,
                                   capture_output=True, text=True, timeout=120)
                got = order.read_text().split() if order.exists() else []
                want = ["library"] if no_torch else ["torch", "library"]
                check(got == want and r.returncode == 2 and "cannot load" in r.stderr and "Traceback" not in r.stderr,
                      f"{script.name} {'without torch' if no_torch else 'imports torch before it loads the library'}: "
                      f"{' then '.join(want)}, exit 2, \"cannot load\" (got {got}, {r.returncode}: "
                      f"{(r.stderr.strip().splitlines() or [''])[-1]})")


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
