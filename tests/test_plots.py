#!/usr/bin/env python3
"""test_plots.py: tools/plot_speedups.py on the synthetic sample CSV (tests/data/sample_results.csv).

  python3 tests/test_plots.py --out DIR      # exit 0 pass, 1 fail, 77 skip (no matplotlib)

Checks that the four PNGs are written and non-empty, that the results table between the README
markers is regenerated from the CSV (and the same again on a second run), that a failing row is
left out and named on stderr, and that a README without the markers is refused (exit code 2) and
left as it was, before any PNG is written; that the
modelled rows (kind = modelled) get their own figure in their own folder and stay out of the
measured figures and the table; and that a file in another schema is refused. Then the edges: the
CPU emulator's rows never enter the table; by default nothing is written into the checkout but
build/; unreadable inputs and unwritable outputs end with a message and exit code 2, not a
traceback; without matplotlib the message names the interpreter that was tried.
"""
import argparse
import hashlib
import importlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "plot_speedups.py"
SAMPLE = ROOT / "tests" / "data" / "sample_results.csv"
DEVICE = "Sample device (synthetic data for the plot test)"
PNGS = ("speedup_over_naive.png", "tflops_vs_n.png", "extra_memory_vs_n.png", "roofline.png")
SLUG = "sample-device-synthetic-data-for-the-plot-test"
BEGIN, END = "<!-- results-table:begin -->", "<!-- results-table:end -->"
WITH_MARKERS = f"# Results\n\nBefore the table.\n\n{BEGIN}\nan old table\n{END}\n\nAfter the table.\n"
WITHOUT_MARKERS = "# Results\n\nNo table markers here.\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="working folder, kept for a look at the PNGs (default: a temporary folder, "
                                  "removed after)")
    args = ap.parse_args()
    try:
        importlib.import_module("matplotlib")  # the script under test needs it: skip rather than fail without
    except ImportError:
        print(f"matplotlib not found by {sys.executable}: install python3-matplotlib (for /usr/bin/python3)")
        return 77

    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="flashsteps-plots-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "png", ignore_errors=True)  # only what this test wrote there before
    check = Checks("plots")

    def run(*extra, csv=(SAMPLE,)):
        r = subprocess.run([sys.executable, str(SCRIPT), *map(str, csv), "--out", str(work / "png"), *extra],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
        return r

    def is_png(path):
        return path.is_file() and path.stat().st_size > 0 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    readme = work / "README.md"
    readme.write_text(WITH_MARKERS)
    r = run("--readme", str(readme))
    check(r.returncode == 0, f"plot_speedups.py exits 0 (got {r.returncode})")
    # Measured and modelled rows of the same device: one folder each.
    for name in PNGS:
        check(is_png(work / "png" / SLUG / name), f"{name} written, a non-empty PNG")
        check(not (work / "png" / f"{SLUG}-modelled" / name).exists(), f"no {name} from the modelled rows")
    for name in ("modelled_speedup.png", "modelled_tflops_vs_n.png", "modelled_time_vs_n.png"):
        check(is_png(work / "png" / f"{SLUG}-modelled" / name),
              f"{name} written from the modelled rows, in a folder of their own")
    check(not (work / "png" / SLUG / "modelled_speedup.png").exists(), "no modelled figure among the measured ones")
    # Each PNG names the CSV its rows came from, by its path in the repository and its SHA-256.
    sys.path.insert(0, str(ROOT / "tools"))
    from plot_speedups import png_sources
    sample = (SAMPLE.relative_to(ROOT).as_posix(), hashlib.sha256(SAMPLE.read_bytes()).hexdigest())
    named = [png_sources(work / "png" / f"{SLUG}-modelled" / "modelled_speedup.png"),
             png_sources(work / "png" / SLUG / PNGS[0])]
    check(named == [[sample], [sample]], f"each figure's Source chunk names the sample CSV and its SHA-256 ({named})")
    text = readme.read_text()
    table = text[text.find(BEGIN):text.find(END)]
    check("an old table" not in text, "the old table between the markers is gone")
    check(DEVICE in table and "04_flash_v1" in table and "flash_v2_mma" in table,
          "the new table names the sample device and the chapters")
    check(text.startswith("# Results\n\nBefore the table.\n") and text.endswith(f"{END}\n\nAfter the table.\n"),
          "the text around the markers is untouched")
    check("flash_v2_swizzle" not in table and "flash_v2_swizzle" in r.stderr,
          "the failing row (pass = 0) is left out of the table and named on stderr")
    check("flash_v2_modelled_only" not in table and "0.19" not in table, "modelled rows stay out of the table")

    r = run("--readme", str(readme))
    check(r.returncode == 0 and readme.read_text() == text, "a second run writes the same table")

    plain = work / "README-without-markers.md"
    plain.write_text(WITHOUT_MARKERS)
    untouched = work / "png-without-markers"
    r = subprocess.run([sys.executable, str(SCRIPT), str(SAMPLE), "--out", str(untouched), "--readme", str(plain)],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 2 and "markers" in r.stderr and "Traceback" not in r.stderr,
          f"a README without markers: exit 2 and \"markers\" (got {r.returncode}: {r.stderr.strip()[-200:]})")
    check(plain.read_text() == WITHOUT_MARKERS, "a README without markers is left unchanged")
    check(not untouched.exists() and not r.stdout, "a README without markers: refused before any PNG is written")

    old_schema = work / "old-schema.csv"
    old_schema.write_text(SAMPLE.read_text().replace(",bound,mods\n", ",bound\n", 1))
    r = subprocess.run([sys.executable, str(SCRIPT), str(old_schema), "--out", str(work / "old")], capture_output=True,
                       text=True, timeout=300)
    check(r.returncode == 2 and "header" in r.stderr, "a CSV in another schema is refused (exit 2, says why)")

    sys.path.insert(0, str(SCRIPT.parent))
    # The published reference comes from its one home, common/model/published.h: 36 rates, every
    # N of 512 ... 16k for d = 64, 128 and 256, causal and not, causal slower than non-causal.
    ps = importlib.import_module("plot_speedups")
    fa2 = ps.published_fa2()
    check(sorted({k[0] for k in fa2}) == [512, 1024, 2048, 4096, 8192, 16384] and
          sorted({k[1] for k in fa2}) == [64, 128, 256] and len(fa2) == 36,
          f"published.h's 36 FlashAttention-2 rates parsed (got {len(fa2)})")
    check(all(fa2[(n, d, True)] < fa2[(n, d, False)] for n, d, _ in fa2), "causal rates below non-causal ones")
    paper = {"dtype": "fp16", "mask": "none", "Lq": 1024, "Lk": 1024, "B": 16, "H": 32, "d": 64, "causal": "none",
             "mods": "none"}
    check(ps.published_matches(paper) and not ps.published_matches(dict(paper, B=8)),
          "the reference is drawn at the papers' shapes only (B·N = 16k)")
    check(not ps.published_matches(dict(paper, mods="softcap=30")), "nor beside a row with chapter 10's settings")
    # The speedups' baseline: chapter 01's naive where it ran, else its one variant that did (the
    # model sweep's rows are the tour's bests), and none where two others ran and naive did not.
    row = dict(paper, median_ms=1.0, kind="modelled", bound="", device=DEVICE, timestamp="")
    def baseline(variants):
        rows = [dict(row, chapter=c, variant=v) for c, v in variants]
        figs = object.__new__(ps.Figures)  # chapter01 reads the groups alone: no matplotlib
        figs.groups = ps.series(rows)
        return [figs.chapter01(g) for g in sorted(figs.groups)]
    check(baseline([("01_naive_attention", "naive"), ("01_naive_attention", "register_blocked"),
                    ("05_flash_v2", "lean_loop")]) == ["01 naive"]
          and baseline([("01_naive_attention", "register_blocked"), ("05_flash_v2", "lean_loop")]) == ["01 register_blocked"]
          and baseline([("01_naive_attention", "scores_tiled"), ("01_naive_attention", "register_blocked")]) == [None],
          "speedups over chapter 01's naive, else its one variant run, else none")
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import plot_speedups
    check(plot_speedups.device_limits("NVIDIA H100 80GB HBM3") == (989.0, 3.35)
          and plot_speedups.device_limits("NVIDIA H200") == (989.0, 4.8)
          and plot_speedups.device_limits("NVIDIA A100-SXM4-80GB") == (312.0, 2.0)
          and plot_speedups.device_limits(DEVICE) == (None, None), "device peaks and bandwidths")
    check(plot_speedups.slug(DEVICE) == "sample-device-synthetic-data-for-the-plot-test", "device slug")

    # The CPU emulator's rows: plotted, never in the README's table of measurements.
    emulator = work / "emulator.csv"
    lines = SAMPLE.read_text().splitlines(keepends=True)
    emulator.write_text(lines[0] + "".join(l.replace(f'"{DEVICE}"', '"CPU emulation (simt)"') for l in lines[1:]))
    readme.write_text(WITH_MARKERS)
    r = run("--readme", str(readme), csv=[emulator])
    check(r.returncode == 0 and readme.read_text() == WITH_MARKERS and "left as it was" in r.stderr,
          "emulator rows alone leave the README as it was, and say so")
    r = run("--readme", str(readme), csv=[emulator, SAMPLE])
    table = readme.read_text()
    check(r.returncode == 0 and DEVICE in table and "CPU emulation" not in table and "emulator.csv" not in table,
          "emulator rows beside measured ones stay out of the table")
    check("left out of the results table" in r.stderr, "the rows left out are counted on stderr")

    # By default the PNGs go to build/plots/<device>/, git-ignored: nothing else in the checkout.
    default = ROOT / "build" / "plots" / plot_speedups.slug(DEVICE)
    r = subprocess.run([sys.executable, str(SCRIPT), str(SAMPLE)], capture_output=True, text=True, timeout=300)
    written = [Path(line) for line in r.stdout.split()]
    modelled = default.parent / (default.name + "-modelled")  # the sample's modelled rows: a folder of their own
    check(r.returncode == 0 and len(written) == 7 and all(p.is_file() for p in written)
          and sorted(p.parent for p in written) == [default] * 4 + [modelled] * 3,
          f"by default the PNGs go to {default.relative_to(ROOT)}/ (and -modelled/)" + ("" if r.returncode == 0 else r.stderr))
    shutil.rmtree(default, ignore_errors=True)

    # Inputs that cannot be read, outputs that cannot be written: exit 2, a message, no traceback.
    binary = work / "binary.csv"
    binary.write_bytes(bytes(range(256)))
    blocker = work / "a-file"
    blocker.write_text("not a folder\n")
    for what, argv, says in (
            ("a folder as input", [str(work)], "cannot read"),
            ("a missing input", [str(work / "missing.csv")], "No such file"),
            ("a binary input", [str(binary)], "is not a CSV text file"),
            ("an output folder that cannot be made", [str(SAMPLE), "--out", "/proc/flashsteps-plots"], "cannot write PNGs"),
            ("an output folder that is a file", [str(SAMPLE), "--out", str(blocker / "png")], "cannot write PNGs"),
            ("a README that cannot be read", [str(SAMPLE), "--out", str(work / "png"), "--readme",
                                              str(work / "missing.md")], "cannot read")):
        r = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=300)
        check(r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr,
              f"{what}: exit 2 and \"{says}\" (got {r.returncode}: {r.stderr.strip()[-200:]})")

    # Without matplotlib: the message names the interpreter tried and where matplotlib is.
    blocked = ("import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = sys.argv[1:]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", blocked, str(SCRIPT), str(SAMPLE)], capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == 2 and f"matplotlib not found by {sys.executable}" in r.stderr and "pip install" in r.stderr,
          f"without matplotlib: exit 2, naming {sys.executable} (got {r.stderr.strip()})")

    if not args.out:
        shutil.rmtree(work)
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
