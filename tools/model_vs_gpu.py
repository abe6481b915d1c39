#!/usr/bin/env python3
"""model_vs_gpu.py: the model's times beside a GPU's measured times, shape by shape.

    python3 tools/model_vs_gpu.py MODELLED.csv MEASURED.csv [--markdown]

MODELLED.csv: rows with kind = modelled (`flashsteps run --profile --gpu NAME --csv`, a counters
build); MEASURED.csv: rows with kind = measured (a GPU). A row of each with the same chapter,
variant, dtype, B, H, Lq, Lk, d, causal, mask and mods makes one line: both times and measured / modelled
(above 1: the model is optimistic), with the model's bound. Prints the lines and, last, how many
fall within +-15 % (the GPU issue's target). Nothing is fitted here. A file that is missing or
is not one of this project's results CSVs (another header) is refused with exit code 2.
"""
import argparse
import sys
from pathlib import Path

from results_csv import SHAPE, NotResultsCsv, rows_of_kind

KEY = ("chapter", "variant") + SHAPE


def read(path, kind):
    return {tuple(r[k] for k in KEY): r for r in rows_of_kind(path, kind)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modelled")
    ap.add_argument("measured")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    for p in (a.modelled, a.measured):
        if not Path(p).is_file():
            print(f"model_vs_gpu.py: no file {p}", file=sys.stderr)
            return 2
    try:
        model, gpu = read(a.modelled, "modelled"), read(a.measured, "measured")
    except NotResultsCsv as e:
        print(f"model_vs_gpu.py: {e}", file=sys.stderr)
        return 2
    both = [k for k in model if k in gpu]
    if not both:
        print("model_vs_gpu.py: no shape is in both files", file=sys.stderr)
        return 2
    head = ("chapter", "variant", "shape", "modelled ms", "measured ms", "measured/modelled", "model's bound")
    lines = []
    for k in sorted(both, key=lambda k: (k[5], k[7], k[0], k[1])):
        m, g = float(model[k]["median_ms"]), float(gpu[k]["median_ms"])
        shape = f"B={k[3]} H={k[4]} N={k[5]} d={k[7]}" + ("" if k[8] == "none" else " causal") + ("" if k[10] == "none" else f" {k[10]}")
        lines.append((k[0], k[1], shape, f"{m:.4g}", f"{g:.4g}", f"{g / m:.2f}", model[k].get("bound", "")))
    within = sum(1 for line in lines if abs(float(line[5]) - 1) <= 0.15)
    if a.markdown:
        print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        for line in lines:
            print(f"{line[0]:<20} {line[1]:<20} {line[2]:<26} {line[3]:>11} {line[4]:>11} {line[5]:>8}  {line[6]}")
    print(f"\n{within} of {len(lines)} within +-15 % of the GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
