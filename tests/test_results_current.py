#!/usr/bin/env python3
"""test_results_current.py: the committed model results are today's book (the CTest results_current).

  python3 tests/test_results_current.py build/bin/flashsteps     # exit 0 pass, 1 fail, 2 bad input

- results/model-h100/model.csv (tools/model_sweep.sh: the tour's chapters, each at its best step)
  holds exactly the registry's best variant of every chapter the tour runs (`flashsteps run --list`
  marks them "(best)"), no other;
- results/cpu-emulation-simt/counters.csv (tools/counter_tables.py --profile) has every chapter of
  the three registries (forward, `backward --list`, `decode --list`), its best step among its rows,
  and no variant the registry no longer has;
- every PNG in results/model-h100/ was drawn from the CSV committed beside it: tools/plot_speedups.py
  writes each input's SHA-256 into the PNG's "Source" text chunk, and it must be the file's today.

Then each rule is broken once on a copy (a step renamed in the model CSV, a chapter's best missing
from the counters CSV, a figure whose CSV changed after it was drawn) and must fail.
"""
import csv
import hashlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
MODEL_CSV = Path("results/model-h100/model.csv")
COUNTERS_CSV = Path("results/cpu-emulation-simt/counters.csv")
FIGURES = Path("results/model-h100")
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


def png_text(path):
    """{keyword: text} of a PNG's tEXt chunks."""
    data, out, at = Path(path).read_bytes(), {}, 8
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"tEXt":
            key, _, text = data[at + 8:at + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = text.decode("latin-1")
        at += 12 + length
    return out


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
    for ch, (variants, best) in sorted(every.items()):
        if ch not in counted:
            found.append(f"{COUNTERS_CSV}: no rows of {ch}")
            continue
        if best not in counted[ch]:
            found.append(f"{COUNTERS_CSV}: {ch}'s best, {best}, has no rows")
        for v in sorted(counted[ch] - set(variants)):
            found.append(f"{COUNTERS_CSV}: {ch} {v} is no variant of the registry's")

    pngs = sorted((root / FIGURES).glob("*.png"))
    if not pngs:
        found.append(f"{FIGURES}: no figures")
    for png in pngs:
        source = (png_text(png) or {}).get("Source", "")
        named = re.findall(r"([^;]+?) sha256 ([0-9a-f]{64})", source)
        if not named:
            found.append(f"{png.relative_to(root)}: names no source CSV (redraw it with tools/plot_speedups.py)")
        for name, digest in named:
            name = name.strip()
            f = root / name
            if not f.is_file():
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
    check(len(forward) >= 8 and all(best for _, best in forward.values()),
          f"the registry lists the tour's chapters, each with a best ({len(forward)})")
    check({"07_backward", "08_decoding"} <= set(others), "backward and decode list their chapters")

    today = problems(ROOT, forward, others)
    for p in today:
        print("  " + p)
    check(not today, "model.csv, counters.csv and the model's figures are the registry's and each other's today")

    # Each rule broken once, on a copy of the three files' folders.
    with tempfile.TemporaryDirectory(prefix="flashsteps-results-") as tmp:
        tmp = Path(tmp)

        def copy():
            shutil.rmtree(tmp / "results", ignore_errors=True)
            for rel in (MODEL_CSV.parent, COUNTERS_CSV.parent):
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
        best08 = others["08_decoding"][1]
        found = edit(COUNTERS_CSV, f",08_decoding,{best08},", ",08_decoding,old_step,")
        check(any(f"08_decoding's best, {best08}, has no rows" in p for p in found) and
              any("old_step is no variant" in p for p in found),
              "a counters CSV without a chapter's best, or with a step the registry lost, fails")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
