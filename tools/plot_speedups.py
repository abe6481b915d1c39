#!/usr/bin/env python3
"""plot_speedups.py: figures and the README's results table from the project's CSV files.

Reads CSVs in the schema of common/harness/report.cpp (the chapters' `--csv` rows and those of
tools/bench_torch_sdpa.py) and writes four PNGs per device:

  speedup_over_naive.png  every variant's speedup over chapter 01's naive variant, same shape (or
                          over chapter 01's one variant run, where naive was not: a tour's best)
  tflops_vs_n.png         TFLOP/s against N, one panel per (dtype, d, causal); PyTorch dashed
  extra_memory_vs_n.png   extra device memory per (batch, head) against N: O(N^2) against O(N)
  roofline.png            arithmetic intensity against TFLOP/s, under the device's roofs

and, for the rows a counters build modelled (kind = modelled: `flashsteps profile --csv`), one PNG
per modelled GPU, in a folder of its own (<gpu-slug>-modelled):

  modelled_speedup.png    every variant's modelled speedup over chapter 01's naive variant (or its
                          one variant modelled), with what bounds its time
  modelled_tflops_vs_n.png  modelled TFLOP/s against N, one panel per (dtype, d, causal), beside
                          FlashAttention-2's published H100 rate where the shape is the paper's
  modelled_time_vs_n.png  modelled time against N, the same panels and reference

  tools/plot_speedups.py results/nvidia-h100-80gb-hbm3/*.csv                  # PNGs in build/plots/<device>/
  tools/plot_speedups.py results/nvidia-h100-80gb-hbm3/*.csv --out results/nvidia-h100-80gb-hbm3 --readme README.md

By default the PNGs go to build/plots/<device-slug>/ (git-ignored): nothing in the checkout changes
unless --out or --readme says so. Every PNG it writes names the CSVs its rows came from and their
SHA-256 in its "Source" text chunk. A --readme without the results-table markers is refused (exit
code 2) before any PNG is written.

Rows of different kinds (measured on a GPU, emulated on the CPU, modelled) are never drawn in one
figure, and the README table takes measured rows only. Rows that failed their check (pass = 0) are
left out and listed on stderr. When the same variant was measured more than once on the same
shape and device, the latest row counts.
"""
import argparse
import csv
import hashlib
import math
import os
import re
import struct
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or through runpy
from results_csv import CSV_HEADER, KINDS

COLUMNS = CSV_HEADER.split(",")
INTS = ("B", "H", "Lq", "Lk", "d", "extra_bytes", "pass")
FLOATS = ("median_ms", "min_ms", "tflops", "gbps", "max_err")
BEGIN, END = "<!-- results-table:begin -->", "<!-- results-table:end -->"
REPO = Path(__file__).resolve().parent.parent
NAIVE = ("01_naive_attention", "naive")
TORCH_ORDER = ["sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"]
DTYPE_ORDER = ["fp16", "bf16", "fp32"]
CAUSAL_ORDER = ["none", "top-left", "bottom-right"]
MASK_ORDER = ["none", "bool", "additive"]
FILES = ("speedup_over_naive.png", "tflops_vs_n.png", "extra_memory_vs_n.png", "roofline.png")
MODELLED_FILES = ("modelled_speedup.png", "modelled_tflops_vs_n.png", "modelled_time_vs_n.png")
PUBLISHED = REPO / "common" / "model" / "published.h"


def warn(msg):
    print(f"plot_speedups: {msg}", file=sys.stderr)


def emulated(device):
    """The CPU emulator's rows (device "CPU emulation (simt)"): timings of the emulator, not a GPU's."""
    return "EMULATION" in device.upper()


def device_limits(name):
    """(dense fp16/bf16 tensor-core peak in TFLOP/s, HBM bandwidth in TB/s) from the table of
    shared/design/benchmarking.md, or None where the device is not one we have figures for."""
    n = name.upper()
    if emulated(name):
        return None, None
    if "H200" in n:
        return 989.0, 4.8
    if "H100" in n:
        # The PCIe and NVL parts have other clocks and memory: better no roof than a wrong one.
        return (None, None) if "PCIE" in n or "NVL" in n else (989.0, 3.35)
    if "A100" in n:
        return 312.0, 2.0  # the 80 GB part's bandwidth, the top of the 1.5-2.0 TB/s range
    return None, None


def published_fa2():
    """{(N, d, causal): TFLOP/s} of FlashAttention-2 on an H100 SXM5, fp16, at B·N = 16k and H·d = 2048,
    as common/model/published.h has them (its one home; measured by the FlashAttention-3 paper's
    authors, not here)."""
    try:
        text = PUBLISHED.read_text()
    except OSError:
        return {}
    body = text[text.find("kFlashAttention2H100[]"):]
    body = body[:body.find("};")]
    return {(int(n), int(d), c == "true"): float(t)
            for n, d, c, t in re.findall(r"\{(\d+), (\d+), (true|false), ([\d.]+)\}", body)}


def published_matches(r):
    """Whether a row's shape is the FlashAttention papers' (B·N = 16k, H·d = 2048, fp16, no mask,
    top-left causal or none, Lq = Lk)."""
    return (r["dtype"] == "fp16" and r["mask"] == "none" and r["mods"] == "none" and r["Lq"] == r["Lk"] and r["B"] * r["Lq"] == 16384 and
            r["H"] * r["d"] == 2048 and r["causal"] in ("none", "top-left"))


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown-device"


def short_n(n):
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def order(value, known):
    return (known.index(value), "") if value in known else (len(known), value)


# ---------------------------------------------------------------- reading

def read_rows(paths):
    rows = []
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.reader(f)
                if next(reader, None) != COLUMNS:
                    warn(f"{path}: the first line is not the project's CSV header")
                    sys.exit(2)
                for record in reader:
                    where = f"{path}:{reader.line_num}"
                    if not record:
                        continue
                    if len(record) != len(COLUMNS):
                        warn(f"{where}: {len(record)} fields instead of {len(COLUMNS)}; row ignored")
                        continue
                    row = dict(zip(COLUMNS, record))
                    try:
                        for k in INTS:
                            row[k] = int(row[k])
                        for k in FLOATS:
                            row[k] = float(row[k])
                    except ValueError as e:
                        warn(f"{where}: {e}; row ignored")
                        continue
                    if row["kind"] not in KINDS:
                        warn(f"{where}: kind {row['kind']!r} is none of {', '.join(KINDS)}; row ignored")
                        continue
                    row["source"] = where
                    rows.append(row)
        except OSError as e:
            warn(f"cannot read {path}: {e.strerror or e}")
            sys.exit(2)
        except (UnicodeDecodeError, csv.Error) as e:
            warn(f"{path} is not a CSV text file ({e.__class__.__name__}: {e}); give the project's CSV files")
            sys.exit(2)
    return rows


def describe(r):
    return (f"{r['chapter']} {r['variant']} {r['dtype']} B={r['B']} H={r['H']} Lq={r['Lq']} Lk={r['Lk']} d={r['d']} "
            f"causal={r['causal']} mask={r['mask']} mods={r['mods']}")


def usable(rows):
    """Passing rows, one per (device, variant, shape): the latest measurement wins."""
    latest = {}
    for r in rows:
        if r["pass"] != 1:
            warn(f"left out, failed its check (max_err {r['max_err']:.3g}): {describe(r)} [{r['source']}]")
            continue
        key = (r["kind"], r["device"], r["chapter"], r["variant"], r["dtype"], r["B"], r["H"], r["Lq"], r["Lk"],
               r["d"], r["causal"], r["mask"], r["mods"])
        if key not in latest or r["timestamp"] >= latest[key]["timestamp"]:
            latest[key] = r
    return list(latest.values())


# ---------------------------------------------------------------- grouping

def label(r):
    if r["chapter"] == "torch":
        return f"torch {r['variant']}"
    m = re.match(r"(\d+)_", r["chapter"])
    return f"{m.group(1) if m else r['chapter']} {r['variant']}"


def label_key(r):
    """Chapters in order, then PyTorch's backends in their usual order."""
    if r["chapter"] == "torch":
        return (1, "", order(r["variant"], TORCH_ORDER))
    return (0, r["chapter"], (0, r["variant"]))


def group_key(r):
    return (order(r["dtype"], DTYPE_ORDER), r["d"], order(r["causal"], CAUSAL_ORDER), order(r["mask"], MASK_ORDER),
            r["Lq"] != r["Lk"], r["mods"])


def group_title(r):
    parts = [r["dtype"], f"d={r['d']}", "non-causal" if r["causal"] == "none" else f"causal {r['causal']}"]
    if r["mask"] != "none":
        parts.append(f"mask {r['mask']}")
    if r["Lq"] != r["Lk"]:
        parts.append("Lq≠Lk")
    if r["mods"] != "none":  # chapter 10's settings (results/README.md)
        parts.append(r["mods"])
    return ", ".join(parts)


def n_of(r):
    return r["Lk"]  # N; for Lq ≠ Lk panels the key length


def series(rows):
    """{group: {label: {N: row}}}. Two shapes with one N in a panel (another B or H): the one with
    more work is kept, so that a line never mixes problem sizes at one point."""
    out = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        s = out[group_key(r)][label(r)]
        n = n_of(r)
        if n not in s or (r["B"] * r["H"] * r["Lq"], r["timestamp"]) > (s[n]["B"] * s[n]["H"] * s[n]["Lq"],
                                                                          s[n]["timestamp"]):
            s[n] = r
    return out


def same_shape(a, b):
    return all(a[k] == b[k] for k in ("dtype", "B", "H", "Lq", "Lk", "d", "causal", "mask", "mods"))


# ---------------------------------------------------------------- figures

def csv_of(row):
    """The CSV file a row was read from (read_rows' "source" is FILE:LINE)."""
    return row["source"].rsplit(":", 1)[0]


def source_text(paths):
    """The PNGs' "Source" text: each CSV their rows came from (relative to the repository when inside
    it) and the SHA-256 of its bytes, so that a test can tell a committed figure drawn from other rows
    than its committed CSV's (tests/test_results_current.py; png_sources reads it back)."""
    out = []
    for path in sorted(set(paths)):
        resolved = Path(path).resolve()
        name = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(path)
        out.append(f"{name} sha256 {hashlib.sha256(resolved.read_bytes()).hexdigest()}")
    return "; ".join(out)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunks(data):
    """(type, data, the whole chunk) of each chunk of a PNG's bytes after its signature."""
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        yield kind, data[at + 8:at + 8 + length], data[at:at + 12 + length]
        at += 12 + length


def png_sources(path):
    """[(name, sha256)] of a PNG's "Source" text chunk (source_text's), [] when it has none or is no
    PNG. Reads tEXt chunks, which matplotlib writes for Latin-1 text; a name outside Latin-1 would be
    an iTXt chunk, which this does not read."""
    data, text = Path(path).read_bytes(), ""
    if not data.startswith(PNG_SIGNATURE):
        return []
    for kind, body, _ in png_chunks(data):
        key, _, value = body.partition(b"\0")
        if kind == b"tEXt" and key == b"Source":
            text = value.decode("latin-1")
    return [(n.strip(), h) for n, h in re.findall(r"([^;]+?) sha256 ([0-9a-f]{64})", text)]


class Figures:
    def __init__(self, plt, rows, device, kind="measured", source=""):
        self.plt, self.rows, self.device, self.kind, self.source = plt, rows, device, kind, source
        self.peak, self.bw = device_limits(device)
        self.groups = series(rows)
        self.group_keys = sorted(self.groups)
        self.titles = {group_key(r): group_title(r) for r in rows}
        firsts = {}
        for r in rows:
            firsts.setdefault(label(r), r)
        self.labels = sorted(firsts, key=lambda lab: label_key(firsts[lab]))
        self.is_torch = {lab: firsts[lab]["chapter"] == "torch" for lab in self.labels}
        cmap = plt.get_cmap("tab10" if len(self.labels) <= 10 else "tab20")
        self.color = {lab: cmap(i % cmap.N) for i, lab in enumerate(self.labels)}

    def style(self, lab):
        return dict(color=self.color[lab], linestyle="--" if self.is_torch[lab] else "-", marker="o", markersize=4)

    def panels(self, n, title):
        cols = 1 if n == 1 else 2
        rows = max(1, math.ceil(n / cols))
        fig, axes = self.plt.subplots(rows, cols, figsize=(7 * cols, 4.2 * rows), squeeze=False)
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        fig.suptitle(f"{title}\n{self.device}{' (modelled)' if self.kind == 'modelled' else ''}", fontsize=11)
        return fig, list(axes.flat[:n])

    def n_axis(self, ax, ns, xlabel="N (Lq = Lk)"):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns)
        ax.set_xticklabels([short_n(n) for n in ns])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.grid(True, which="major", alpha=0.3)

    def save(self, fig, path, legend=True):
        if legend:
            seen = {}
            for ax in fig.axes:
                for h, lab in zip(*ax.get_legend_handles_labels()):
                    seen.setdefault(lab, h)
            if seen:
                fig.legend(list(seen.values()), list(seen), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Source": self.source})
        self.plt.close(fig)

    def empty(self, path, title, why):
        fig, ax = self.plt.subplots(figsize=(7, 3))
        ax.axis("off")
        ax.text(0.5, 0.5, why, ha="center", va="center")
        fig.suptitle(f"{title}\n{self.device}", fontsize=11)
        self.save(fig, path, legend=False)

    def chapter01(self, g):
        """The label group g's speedups are taken over: chapter 01's naive where it ran, else the one
        chapter 01 variant that did (a tour's rows: its best), else None."""
        naive = label({"chapter": NAIVE[0], "variant": NAIVE[1]})
        if naive in self.groups[g]:
            return naive
        first = [lab for lab in self.groups[g] if lab.startswith(label({"chapter": NAIVE[0], "variant": ""}))]
        return first[0] if len(first) == 1 else None

    def speedups(self, path, title="Speedup over chapter 01 (naive, or the one chapter 01 variant run; same shape, same device)",
                 show_bound=False):
        keys = [g for g in self.group_keys if self.chapter01(g)]
        if not keys:
            return self.empty(path, title, "no chapter 01 rows to compare against")
        fig, axes = self.panels(len(keys), title)
        for ax, g in zip(axes, keys):
            naive = self.chapter01(g)
            base = self.groups[g][naive]
            ns = sorted(base)
            others = [lab for lab in self.labels if lab != naive and lab in self.groups[g]]
            width = 0.8 / max(1, len(others))
            for i, lab in enumerate(others):
                xs, ys, texts = [], [], []
                for j, n in enumerate(ns):
                    r = self.groups[g][lab].get(n)
                    if r and same_shape(r, base[n]) and r["median_ms"] > 0:
                        xs.append(j - 0.4 + width * (i + 0.5))
                        ys.append(base[n]["median_ms"] / r["median_ms"])
                        texts.append(f"{ys[-1]:.3g}×" + (f" {r['bound']}" if show_bound and r["bound"] else ""))
                bars = ax.bar(xs, ys, width, color=self.color[lab], label=lab,
                              hatch="//" if self.is_torch[lab] else None, edgecolor="white", linewidth=0.5)
                ax.bar_label(bars, labels=texts, fontsize=6, rotation=90, padding=2)
            if not others:
                ax.text(0.5, 0.6, f"only {naive} was measured here", transform=ax.transAxes, ha="center")
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_yscale("log")
            ax.set_xlim(-0.5, len(ns) - 0.5)
            ax.set_xticks(range(len(ns)))
            ax.set_xticklabels([f"{short_n(n)}\nB={base[n]['B']} H={base[n]['H']}" for n in ns], fontsize=8)
            ax.set_xlabel("N")
            ax.set_ylabel(f"× faster than {naive}")
            ax.set_title(self.titles[g], fontsize=10)
            ax.grid(True, axis="y", alpha=0.3)
            ax.margins(y=0.15)
        self.save(fig, path)

    def tflops(self, path):
        fig, axes = self.panels(len(self.group_keys), "Achieved TFLOP/s (4·B·H·Lq·Lk·d, causal: visible pairs only)")
        for ax, g in zip(axes, self.group_keys):
            ns = set()
            for lab in self.labels:
                pts = self.groups[g].get(lab)
                if pts:
                    xs = sorted(pts)
                    ns.update(xs)
                    ax.plot(xs, [pts[n]["tflops"] for n in xs], label=lab, **self.style(lab))
            dtype = DTYPE_ORDER[g[0][0]] if g[0][0] < len(DTYPE_ORDER) else g[0][1]
            if self.peak and dtype in ("fp16", "bf16"):  # the tensor-core peak says nothing about fp32
                ax.axhline(self.peak, color="black", linestyle=":", linewidth=1,
                           label=f"dense fp16/bf16 peak ({self.peak:g} TFLOP/s)")
            self.n_axis(ax, sorted(ns), "N (Lq = Lk)" if not g[4] else "Lk")
            ax.set_ylim(bottom=0)
            ax.set_ylabel("TFLOP/s")
            ax.set_title(self.titles[g], fontsize=10)
        self.save(fig, path)

    def modelled_vs_n(self, path, time):
        """Modelled TFLOP/s (or time) of every variant against N, log scale, with FlashAttention-2's
        published H100 figure at the papers' shapes as a reference line."""
        what = "time, ms" if time else "TFLOP/s (4·B·H·d per visible (query, key) pair)"
        fig, axes = self.panels(len(self.group_keys), f"Modelled {what}, every chapter's best, against N\n"
                                "(a model from the CPU emulator's counters, notes/performance_model.md: not a measurement)")
        fa2 = published_fa2()
        for ax, g in zip(axes, self.group_keys):
            ns, ref = set(), {}
            for lab in self.labels:
                pts = self.groups[g].get(lab)
                if not pts:
                    continue
                xs = sorted(pts)
                ns.update(xs)
                ax.plot(xs, [pts[n]["median_ms"] if time else pts[n]["tflops"] for n in xs], label=lab, **self.style(lab))
                for n in xs:
                    r = pts[n]
                    t = fa2.get((n, r["d"], r["causal"] != "none")) if published_matches(r) else None
                    if t:  # the rate, or the time of this shape's FLOP at that rate
                        ref[n] = r["median_ms"] * r["tflops"] / t if time else t
            if ref:
                xs = sorted(ref)
                ax.plot(xs, [ref[n] for n in xs], color="black", linestyle="--", marker="x", markersize=5,
                        label="FlashAttention-2, H100 SXM5: published (FlashAttention-3 paper, Fig. 5), measured by "
                              "its authors")
            if ns:
                self.n_axis(ax, sorted(ns), "N (Lq = Lk)" if not g[4] else "Lk")
            ax.set_yscale("log")
            ax.set_ylabel("modelled ms" if time else "modelled TFLOP/s")
            ax.set_title(self.titles[g], fontsize=10)
        self.save(fig, path)

    def memory(self, path):
        # Per (batch, head): the sweep keeps B*N fixed, so the total would grow like N even for
        # the N x N buffers; per plane, S and P grow like N^2 and a row statistic like N.
        fig, axes = self.panels(len(self.group_keys), "Extra device memory per (batch, head), log scale")
        for ax, g in zip(axes, self.group_keys):
            ns, none = set(), []
            for lab in self.labels:
                pts = self.groups[g].get(lab)
                if not pts:
                    continue
                xs = [n for n in sorted(pts) if pts[n]["extra_bytes"] > 0]
                if not xs:
                    none.append(lab)
                    continue
                ys = [pts[n]["extra_bytes"] / (pts[n]["B"] * pts[n]["H"]) for n in xs]
                ns.update(xs)
                ax.plot(xs, ys, label=lab, **self.style(lab))
                if len(xs) > 1:  # the growth the cost model shows, written at the line's end
                    slope = math.log(ys[-1] / ys[0]) / math.log(xs[-1] / xs[0])
                    grows = "~N²" if slope > 1.5 else "~N" if slope > 0.5 else "~1"
                    ax.annotate(grows, (xs[-1], ys[-1]), xytext=(4, 0), textcoords="offset points", fontsize=8,
                                va="center", color=self.color[lab])
            if ns:
                self.n_axis(ax, sorted(ns), "N (Lq = Lk)" if not g[4] else "Lk")
                ax.set_yscale("log")
                ax.margins(x=0.12)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
            ax.set_ylabel("bytes per (batch, head)")
            title = self.titles[g]
            if none:  # nothing to draw on a log axis: named instead
                title += "\nno extra memory: " + ", ".join(none)
            ax.set_title(title, fontsize=10)
        self.save(fig, path)

    def roofline(self, path):
        fig, ax = self.plt.subplots(figsize=(8, 5.5))
        xs_all = []
        for lab in self.labels:
            for causal, marker in (("none", "o"), ("causal", "^")):
                pts = []
                for r in self.rows:
                    if label(r) != lab or (r["causal"] == "none") != (causal == "none"):
                        continue
                    flops = r["tflops"] * 1e12 * r["median_ms"] * 1e-3
                    moved = r["gbps"] * r["median_ms"] * 1e6  # bytes of the variant's cost model
                    if flops > 0 and moved > 0:
                        pts.append((flops / moved, r["tflops"]))
                if pts:
                    pts.sort()
                    xs_all += [p[0] for p in pts]
                    # PyTorch's points hollow, as its lines are dashed elsewhere.
                    ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, s=22,
                               edgecolors=[self.color[lab]], label=f"{lab}{' (causal)' if causal != 'none' else ''}",
                               facecolors="none" if self.is_torch[lab] else [self.color[lab]])
        ax.set_xscale("log")
        ax.set_yscale("log")
        if xs_all and self.bw and self.peak:
            lo, hi = min(xs_all + [self.peak / self.bw]) / 2, max(xs_all + [self.peak / self.bw]) * 2
            grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
            ax.plot(grid, [min(self.peak, self.bw * x) for x in grid], color="black", linewidth=1.2,
                    label=f"roof: {self.bw:g} TB/s HBM, {self.peak:g} TFLOP/s dense fp16/bf16")
            ax.plot(grid, [self.bw * x for x in grid], color="black", linestyle=":", linewidth=0.8)
            ax.axhline(self.peak, color="black", linestyle=":", linewidth=0.8)
        note = "" if self.bw and self.peak else " (no roof: this device's limits are not in the table)"
        ax.set_title(f"Roofline{note}\n{self.device}", fontsize=10)
        ax.set_xlabel("arithmetic intensity, FLOP per byte of the cost model (torch: Q, K, V, O only)")
        ax.set_ylabel("achieved TFLOP/s")
        ax.grid(True, which="both", alpha=0.2)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        self.save(fig, path, legend=False)

    def write_all(self, folder):
        folder.mkdir(parents=True, exist_ok=True)
        if self.kind == "modelled":
            paths = [folder / name for name in MODELLED_FILES]
            self.speedups(paths[0], "Modelled speedup over chapter 01 (naive, or the one chapter 01 variant modelled), "
                                    "and what bounds each time\n"
                                    "(a model from the CPU emulator's counters, notes/performance_model.md: not a measurement)",
                          show_bound=True)
            self.modelled_vs_n(paths[1], time=False)
            self.modelled_vs_n(paths[2], time=True)
            return paths
        paths = [folder / name for name in FILES]
        self.speedups(paths[0])
        self.tflops(paths[1])
        self.memory(paths[2])
        self.roofline(paths[3])
        return paths


# ---------------------------------------------------------------- the README table

def fmt_tflops(x):
    return f"{x:.1f}" if x >= 10 else f"{x:.3g}"


def results_table(rows, sources):
    """Per device and (dtype, d, causal): at the largest N any chapter measured, each chapter's
    fastest measured variant, its TFLOP/s and its ratio to PyTorch's flash backend on the same
    shape. Measured rows only: the caller leaves the CPU emulator's out."""
    lines = [f"Generated by `tools/plot_speedups.py` from {', '.join(f'`{s}`' for s in sources)}; do not edit by "
             "hand. Per (dtype, d, causal): the largest N measured, each chapter's fastest variant there.", "",
             "| device | dtype | d | causal | N | B×H | chapter | fastest variant | TFLOP/s | vs torch sdpa_flash "
             "| driver | CUDA | commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    body = []
    for device in sorted({r["device"] for r in rows}):
        mine = [r for r in rows if r["device"] == device]
        groups = defaultdict(list)
        for r in mine:
            groups[group_key(r)].append(r)
        for g in sorted(groups):
            chapters = [r for r in groups[g] if r["chapter"] != "torch"]
            if not chapters:
                continue
            largest = max((r["Lk"], r["Lq"]) for r in chapters)
            at = [r for r in chapters if (r["Lk"], r["Lq"]) == largest]
            for chapter in sorted({r["chapter"] for r in at}):
                best = max((r for r in at if r["chapter"] == chapter), key=lambda r: (r["tflops"], r["variant"]))  # fastest
                flash = [t for t in groups[g] if t["chapter"] == "torch" and t["variant"] == "sdpa_flash"
                         and same_shape(t, best)]
                ratio = f"{best['tflops'] / flash[0]['tflops']:.2f}×" if flash and flash[0]["tflops"] > 0 else "—"
                n = short_n(best["Lk"]) if best["Lq"] == best["Lk"] else f"Lq {best['Lq']}, Lk {best['Lk']}"
                causal = best["causal"] + (f", mask {best['mask']}" if best["mask"] != "none" else "")
                body.append(f"| {device} | {best['dtype']} | {best['d']} | {causal} | {n} | {best['B']}×{best['H']} "
                            f"| {chapter} | {best['variant']} | {fmt_tflops(best['tflops'])} | {ratio} "
                            f"| {best['driver']} | {best['cuda']} | {best['commit']} |")
    return "\n".join(lines + body) if body else "_No chapter measurements in the CSV files given._"


def readable_markdown(path):
    """The README's text, or None after a warning when it cannot be read or written back."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        warn(f"cannot read {path}: {getattr(e, 'strerror', None) or e}")
        return None
    if not os.access(path, os.W_OK):
        warn(f"cannot write {path}: permission denied")
        return None
    return text


def table_span(text):
    """Where the results table goes: (index of BEGIN, index of END after it), or None without both."""
    begin = text.find(BEGIN)
    end = text.find(END, begin + len(BEGIN)) if begin >= 0 else -1
    return None if begin < 0 or end < 0 else (begin, end)


def update_readme(path, table):
    text = readable_markdown(path)
    if text is None:
        return False
    span = table_span(text)
    if span is None:  # main refuses such a file before any work; it changed since
        warn(f"{path} has no {BEGIN} ... {END} markers: the results table was not written")
        return True
    begin, end = span
    new = text[:begin + len(BEGIN)] + "\n" + table + "\n" + text[end:]
    if new != text:
        try:
            Path(path).write_text(new)
        except OSError as e:
            warn(f"cannot write {path}: {e.strerror or e}")
            return False
    return True


def writable_folder(folder):
    """Creates the folder if needed and checks that a file can be written in it; a message if not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return f"cannot write PNGs into {folder}: {e.strerror or e}"
    return None


def matplotlib_missing():
    """What to do when this interpreter cannot import matplotlib: it names the interpreter."""
    here = sys.executable or "python3"
    if os.path.exists("/usr/bin/python3") and os.path.realpath(here) != os.path.realpath("/usr/bin/python3"):
        return (f"matplotlib not found by {here}, the python3 this ran with. Debian's python3-matplotlib installs for "
                f"/usr/bin/python3: run /usr/bin/python3 {sys.argv[0]} ..., or install matplotlib for this one "
                f"({here} -m pip install matplotlib)")
    return f"matplotlib not found by {here}: apt-get install python3-matplotlib (or {here} -m pip install matplotlib)"


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description="Plots (speedups, TFLOP/s, extra memory, roofline) and the README's "
                                             "results table from CSV files in the project's schema.")
    ap.add_argument("csv", nargs="+", help="CSV files (the chapters' --csv output, tools/bench_torch_sdpa.py's)")
    ap.add_argument("--out", metavar="DIR",
                    help="folder for the PNGs (default: build/plots/<device-slug>/ in the repository, git-ignored); "
                         "with rows from several devices, one subfolder per device slug under it")
    ap.add_argument("--readme", metavar="PATH",
                    help=f"rewrite the results table between {BEGIN} and {END} in this Markdown file, from the "
                         "measured GPU rows (the CPU emulator's never enter it)")
    args = ap.parse_args(argv)

    # Everything that can be refused is refused before any work: the interpreter, the inputs, the outputs.
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display needed, same output everywhere
        import matplotlib.pyplot as plt
    except ImportError:
        warn(matplotlib_missing())
        return 2
    if args.readme:
        text = readable_markdown(args.readme)
        if text is None:
            return 2
        if table_span(text) is None:
            warn(f"{args.readme} has no {BEGIN} ... {END} markers: add them where the results table goes "
                 "(nothing was written)")
            return 2

    rows = usable(read_rows(args.csv))
    if not rows:
        warn("no passing measurements in the files given")
        return 1
    # One set of figures per (kind, device): a modelled GPU's rows never share a figure with
    # measured ones, even of the same GPU.
    sets = sorted({(r["kind"], r["device"]) for r in rows})
    folders = {}
    for kind, device in sets:
        name = slug(device) + ("-modelled" if kind == "modelled" else "")
        if args.out:
            folders[kind, device] = Path(args.out) / name if len(sets) > 1 else Path(args.out)
        else:
            folders[kind, device] = REPO / "build" / "plots" / name
        why = writable_folder(folders[kind, device])
        if why:
            warn(why)
            return 2
    for kind, device in sets:
        mine = [r for r in rows if r["device"] == device and r["kind"] == kind]
        used = source_text(csv_of(r) for r in mine)
        for p in Figures(plt, mine, device, kind, used).write_all(folders[kind, device]):
            print(p)
    if args.readme:
        measured = [r for r in rows if r["kind"] == "measured" and not emulated(r["device"])]
        if len(measured) < len(rows):
            warn(f"{len(rows) - len(measured)} rows of the CPU emulator or of a model left out of the results table: "
                 "they are not GPU measurements")
        if not measured:
            warn(f"no measured GPU rows: {args.readme} left as it was")
            return 0
        base = Path(args.readme).resolve().parent
        # The files the table's rows come from, named relative to the README when they lie beside
        # or below it, as given otherwise.
        given = sorted({csv_of(r) for r in measured})
        rel = [os.path.relpath(Path(p).resolve(), base) for p in given]
        sources = sorted(r if not r.startswith("..") else p for r, p in zip(rel, given))
        if not update_readme(args.readme, results_table(measured, sources)):
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
