#!/usr/bin/env python3
"""gpu_targets.py: the GPU issue's targets against PyTorch, read from one device's results folder.

    python3 tools/gpu_targets.py results/nvidia-h200 [--markdown]

Reads what tools/gpu_session.sh (and the calls beside it) wrote there: sdpa.csv (chapters 05, 06
and 09 beside PyTorch's SDPA backends, one process), backward.csv and backward_torch.csv (chapter
07, then torch's backward, one session), promise.csv (chapter 08 at B = 1, 32k context) and the
logs' "device copy (N GB/s, measured now)" lines (the copy bandwidth each run measured). Prints one
row per target: what was asked, what was measured, and whether it was met. Only measured rows
(kind = measured) are read; a target without its rows says so instead of a number. A folder that
holds none of these files, or a CSV there that is not one of this project's (another header, a
folder), is refused with exit code 2 before anything is printed.
"""
import argparse
import math
import re
import statistics
import sys
from pathlib import Path

from results_csv import SHAPE, NotResultsCsv, rows_of_kind

CSVS = ("sdpa.csv", "backward.csv", "backward_torch.csv", "promise.csv")  # the results CSVs read, in the folder


def rows(path):
    return rows_of_kind(path, "measured")


def shape(r):
    """SHAPE's columns, numbers as numbers: (dtype, B, H, Lq, Lk, d, causal, mask, mods)."""
    return tuple(r[k] if k in ("dtype", "causal", "mask", "mods") else int(float(r[k])) for k in SHAPE)


def by_shape(rs):
    out = {}
    for r in rs:
        out.setdefault(shape(r), {})[r["variant"]] = float(r["median_ms"])
    return out


def copy_gbps(folder):
    """The device-to-device copy bandwidth the runs measured (median over every log that says it)."""
    found = []
    for log in sorted((folder / "logs").glob("*.log")):
        found += [float(x) for x in re.findall(r"device copy \((\d+(?:\.\d+)?) GB/s, measured now\)", log.read_text())]
    return statistics.median(found) if found else None


def ratio_rows(table, ours, theirs, keep):
    """One line per shape: theirs/ours (a speedup of ours over theirs) where both were measured."""
    out = []
    for s in sorted(table, key=lambda s: (s[5], s[6], s[3])):
        t = table[s]
        if ours in t and theirs in t and keep(s):
            out.append((s, t[theirs] / t[ours], t[ours], t[theirs]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--markdown", action="store_true", help="a Markdown table instead of plain lines")
    a = ap.parse_args()
    if not a.folder.is_dir():
        print(f"gpu_targets.py: {a.folder} is not a folder", file=sys.stderr)
        return 2
    try:
        read = {name: rows(a.folder / name) for name in CSVS}
    except NotResultsCsv as e:
        print(f"gpu_targets.py: {e}", file=sys.stderr)
        return 2
    # Every number the targets read, checked first: a row that is not one is refused, not a traceback.
    for name, rs in read.items():
        for r in rs:
            cols = [k for k in SHAPE if k not in ("dtype", "causal", "mask", "mods")] + ["median_ms"]
            cols += ["gbps"] if name == "promise.csv" and r.get("chapter") == "08_decoding" else []
            for k in cols:
                try:
                    v = float(r.get(k))
                    ok = math.isfinite(v) and (k in ("median_ms", "gbps") or v == int(v))
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    print(f"gpu_targets.py: {a.folder / name}: the measured row of {r.get('chapter')} "
                          f"{r.get('variant')} has {k} = {r.get(k)!r}, not a number", file=sys.stderr)
                    return 2
    softmax = (a.folder / "logs" / "softmax.log")
    if not any((a.folder / name).is_file() and (a.folder / name).stat().st_size > 0 for name in CSVS) \
            and not softmax.is_file():
        print(f"gpu_targets.py: {a.folder} holds none of the files it reads ({', '.join(CSVS)}, logs/softmax.log): "
              "give the folder tools/gpu_session.sh wrote", file=sys.stderr)
        return 2
    sdpa_rows, promise_rows = read["sdpa.csv"], read["promise.csv"]
    back_rows = read["backward.csv"] + read["backward_torch.csv"]
    sdpa, back = by_shape(sdpa_rows), by_shape(back_rows)
    copy = copy_gbps(a.folder)
    lines = []  # (target, shape, measured, met)

    def add(target, wanted, found, fmt, who=lambda s: ""):  # who: what made the line, after its shape
        if not found:
            lines.append((target, "-", "not measured", "-"))
        for s, r, ours, theirs in found:
            name = f"d={s[5]} N={s[3]} B={s[1]} H={s[2]}" + (" causal" if s[6] != "none" else "") + who(s)
            lines.append((target, name, fmt(r, ours, theirs), "yes" if r >= wanted else "no"))

    speed = lambda r, ours, theirs: f"{r:.2f}x ({ours:.3f} ms against {theirs:.3f} ms)"
    add("05 >= 1.0x flash (FA2), N >= 4k", 1.0,
        ratio_rows(sdpa, "lean_loop", "sdpa_flash", lambda s: s[3] >= 4096 and s[6] == "none"), speed)
    add("06 >= 1.0x flash, is_causal", 1.0,
        ratio_rows(sdpa, "balanced", "sdpa_flash", lambda s: s[6] != "none"), speed)
    # Chapter 09 against cuDNN: at each shape its fastest step measured that passed its check
    # (sdpa_early runs --variants best, the registry's best at the commit measured; a run of more
    # steps keeps the fastest), except step a, which is chapter 05's kernel registered again.
    ch09, ch09_step = {}, {}
    for r in sdpa_rows:
        if r["chapter"] == "09_hopper" and r["variant"] != "fa2_baseline" and r["pass"] == "1":
            s, t = shape(r), float(r["median_ms"])
            if t < ch09.setdefault(s, {}).get("ch09", float("inf")):
                ch09[s]["ch09"], ch09_step[s] = t, r["variant"]
    for s, t in ch09.items():
        if "sdpa_cudnn" in sdpa.get(s, {}):
            t["sdpa_cudnn"] = sdpa[s]["sdpa_cudnn"]
    add("09 >= 0.9x cuDNN", 0.9, ratio_rows(ch09, "ch09", "sdpa_cudnn", lambda s: True), speed,
        lambda s: " " + ch09_step[s])
    best07 = {}
    for s, t in back.items():
        mine = [v for v in ("tensor_cores", "causal", "deterministic", "cp_async") if v in t]
        if mine and "sdpa_flash_backward" in t:
            v = min(mine, key=lambda v: t[v])
            best07[s] = {"best07": t[v], "sdpa_flash_backward": t["sdpa_flash_backward"]}
    add("07 >= 0.8x torch's flash backward", 0.8,
        ratio_rows(best07, "best07", "sdpa_flash_backward", lambda s: True), speed)
    decode = [r for r in promise_rows if r["chapter"] == "08_decoding" and shape(r)[4] >= 32768]
    if decode and copy:
        # The fastest step: its GB/s counts the bytes it moves (the cache once, for a GQA-packed step).
        r = min(decode, key=lambda r: float(r["median_ms"]))
        share = float(r["gbps"]) / copy
        lines.append(("08 >= 85% of copy bandwidth, B = 1, 32k", f"{r['variant']} Lk={r['Lk']}",
                      f"{share:.0%} ({float(r['gbps']):.0f} of {copy:.0f} GB/s)", "yes" if share >= 0.85 else "no"))
    else:
        lines.append(("08 >= 85% of copy bandwidth, B = 1, 32k", "-", "not measured", "-"))
    if softmax.exists():
        for m in re.finditer(r"^(\w+) .*\n(?:    .*\n)*?    P = softmax\(scale\*S\) +[\d.]+ ms +\d+% +([\d.]+) GB/s = +(\d+)% of a "
                             r"device copy \(([\d.]+) GB/s", softmax.read_text(), re.M):
            share = float(m.group(2)) / float(m.group(4))
            lines.append(("02's softmax >= 80% of copy bandwidth", f"{m.group(1)} (softmax.log)",
                          f"{share:.0%} ({float(m.group(2)):.0f} of {float(m.group(4)):.0f} GB/s)",
                          "yes" if share >= 0.8 else "no"))
    if a.markdown:
        # What the rows were measured on, so that a committed table says where it came from.
        seen = sorted({f"{r['device']}, driver {r['driver']}, CUDA {r['cuda']}, commit {r['commit']}" for r in sdpa_rows + back_rows + promise_rows})
        print(f"Written by `python3 tools/gpu_targets.py {a.folder.as_posix()} --markdown` from the folder's CSVs and logs "
              f"({'; '.join(seen) or 'no measured rows'}); do not edit by hand.\n")
        print("| target | shape | measured | met |\n| --- | --- | --- | --- |")
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        for line in lines:
            print(f"{line[0]:<42} {line[1]:<32} {line[2]:<44} {line[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
