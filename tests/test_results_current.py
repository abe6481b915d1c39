#!/usr/bin/env python3
"""test_results_current.py: the committed model results are today's book (the CTest results_current).

  python3 tests/test_results_current.py build/bin/flashsteps     # exit 0 pass, 1 fail, 2 bad input

- the three registries (`flashsteps run --list`, `backward --list`, `decode --list`) list every
  chapter folder, each chapter with one best;
- results/model-h100/model.csv (tools/model_sweep.sh: `tour --chapters-only`, each chapter at its
  best step) holds exactly the best variant of every chapter of `run --list`, no other (the tour
  runs another step where the best cannot take a problem: no sweep shape is such a problem today);
- results/cpu-emulation-simt/counters.csv (tools/counter_tables.py --profile) has every chapter of
  the three registries, its best step among its rows, no variant the registry no longer has, and no
  chapter none lists;
- every PNG in results/'s folders (results/model-h100/'s figures, a GPU's) was drawn from the CSVs
  committed beside it: tools/plot_speedups.py writes each source CSV's SHA-256 into the PNG's
  "Source" text chunk (png_sources reads it), and it must be the file's today; a source outside the
  repository is refused.

Then rules are broken on a copy, each breakage once (a step renamed in the model CSV, and so its
figures' CSV changed after they were drawn; a chapter's best renamed in the counters CSV; a chapter's
rows deleted from it; a figure's Source chunk removed; a GPU's CSV changed after its figures were
drawn) and each must fail.
"""
import csv
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from plot_speedups import PNG_SIGNATURE, png_chunks, png_sources  # noqa: E402  (no matplotlib needed to import it)

MODEL_CSV = Path("results/model-h100/model.csv")
COUNTERS_CSV = Path("results/cpu-emulation-simt/counters.csv")
FIGURES = Path("results/model-h100")
GPU_CSV = Path("results/nvidia-h200/promise.csv")  # a GPU's measured rows, which its figures are drawn from
CHAPTER = re.compile(r"^(\d\d_\w+)")
VARIANT = re.compile(r"^  (\S+)\s")


def registry(binary, *command):
    """{chapter: (variants in order, its best)} from `flashsteps COMMAND --list`."""
    r = subprocess.run([binary, *command, "--list"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(command)} --list exited {r.returncode}: {r.stderr}")
    out, chapter = {}, None
    for line in r.stdout.splitlines():
        if CHAPTER.match(line):
            chapter = CHAPTER.match(line).group(1)
            out[chapter] = ([], None)
        elif chapter and VARIANT.match(line):
            name = VARIANT.match(line).group(1)
            variants, best = out[chapter]
            variants.append(name)
            out[chapter] = (variants, name if line.rstrip().endswith("(best)") else best)
    return out


def pairs(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [(r["chapter"], r["variant"]) for r in csv.DictReader(f)]


def problems(root, forward, others):
    """What is stale under `root` (a tree with results/), in sentences."""
    found = []
    tour = {ch: best for ch, (_, best) in forward.items() if best}
    have = pairs(root / MODEL_CSV)
    for ch, v in sorted(set(have)):
        if tour.get(ch) != v:
            found.append(f"{MODEL_CSV}: {ch} {v} is not the chapter's best ({tour.get(ch, 'no such chapter')})")
    for ch in sorted(set(tour) - {ch for ch, _ in have}):
        found.append(f"{MODEL_CSV}: no rows of {ch} (its best: {tour[ch]})")

    every = {**forward, **others}
    counted = {}
    for ch, v in pairs(root / COUNTERS_CSV):
        counted.setdefault(ch, set()).add(v)
    for ch in sorted(set(counted) - set(every)):
        found.append(f"{COUNTERS_CSV}: rows of {ch}, which no registry lists")
    for ch, (variants, best) in sorted(every.items()):
        if ch not in counted:
            found.append(f"{COUNTERS_CSV}: no rows of {ch}")
            continue
        if best not in counted[ch]:
            found.append(f"{COUNTERS_CSV}: {ch}'s best, {best}, has no rows")
        for v in sorted(counted[ch] - set(variants)):
            found.append(f"{COUNTERS_CSV}: {ch} {v} is no variant of the registry's")

    if not any((root / FIGURES).glob("*.png")):
        found.append(f"{FIGURES}: no figures")
    for png in sorted(root.glob("results/*/*.png")):
        named = png_sources(png)
        if not named:
            found.append(f"{png.relative_to(root)}: names no source CSV (redraw it with tools/plot_speedups.py)")
        for name, digest in named:
            f = root / name
            if Path(name).is_absolute() or ".." in Path(name).parts:
                found.append(f"{png.relative_to(root)}: drawn from {name}, outside the repository")
            elif not f.is_file():
                found.append(f"{png.relative_to(root)}: drawn from {name}, which is not committed")
            elif hashlib.sha256(f.read_bytes()).hexdigest() != digest:
                found.append(f"{png.relative_to(root)}: drawn from another {name} than the committed one "
                             f"(redraw: tools/plot_speedups.py {name} --out {png.parent.relative_to(root)})")
    return found


def main():
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        print("usage: test_results_current.py FLASHSTEPS_BINARY", file=sys.stderr)
        return 2
    binary = sys.argv[1]
    check = Checks("results_current")
    forward = registry(binary, "run")
    others = {**registry(binary, "backward"), **registry(binary, "decode")}
    folders = {d.name for d in ROOT.glob("[0-9][0-9]_*") if (d / "CMakeLists.txt").is_file()}
    listed = set(forward) | set(others)
    check(listed == folders and all(best for _, best in {**forward, **others}.values()),
          f"the registries list every chapter folder, each with a best (missing: {sorted(folders - listed)}, "
          f"extra: {sorted(listed - folders)})")

    today = problems(ROOT, forward, others)
    for p in today:
        print("  " + p)
    check(not today, "model.csv, counters.csv and the model's figures are the registry's and each other's today")

    # Each rule broken once, on a copy of the three files' folders.
    with tempfile.TemporaryDirectory(prefix="flashsteps-results-") as tmp:
        tmp = Path(tmp)

        def copy():
            shutil.rmtree(tmp / "results", ignore_errors=True)
            for rel in (MODEL_CSV.parent, COUNTERS_CSV.parent, GPU_CSV.parent):
                shutil.copytree(ROOT / rel, tmp / rel)
            return tmp

        def edit(rel, old, new):
            f = copy() / rel
            f.write_text(f.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
            return problems(tmp, forward, others)

        best05 = forward["05_flash_v2"][1]
        found = edit(MODEL_CSV, f",05_flash_v2,{best05},", ",05_flash_v2,rows_32,")
        check(any("rows_32 is not the chapter's best" in p for p in found) and
              any("drawn from another" in p for p in found),
              "a model CSV with another step than the best fails, and so do its figures")
        found = edit(GPU_CSV, ",5676c2862807,", ",5676c2862808,")  # another commit's rows
        check(any(f"drawn from another {GPU_CSV.as_posix()}" in p for p in found),
              "a GPU's figures drawn from another CSV than the one committed beside them fail")
        best08 = others["08_decoding"][1]
        found = edit(COUNTERS_CSV, f",08_decoding,{best08},", ",08_decoding,old_step,")
        check(any(f"08_decoding's best, {best08}, has no rows" in p for p in found) and
              any("old_step is no variant" in p for p in found),
              "a counters CSV without a chapter's best, or with a step the registry lost, fails")
        f = copy() / COUNTERS_CSV
        f.write_text("".join(line for line in f.read_text(encoding="utf-8").splitlines(True)
                             if ",09_hopper," not in line), encoding="utf-8")
        check(any("no rows of 09_hopper" in p for p in problems(tmp, forward, others)),
              "a counters CSV without a chapter's rows fails")
        png = next((copy() / FIGURES).glob("*.png"))
        png.write_bytes(PNG_SIGNATURE + b"".join(whole for kind, _, whole in png_chunks(png.read_bytes())
                                                 if kind != b"tEXt"))  # the PNG again without its text chunks
        check(any(f"{png.name}: names no source CSV" in p for p in problems(tmp, forward, others)),
              "a figure that names no source CSV fails")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
