"""Chapter 06: the tile map and the launch orders (models from tools/causal_schedule.py)."""
import causal_schedule  # tools/causal_schedule.py: chapter 06's tile rules

from .style import BLUE, ORANGE, RED, Rectangle, check, plt


def draw_tiles(ax, s, title):
    colors = {"#": BLUE, "/": ORANGE, ".": "white"}
    for q in range(s.tr):
        for k in range(s.tc):
            y0, x0 = q * s.br, k * s.bc
            h, w = min(s.br, s.lq - y0), min(s.bc, s.lk - x0)
            ax.add_patch(Rectangle((x0, y0), w, h, facecolor=colors[s.cell(q, k)], edgecolor="black",
                                   linewidth=0.5, alpha=0.8))
    # The visible region's edge: query i sees keys j <= i + offset (top of row i to its bottom).
    lo = max(0, -s.offset)  # the first query that sees a key
    pts = [(min(i + s.offset + 1, s.lk), y) for i in range(lo, s.lq) for y in (i, i + 1)]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=RED, linewidth=1.3)
    if lo > 0:
        ax.axhline(min(lo, s.lq), color=RED, linewidth=0.8, linestyle=":")
    ax.set_xlim(0, s.lk)
    ax.set_ylim(s.lq, 0)
    ax.set_aspect("equal")
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    visited = sum(s.tiles_to_visit(q) for q in range(s.tr))
    masked = sum(1 for q in range(s.tr) for k in range(s.tiles_to_visit(q)) if s.masked(q, k))
    ax.set_title(f"{title}\n{visited} of {s.tr * s.tc} tiles visited, {masked} of them masked", fontsize=9)
    return visited


def fig_tile_map(args):
    br, bc = args.br, args.bc
    shapes = [
        (causal_schedule.Shape(1024, 1024, "top-left", br, bc), "N = 1024, is_causal (top-left)"),
        (causal_schedule.Shape(300, 1000, "bottom-right", br, bc), "Lq = 300, Lk = 1000, bottom-right"),
        (causal_schedule.Shape(1000, 300, "bottom-right", br, bc), "Lq = 1000, Lk = 300, bottom-right"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(14, 5.6), gridspec_kw={"width_ratios": [1, 1.2, 0.55]})
    for ax, (s, title) in zip(axes, shapes):
        draw_tiles(ax, s, title)
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", alpha=0.8) for c in (BLUE, ORANGE, "white")]
    fig.legend(handles, ["visited, no mask (scale_only)", "visited and masked (diagonal or end of keys)", "skipped"],
               loc="lower center", ncol=3, frameon=False)
    fig.suptitle(f"Chapter 06's tiles, Br = {br} rows of Q by Bc = {bc} keys (the rules of 06_causal/causal.h "
                 "tiles_to_visit and skip_tiles.cu's `masked`,\nas tools/causal_schedule.py reproduces them); red: "
                 "the last key each query sees", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    return fig


def fig_schedule(args):
    s = causal_schedule.Shape(args.sched_n, args.sched_n, "top-left", args.br, args.bc)
    heads, slots = args.sched_heads, args.sched_sms * args.sched_per_sm
    orders = ["skip_tiles", "balanced"]
    fig, axes = plt.subplots(len(orders), 1, figsize=(12, 7.5), sharex=True)
    cmap = plt.get_cmap("viridis")
    results = {}
    for ax, o in zip(axes, orders):
        blocks = causal_schedule.blocks_in_order(s, o, heads)
        runs, makespan, first_idle = causal_schedule.simulate(blocks, slots, 0.0)
        results[o] = makespan
        wmax = max(b[2] for b in blocks) or 1
        for st, en, slot, (h, label, w) in runs:
            ax.barh(slot, en - st, left=st, height=0.9, color=cmap(w / wmax), edgecolor="white", linewidth=0.4)
            if en - st >= 0.06 * makespan:
                ax.text(st + (en - st) / 2, slot, label, ha="center", va="center", fontsize=6,
                        color="white" if w / wmax < 0.6 else "black")
        total = sum(b[2] for b in blocks)
        ax.axvline(total / slots, color=RED, linewidth=1, linestyle="--")
        ax.set_ylim(slots - 0.5, -0.5)
        ax.set_ylabel("slot (SM x resident block)")
        ax.set_title(f"{o}: makespan {makespan:g} tile-times; dashed: the ideal, total work / slots = "
                     f"{total / slots:g}", fontsize=9)
    check(results["balanced"] <= results["skip_tiles"], "heaviest first never ends later in this model")
    axes[-1].set_xlabel("time, in units of one K/V tile (the model's assumption: a block takes as long as the "
                        "tiles it visits)")
    fig.suptitle(f"MODEL, not a measurement: N = {args.sched_n}, {heads} heads, Br = {args.br}, Bc = {args.bc}, "
                 f"{args.sched_sms} SMs x {args.sched_per_sm} blocks; each bar a block, labelled with its Q tile,\n"
                 "coloured by its work (yellow heaviest). Greedy list scheduling in launch order "
                 "(tools/causal_schedule.py)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig
