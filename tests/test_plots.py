#!/usr/bin/env python3
"""test_plots.py: tools/plot_speedups.py on the synthetic sample CSV (tests/data/sample_results.csv).

  python3 tests/test_plots.py --out DIR      # exit 0 pass, 1 fail, 77 skip (no matplotlib)

Checks that the four PNGs are written and non-empty, that the results table between the README
markers is regenerated from the CSV (and the same again on a second run), that a failing row is
left out and named on stderr, and that a README without the markers is left as it was; that the
modelled rows (kind = modelled) get their own figure in their own folder and stay out of the
measured figures and the table; and that a file in another schema is refused.
"""
import argparse
import importlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

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
        print("matplotlib not found: install python3-matplotlib")
        return 77

    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="flashsteps-plots-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "png", ignore_errors=True)  # only what this test wrote there before
    passed, failed = 0, 0

    def check(ok, what):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        passed += ok
        failed += not ok

    def run(*extra):
        r = subprocess.run([sys.executable, str(SCRIPT), str(SAMPLE), "--out", str(work / "png"), *extra],
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
    check(is_png(work / "png" / f"{SLUG}-modelled" / "modelled_speedup.png"),
          "modelled_speedup.png written from the modelled rows, in a folder of their own")
    check(not (work / "png" / SLUG / "modelled_speedup.png").exists(), "no modelled figure among the measured ones")
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
    r = run("--readme", str(plain))
    check(r.returncode == 0, "a README without markers is not an error")
    check(plain.read_text() == WITHOUT_MARKERS, "a README without markers is left unchanged")
    check("markers" in r.stderr, "a README without markers gets a warning")

    old_schema = work / "old-schema.csv"
    old_schema.write_text(SAMPLE.read_text().replace(",kind,bound\n", "\n", 1))
    r = subprocess.run([sys.executable, str(SCRIPT), str(old_schema), "--out", str(work / "old")], capture_output=True,
                       text=True, timeout=300)
    check(r.returncode == 2 and "header" in r.stderr, "a CSV in another schema is refused (exit 2, says why)")

    sys.path.insert(0, str(SCRIPT.parent))
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import plot_speedups
    check(plot_speedups.device_limits("NVIDIA H100 80GB HBM3") == (989.0, 3.35)
          and plot_speedups.device_limits("NVIDIA H200") == (989.0, 4.8)
          and plot_speedups.device_limits("NVIDIA A100-SXM4-80GB") == (312.0, 2.0)
          and plot_speedups.device_limits(DEVICE) == (None, None), "device peaks and bandwidths")
    check(plot_speedups.slug(DEVICE) == "sample-device-synthetic-data-for-the-plot-test", "device slug")

    if not args.out:
        shutil.rmtree(work)
    print(f"plots: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
