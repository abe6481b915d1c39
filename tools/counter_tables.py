#!/usr/bin/env python3
"""counter_tables.py: the "What the counters say" table of every chapter note, from the counters CSV.

  tools/counter_tables.py --profile build-counters   # profile every chapter again into the CSV, then
                                                     # rewrite the notes' tables (a counters build)
  tools/counter_tables.py                            # rewrite the tables from the committed CSV only
  tools/counter_tables.py --check                    # exit 1 when a note's table is not the CSV's

The CSV is results/cpu-emulation-simt/counters.csv (`flashsteps profile --counters-csv`, and
`flashsteps backward --profile` and `decode --profile` for chapters 07 and 08; schema in
results/README.md): one row per stage of every variant that takes its chapter's problem (chapter
01's math_path, which needs a GPU, and chapter 10's packed and windowed steps do not), on the
emulator's default problem (with is_causal for chapters
06 and 07, and N = 1024 for 06; chapter 08's decoding problem; chapter 09 at N = 1024, d = 128;
chapter 10 with a sliding window at N = 1024). A note gets its chapter's table between the markers

  <!-- counters-table:begin 01_naive_attention -->
  <!-- counters-table:end -->

so a note without them (or a new chapter) only needs the two lines; --check also fails when a
chapter of the CSV has no table in any note. The table has a row per stage
and the columns every chapter shares (coalescing, conflicts, DRAM bytes, FLOP, modelled time and
bound); chapters 05, 06 and 09, whose steps are one kernel each, get a row per step with ldmatrix and
L1 wavefronts per mma and the model's L1, issue, tensor and latency terms, and chapter 07 dQ's atomics. Exit codes: 0 done, 1 a table
differs (--check) or profiling failed, 2 bad input.
"""
import argparse
import csv
import re
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CSV = REPO / "results" / "cpu-emulation-simt" / "counters.csv"
NOTES = REPO / "notes"
# The emulator's default problem for every chapter; chapters 06 and 07 skip causal tiles, so with
# is_causal, and chapter 06 at N = 1024, where its plan visits 72 of 128 tile pairs (at N = 256, 6
# of 8). Chapter 09's steps take 64, 128 or (step h at d = 64) 192 query rows a block (2 to 4 blocks per
# (batch, head) at N = 256): N = 1024 and its head dim, 128. Chapter 10 on a pattern its first four steps share, a sliding window
# (its steps e and f take packed batches and FlashAttention-2's windows: results/model-h100/).
# Chapters 07 and 08 have a registry and a command of their own; 08 on decode's default problem.
PROBLEM = {"06_causal": ["--causal", "-n", "1024"], "07_backward": ["--causal"],
           "09_hopper": ["-n", "1024", "-d", "128"],
           "10_masks": ["-n", "1024", "--mask-mod", "sliding_window", "--window", "256"]}
COMMAND = {"07_backward": ["backward", "--profile"], "08_decoding": ["decode", "--profile"]}
BEGIN = re.compile(r"<!-- counters-table:begin (\S+) -->")
END = "<!-- counters-table:end -->"


def fail(msg, code=2):
    print(f"counter_tables: {msg}", file=sys.stderr)
    sys.exit(code)


def profile(build):
    binary = Path(build) / "bin" / "flashsteps"
    if not binary.is_file():
        fail(f"{binary} not found: configure and build a counters build first "
             "(cmake -S . -B build-counters -G Ninja -DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON; "
             "cmake --build build-counters -j2 --target flashsteps)")
    fresh = CSV.with_suffix(".csv.new")
    fresh.unlink(missing_ok=True)
    chapters = sorted(p.name for p in REPO.glob("[0-9][0-9]_*") if (p / "CMakeLists.txt").is_file())
    for chapter in chapters:
        print(f"counter_tables: profiling {chapter} ...", file=sys.stderr, flush=True)
        command = COMMAND.get(chapter, ["profile", "--chapter", chapter])
        r = subprocess.run([str(binary)] + command + ["--counters-csv", str(fresh)] + PROBLEM.get(chapter, []),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            fresh.unlink(missing_ok=True)
            fail(f"flashsteps {' '.join(command)} ({chapter}) exited {r.returncode}:\n{r.stderr}", r.returncode or 1)
    fresh.replace(CSV)


def read(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    if not rows:
        fail(f"{path} has no rows")
    needed = {"commit", "chapter", "variant", "stage", "ld_sectors_per_request", "modelled_us", "bound"}
    if not needed <= set(rows[0]):
        fail(f"{path} is not a counters CSV (results/README.md): it lacks {', '.join(sorted(needed - set(rows[0])))}")
    return rows


def num(x):
    return float(x) if x not in ("", None) else 0.0


def per_request(sectors_per_request, requests):
    return f"{num(sectors_per_request):.2f}" if num(requests) > 0 else "–"


def count(x):
    x = num(x)
    if x == 0:
        return "0"
    return f"{x:.3g}" if x >= 1e6 else f"{x:.0f}"


def loads(r):
    out = []
    if num(r["ld_requests"]) > 0:
        out.append(f"{num(r['ld_sectors_per_request']):.2f}")
    if num(r["cp_async_requests"]) > 0:
        out.append(f"cp.async {num(r['cp_async_sectors_per_request']):.2f}")
    if num(r.get("tma_requests")) > 0:
        out.append(f"TMA {num(r['tma_sectors_per_request']):.2f}")
    return ", ".join(out) or "–"


def tensor_flop(r):
    """mma.sync's and wgmma's FLOP together (a CSV written before the wgmma columns: mma.sync's)."""
    return count(num(r["mma_flop"]) + num(r.get("wgmma_flop")))


def shared(r):
    if num(r["shared_requests"]) == 0:
        return "–"
    return f"{num(r['shared_wavefronts']) / num(r['shared_requests']):.2f} ({count(r['shared_conflicts'])})"


def dram_mb(r):
    return f"{(num(r['dram_read_bytes']) + num(r['dram_write_bytes'])) / 1e6:.3f}"


def ratio(a, b):
    return f"{num(a) / num(b):.2f}" if num(b) > 0 else "–"


def atomics(r):
    if num(r["atom_requests"]) == 0:
        return "0"
    return f"{count(r['atom_requests'])} ({num(r['atom_sectors_per_request']):.2f})"


# The columns of each kind of table: (header, cell of a row). "stages" for every chapter, a row
# per stage; "steps" for chapters 05, 06 and 09, one kernel per step, with what the tensor-core steps
# add (ldmatrix per mma, the model's L1, issue, tensor and latency terms); "backward" for chapter 07,
# with dQ's atomics. "mma FLOP" counts mma.sync's and chapter 09's wgmma's. Every table ends with the
# modelled time and its bound.
LAYOUTS = {
    "stages": [
        ("global loads: sectors/request", loads),
        ("stores: sectors/request", lambda r: per_request(r["st_sectors_per_request"], r["st_requests"])),
        ("shared: wavefronts/request (bank conflicts)", shared),
        ("DRAM MB", dram_mb),
        ("mma FLOP", tensor_flop),
        ("MUFU ops", lambda r: count(r["mufu"])),
    ],
    "steps": [
        ("global loads: sectors/request", loads),
        ("shared: wavefronts/request (bank conflicts)", shared),
        ("ldmatrix per mma", lambda r: ratio(r["ldmatrix_requests"], r["mma"])),
        ("L1 wavefronts per mma", lambda r: ratio(r["l1_wavefronts"], r["mma"])),
        ("mma FLOP", tensor_flop),
        ("MUFU ops", lambda r: count(r["mufu"])),
        ("L1 µs", lambda r: f"{num(r['l1_us']):.2f}"),
        ("issue µs", lambda r: f"{num(r['issue_us']):.2f}"),
        ("tensor µs", lambda r: f"{num(r['tensor_us']):.2f}"),
        ("latency µs", lambda r: f"{num(r.get('latency_us')):.2f}"),
    ],
    "backward": [
        ("global loads: sectors/request", loads),
        ("fp32 atomics: requests (sectors/request)", atomics),
        ("shared: wavefronts/request (bank conflicts)", shared),
        ("DRAM MB", dram_mb),
        ("mma FLOP", tensor_flop),
        ("MUFU ops", lambda r: count(r["mufu"])),
    ],
}
LAYOUT = {"05_flash_v2": "steps", "06_causal": "steps", "07_backward": "backward", "09_hopper": "steps"}
TIME = [("modelled µs", lambda r: f"{num(r['modelled_us']):.2f}"), ("bound", lambda r: r["bound"])]


def table(chapter, rows):
    mine = [r for r in rows if r["chapter"] == chapter]
    if not mine:
        return None
    first = mine[0]
    problem = (f"B={first['B']} H={first['H']} Lq={first['Lq']} Lk={first['Lk']} d={first['d']} {first['dtype']}"
               + ("" if first["causal"] == "none" else f" causal {first['causal']}")
               + ("" if first.get("mods", "none") == "none" else f" {first['mods']}"))
    commits = sorted({r["commit"] for r in mine})
    layout = LAYOUT.get(chapter, "stages")
    columns = LAYOUTS[layout] + TIME
    # The steps' tables name the step only: each is one kernel, one stage.
    one_stage = layout == "steps" and len({r["variant"] for r in mine}) == len(mine)
    head = ["variant"] + ([] if one_stage else ["stage"]) + [h for h, _ in columns]
    lines = [
        f"Generated by `tools/counter_tables.py` from `results/cpu-emulation-simt/counters.csv` (commit "
        f"{', '.join(commits)}; {problem}). Counts of the CPU emulator; times modelled for an "
        f"{first['gpu']} by `common/model/model.h`: a model, not a measurement. Do not edit by hand.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in mine:
        cells = [r["variant"]] + ([] if one_stage else [r["stage"]]) + [cell(r) for _, cell in columns]
        lines.append("| " + " | ".join(cells) + " |")
    totals = OrderedDict()
    for r in mine:
        totals[r["variant"]] = totals.get(r["variant"], 0.0) + num(r["modelled_us"])
    lines += ["", "Modelled time per variant, all stages: " +
              ", ".join(f"{v} {t:.2f} µs" for v, t in totals.items()) + "."]
    return "\n".join(lines)


def rewrite(note, rows, tabled):
    """The note's text with each marked table regenerated; None if it has no markers. Adds the
    chapters it tables to the set `tabled`."""
    text = note.read_text()
    out, at, found = [], 0, False
    for m in BEGIN.finditer(text):
        tabled.add(m.group(1))
        end = text.find(END, m.end())
        if end < 0:
            fail(f"{note}: {m.group(0)} without {END}")
        t = table(m.group(1), rows)
        if t is None:
            fail(f"{note}: no rows for chapter {m.group(1)} in {CSV.relative_to(REPO)}", 1)
        out += [text[at:m.end()], "\n", t, "\n"]
        at, found = end, True
    return "".join(out) + text[at:] if found else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", metavar="BUILD", help="first profile every chapter with BUILD/bin/flashsteps (a "
                                                        "counters build) into the CSV")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table differs from the CSV")
    args = ap.parse_args(argv)
    if args.profile and args.check:
        fail("--profile and --check do not go together")
    if args.profile:
        profile(args.profile)
    rows = read(CSV)
    stale, tabled = [], set()
    for note in sorted(NOTES.glob("*.md")):
        new = rewrite(note, rows, tabled)
        if new is None or new == note.read_text():
            continue
        if args.check:
            stale.append(note.relative_to(REPO))
        else:
            note.write_text(new)
            print(note.relative_to(REPO))
    status = 0
    if stale:
        print("counter_tables: these notes' tables differ from the CSV (run tools/counter_tables.py): " +
              ", ".join(map(str, stale)), file=sys.stderr)
        status = 1
    # Every chapter profiled has its table: a note that lost its markers fails the check too.
    untabled = sorted({r["chapter"] for r in rows} - tabled)
    if untabled:
        print("counter_tables: no note has a table for " + ", ".join(untabled) +
              f" (add the markers `<!-- counters-table:begin CHAPTER -->` and `{END}`)", file=sys.stderr)
        status = 1 if args.check else status
    return status


if __name__ == "__main__":
    sys.exit(main())
