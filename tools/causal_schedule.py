#!/usr/bin/env python3
"""causal_schedule.py: which causal tiles chapter 06 visits, and how its blocks fill the GPU.

A MODEL, not a measurement. It reproduces two rules of the code exactly and assumes the rest:

  exact    which K/V tiles a Q tile visits     06_causal/causal.h, tiles_to_visit
           which visited tiles are masked      06_causal/skip_tiles.cu, the `masked` condition
           the order blocks are launched in    blockIdx order of each variant's grid, x fastest
  assumed  a block takes time proportional to the K/V tiles it visits (--overhead adds a fixed
           cost per block); the GPU starts blocks in blockIdx order, each on the first free slot
           (greedy list scheduling over SMs x blocks-per-SM slots); every slot runs equally fast

It prints (1) the tile grid of one head: Q tiles down, K/V tiles across, `#` visited without a
mask, `/` visited and masked (the diagonal, or the end of the keys), `.` skipped; (2) for each
launch order, the simulated makespan, the ideal (total work / slots, or the longest block if
longer) and the last wave: from the moment the first slot runs out of blocks to the end.

  tools/causal_schedule.py -n 8192 -H 16 -b 2 --br 64 --bc 64
  tools/causal_schedule.py --lq 300 --lk 1000 --align bottom-right --br 64 --bc 128 -H 2
"""
import argparse
import heapq
import math
import os
import signal
import sys

ORDERS = {
    "mask_every_tile": "chapter 05's kernel: grid (Q tiles, heads), every K/V tile of every Q tile",
    "skip_tiles": "grid (Q tiles, heads), x fastest: a head's Q tiles light to heavy, head after head",
    "balanced": "grid (heads, Q tiles), q_tile = Tr-1-y: every head's heaviest Q tile first",
    "paired": "(not a variant; exercise) block k takes Q tiles k and Tr-1-k of one head",
}

# The largest problem taken, so that the largest accepted finishes in a few seconds: the time grows
# with the (Q tile, K/V tile) pairs of one head (the grid and the masked count visit each), with the
# blocks of one launch (each order schedules and profiles every block) and with Lq (visible_pairs);
# --png draws one bar per block of every order, about 0.4 ms each.
MAX_SEQ = 1 << 20         # Lq, Lk
MAX_TILE_PAIRS = 1 << 22  # Tr x Tc of one head
MAX_BLOCKS = 1 << 16      # B*H x Tr, one launch
MAX_PNG_BLOCKS = 1 << 13  # blocks of every order, drawn
MAX_OVERHEAD = 1e6        # K/V tiles a block


def cdiv(a, b):
    return (a + b - 1) // b


class Shape:
    def __init__(self, lq, lk, align, br, bc):
        self.lq, self.lk, self.align, self.br, self.bc = lq, lk, align, br, bc
        self.tr, self.tc = cdiv(lq, br), cdiv(lk, bc)
        # params.h, causal_offset(): key j is visible to query i when j <= i + offset.
        self.offset = lk - lq if align == "bottom-right" else 0

    def tiles_to_visit(self, q_tile):
        """causal.h tiles_to_visit(p, q0, Br, Bc)."""
        q0 = q_tile * self.br
        if self.align == "none":
            return self.tc
        q_last = min(q0 + self.br, self.lq) - 1
        keys = q_last + self.offset + 1  # keys 0 .. keys - 1 are visible to some row
        if keys <= 0:
            return 0
        return self.tc if keys >= self.lk else cdiv(keys, self.bc)

    def masked(self, q_tile, kv_tile):
        """skip_tiles.cu: k0 + Bc > Lk || (causal && k0 + Bc - 1 > q0 + offset)."""
        q0, k0 = q_tile * self.br, kv_tile * self.bc
        return k0 + self.bc > self.lk or (self.align != "none" and k0 + self.bc - 1 > q0 + self.offset)

    def cell(self, q_tile, kv_tile):
        if kv_tile >= self.tiles_to_visit(q_tile):
            return "."
        return "/" if self.masked(q_tile, kv_tile) else "#"

    def visible_pairs(self):
        """harness/problem.cpp visible_pairs: the (query, key) pairs the FLOPs count."""
        if self.align == "none":
            return self.lq * self.lk
        return sum(max(0, min(i + self.offset + 1, self.lk)) for i in range(self.lq))


def print_grid(s, max_rows, max_cols):
    step_r = max(1, cdiv(s.tr, max_rows))
    group = max(1, cdiv(s.tc, max_cols))
    print(f"Tile grid of one head: {s.tr} Q tiles (rows of {s.br}) x {s.tc} K/V tiles (columns of {s.bc} keys)")
    print("  # visited, no mask    / visited and masked (diagonal or end of keys)    . skipped")
    if step_r > 1:
        print(f"  one Q tile in {step_r} shown, and the last")
    if group > 1:
        print(f"  one character per {group} K/V tiles: # all unmasked, . all skipped, / otherwise")
    rows = list(range(0, s.tr, step_r))
    if rows[-1] != s.tr - 1:
        rows.append(s.tr - 1)
    width = len(str(s.tr - 1))
    for q in rows:
        cells = [s.cell(q, k) for k in range(s.tc)]
        line = ""
        for g in range(0, s.tc, group):
            chunk = set(cells[g:g + group])
            line += chunk.pop() if len(chunk) == 1 else "/"
        v = s.tiles_to_visit(q)
        m = sum(1 for k in range(v) if s.masked(q, k))
        print(f"  q{q:<{width}} {line}  {v:>4} visited, {m} masked")


def blocks_in_order(s, order, heads):
    """(head, label, work) in launch order; work in visited K/V tiles."""
    w = [s.tiles_to_visit(q) for q in range(s.tr)]
    if order == "mask_every_tile":
        return [(h, f"q{q}", s.tc) for h in range(heads) for q in range(s.tr)]
    if order == "skip_tiles":
        return [(h, f"q{q}", w[q]) for h in range(heads) for q in range(s.tr)]
    if order == "balanced":
        return [(h, f"q{s.tr - 1 - y}", w[s.tr - 1 - y]) for y in range(s.tr) for h in range(heads)]
    if order == "paired":
        out = []
        for h in range(heads):
            for k in range(cdiv(s.tr, 2)):
                j = s.tr - 1 - k
                out.append((h, f"q{k}+q{j}" if j != k else f"q{k}", w[k] + (w[j] if j != k else 0)))
        return out
    raise ValueError(order)


def simulate(blocks, slots, overhead):
    """Greedy list scheduling: each block, in launch order, on the slot that frees first."""
    free = [(0.0, i) for i in range(slots)]
    heapq.heapify(free)
    runs = []  # (start, end, slot, block)
    for b in blocks:
        t, slot = heapq.heappop(free)
        end = t + b[2] + overhead
        runs.append((t, end, slot, b))
        heapq.heappush(free, (end, slot))
    makespan = max(r[1] for r in runs)
    # The first slot to run out of blocks: the earliest slot end time once every block is placed.
    first_idle = min(t for t, _ in free)
    return runs, makespan, first_idle


def busy_profile(runs, makespan, buckets):
    """Average number of busy slots in each of `buckets` equal slices of the makespan."""
    out = []
    for k in range(buckets):
        a, b = makespan * k / buckets, makespan * (k + 1) / buckets
        busy = sum(max(0.0, min(e, b) - max(st, a)) for st, e, _, _ in runs)
        out.append(busy / (b - a))
    return out


def print_gantt(runs, makespan, slots, count, width):
    """Slot timelines: each block a segment `|label----`, time scaled to `width` characters."""
    last_slot = max(runs, key=lambda r: r[1])[2]
    chosen = sorted({round(k * (slots - 1) / max(1, count - 1)) for k in range(count)} | {last_slot})
    scale = width / makespan if makespan > 0 else 0
    print(f"  which blocks run where ({len(chosen)} of {slots} slots; {width} characters = {makespan:g} tiles):")
    on = {}  # each slot's blocks, in launch order: one pass over the runs, not one per slot printed
    for r in runs:
        on.setdefault(r[2], []).append(r)
    for slot in chosen:
        line = [" "] * width
        for st, e, sl, (h, label, w) in on.get(slot, []):
            if e <= st:
                continue
            a = round(st * scale)
            b = max(a + 1, round(e * scale))
            text = f"|{label}" + "-" * width
            for x in range(a, min(b, width)):
                line[x] = text[x - a]
        print(f"    slot {slot:<4}{''.join(line).rstrip()}")


def main():
    ap = argparse.ArgumentParser(
        description="A MODEL of chapter 06's causal tiles and block scheduling (not a measurement): "
        "the tile grid follows causal.h tiles_to_visit and skip_tiles.cu's masked condition exactly; "
        "the schedule assumes a block's time is proportional to its visited K/V tiles and that blocks "
        "start in blockIdx order on the first free slot.",
        epilog="Example: %(prog)s -n 8192 -H 16 -b 2 --br 64 --bc 64")
    ap.add_argument("-n", "--seq", type=int, default=8192, help="Lq = Lk = N (default 8192)")
    ap.add_argument("--lq", type=int, help="query length (overrides -n)")
    ap.add_argument("--lk", type=int, help="key/value length (overrides -n)")
    ap.add_argument("--align", choices=["top-left", "bottom-right", "none"], default="top-left",
                    help="causal alignment (none: not causal); default top-left")
    ap.add_argument("--br", type=int, default=128,
                    help="rows of Q per tile (the kernel's Br, fa2_tiles in 05_flash_v2/flash_v2.h: 128 up to d = 128, "
                         "64 above)")
    ap.add_argument("--bc", type=int, default=32,
                    help="keys per K/V tile (the kernel's Bc, fa2_tiles: 64 for d <= 64, 32 above)")
    ap.add_argument("-H", "--heads", type=int, default=16, help="heads H (default 16)")
    ap.add_argument("-b", "--batch", type=int, default=2, help="batch B (default 2); blocks cover B*H heads")
    ap.add_argument("--sms", type=int, default=132, help="multiprocessors (default 132, H100/H200)")
    ap.add_argument("--blocks-per-sm", type=int, default=2,
                    help="resident blocks per SM (default 2: 2 blocks of 4 warps up to d = 128)")
    ap.add_argument("--overhead", type=float, default=0.0,
                    help="fixed cost of every block, in K/V tiles (default 0)")
    ap.add_argument("--orders", default="mask_every_tile,skip_tiles,balanced",
                    help="comma-separated: " + ", ".join(ORDERS) + " (default: the three variants)")
    ap.add_argument("--grid-rows", type=int, default=32, help="most Q tiles the grid prints (default 32; 0: no grid)")
    ap.add_argument("--grid-cols", type=int, default=64, help="most characters per grid row (default 64)")
    ap.add_argument("--tail", type=int, default=6, help="blocks listed that finish last, per order")
    ap.add_argument("--gantt", type=int, default=0,
                    help="print the timelines of this many slots, evenly spaced, and the one that ends last")
    ap.add_argument("--gantt-width", type=int, default=96, help="characters of a timeline (default 96)")
    ap.add_argument("--png", help="also draw the grid and each order's slot timeline here (needs matplotlib)")
    a = ap.parse_args()

    lq = a.lq if a.lq is not None else a.seq
    lk = a.lk if a.lk is not None else a.seq
    for name, v in (("Lq", lq), ("Lk", lk), ("Br", a.br), ("Bc", a.bc), ("heads", a.heads), ("batch", a.batch),
                    ("SMs", a.sms), ("blocks per SM", a.blocks_per_sm)):
        if v < 1:
            ap.error(f"{name} must be at least 1")
    # Every option is refused before any work: out of range, not a number, or too large to finish soon.
    for name, v in (("--lq" if a.lq is not None else "-n", lq), ("--lk" if a.lk is not None else "-n", lk)):
        if v > MAX_SEQ:
            ap.error(f"{name} {v}: the model takes sequences of at most {MAX_SEQ} (Lq and Lk)")
    for name, v, lo, hi, what in (("--sms", a.sms, 1, 1024, "multiprocessors"),
                                  ("--blocks-per-sm", a.blocks_per_sm, 1, 64, "blocks"),
                                  ("--grid-rows", a.grid_rows, 0, None, "Q tiles (0: no grid)"),
                                  ("--grid-cols", a.grid_cols, 1, None, "characters"),
                                  ("--tail", a.tail, 0, None, "blocks (0: none)"),
                                  ("--gantt", a.gantt, 0, 1024, "slots (0: no timelines)"),
                                  ("--gantt-width", a.gantt_width, 16, 1000, "characters")):
        if v < lo or (hi is not None and v > hi):
            ap.error(f"{name} {v}: it takes {lo} to {hi} {what}" if hi is not None else
                     f"{name} {v}: it takes {lo} or more {what}")
    if not math.isfinite(a.overhead) or not 0 <= a.overhead <= MAX_OVERHEAD:
        ap.error(f"--overhead {a.overhead:g}: it takes a number of K/V tiles from 0 to {MAX_OVERHEAD:.0f}")
    orders = [o.strip() for o in a.orders.split(",") if o.strip()]
    for o in orders:
        if o not in ORDERS:
            ap.error(f"unknown order {o!r}: use {', '.join(ORDERS)}")
    if not orders:
        ap.error(f"--orders {a.orders!r} names no order: give one or more of {', '.join(ORDERS)}, comma-separated")
    tr, tc = cdiv(lq, a.br), cdiv(lk, a.bc)
    if tr * tc > MAX_TILE_PAIRS:
        ap.error(f"{tr} Q tiles x {tc} K/V tiles = {tr * tc} tile pairs per head, more than the {MAX_TILE_PAIRS} "
                 f"the model takes: a larger --br or --bc, or a shorter sequence")
    blocks = a.heads * a.batch * tr
    if blocks > MAX_BLOCKS:
        ap.error(f"B*H = {a.heads * a.batch} heads x {tr} Q tiles = {blocks} blocks, more than the {MAX_BLOCKS} "
                 f"the model takes: fewer -H or -b, a larger --br, or a shorter sequence")

    if a.png:  # refused before any work: a folder that is missing or cannot be written
        folder = os.path.dirname(os.path.abspath(a.png))
        if os.path.isdir(a.png) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            ap.error(f"--png {a.png}: {'a folder' if os.path.isdir(a.png) else 'its folder is missing or not writable'}")
        drawn = sum(a.heads * a.batch * cdiv(tr, 2) if o == "paired" else blocks for o in orders)
        if drawn > MAX_PNG_BLOCKS:
            ap.error(f"--png draws each block of each order: {drawn} blocks here, more than the {MAX_PNG_BLOCKS} it "
                     f"draws: fewer orders, heads or Q tiles")
        try:
            import matplotlib  # noqa: F401  (draw_png uses it)
        except ImportError:
            ap.error(f"--png needs matplotlib, which {sys.executable} cannot import: apt-get install "
                     "python3-matplotlib (for /usr/bin/python3), or pip install matplotlib for this python3")

    s = Shape(lq, lk, a.align, a.br, a.bc)
    heads, slots = a.heads * a.batch, a.sms * a.blocks_per_sm
    print("MODEL (arithmetic, not a measurement): tile rules from 06_causal; times in units of one K/V tile")
    print(f"Lq = {lq}, Lk = {lk}, causal {a.align} (offset {s.offset}), Br = {a.br}, Bc = {a.bc}, "
          f"B*H = {heads}, {a.sms} SMs x {a.blocks_per_sm} blocks = {slots} slots\n")
    if a.grid_rows > 0:
        print_grid(s, a.grid_rows, max(1, a.grid_cols))

    visited = sum(s.tiles_to_visit(q) for q in range(s.tr))
    masked = sum(1 for q in range(s.tr) for k in range(s.tiles_to_visit(q)) if s.masked(q, k))
    pairs = s.visible_pairs()
    print(f"{'' if a.grid_rows <= 0 else chr(10)}Per head: {visited} of {s.tr * s.tc} (Q tile, K/V tile) pairs visited "
          f"({visited / (s.tr * s.tc):.3f}), {masked} of them masked; "
          f"visible (query, key) pairs {pairs} of {lq * lk} ({pairs / (lq * lk):.3f}): the FLOPs counted")
    empty = sum(1 for q in range(s.tr) if s.tiles_to_visit(q) == 0)
    if empty:
        print(f"{empty} Q tile(s) see no key at all: their blocks write O = 0 and lse = -inf and return")

    print(f"\nLaunch orders, greedy list scheduling on {slots} slots (block time = visited tiles + {a.overhead:g}):")
    print(f"  {'order':<16} {'blocks':>7} {'makespan':>10} {'ideal':>10} {'ratio':>6} {'last wave':>10} "
          f"{'busy':>6}  {'vs mask_every_tile':>18}")
    results = {}
    for o in orders:
        blocks = blocks_in_order(s, o, heads)
        runs, makespan, first_idle = simulate(blocks, slots, a.overhead)
        total = sum(b[2] + a.overhead for b in blocks)
        ideal = max(total / slots, max(b[2] + a.overhead for b in blocks))
        results[o] = (runs, makespan, first_idle)
        base = results.get("mask_every_tile")
        rel = f"{makespan / base[1]:.3f}" if base and base[1] > 0 else "-"
        busy = total / (slots * makespan) if makespan > 0 else 1.0
        print(f"  {o:<16} {len(blocks):>7} {makespan:>10.1f} {ideal:>10.1f} {makespan / ideal if ideal else 1:>6.3f} "
              f"{makespan - first_idle:>10.1f} {busy:>6.1%}  {rel:>18}")
    print("  ratio = makespan / ideal; last wave = makespan - the time the first slot runs out of blocks;")
    print("  busy = work / (slots x makespan)")

    for o in orders:
        runs, makespan, first_idle = results[o]
        print(f"\n{o}: {ORDERS[o]}")
        prof = busy_profile(runs, makespan, 20)
        bar = "".join(" .:-=+*#%@"[min(9, int(9.999 * b / slots))] for b in prof)
        print(f"  busy slots over time (20 slices, ' ' idle ... '@' all {slots}): |{bar}|")
        if a.gantt > 0:
            print_gantt(runs, makespan, slots, a.gantt, max(16, a.gantt_width))
        last = sorted(runs, key=lambda r: r[1])[-a.tail:] if a.tail > 0 else []
        if last:
            print(f"  the {len(last)} blocks that finish last (head, Q tile, tiles, start -> end):")
            for st, e, slot, (h, label, w) in last:
                print(f"    head {h:<4} {label:<12} {w:>5}  {st:>9.1f} -> {e:>9.1f}  (slot {slot})")

    if a.png:
        draw_png(a.png, s, orders, results, slots)


def draw_png(path, s, orders, results, slots):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("causal_schedule: --png needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        sys.exit(2)
    fig, axes = plt.subplots(1, 1 + len(orders), figsize=(5 + 5 * len(orders), 5))
    code = {".": 0, "/": 1, "#": 2}
    grid = [[code[s.cell(q, k)] for k in range(s.tc)] for q in range(s.tr)]
    axes[0].imshow(grid, cmap=matplotlib.colors.ListedColormap(["white", "tab:orange", "tab:blue"]),
                   vmin=0, vmax=2, aspect="auto", interpolation="nearest")
    axes[0].set(title="tiles of one head (model)\nblue visited, orange masked, white skipped",
                xlabel="K/V tile", ylabel="Q tile")
    for ax, o in zip(axes[1:], orders):
        runs, makespan, first_idle = results[o]
        cmap = plt.get_cmap("viridis")
        wmax = max((r[3][2] for r in runs), default=1) or 1
        for st, e, slot, (h, label, w) in runs:
            ax.barh(slot, e - st, left=st, height=1.0, color=cmap(w / wmax), edgecolor="white", linewidth=0.3)
        ax.axvline(first_idle, color="red", linewidth=0.8)
        ax.set(title=f"{o} (model)\nmakespan {makespan:.0f}, last wave from the red line",
               xlabel="time (K/V tiles)", ylabel="slot", ylim=(-0.5, slots - 0.5))
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        print(f"causal_schedule: cannot write {path}: {e.strerror or e}", file=sys.stderr)
        sys.exit(2)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    main()
