#!/usr/bin/env python3
"""figures.py: the notes' figures, drawn from the code's own rules and from arithmetic.

Nothing here is a measurement. Each figure takes its rule from the file that defines it:

  01_memory_traffic.svg   chapter 01's cost model (01_naive_attention/variants.cpp): S written once
                          and read three times, P written once and read once
  02_reduction_trees.svg  common/kernels/reduce.cuh: warp_max's butterfly, block_reduce's two levels
  03_online_softmax.svg   the split-softmax identity of notes/03 on one row of 8 scores in 2 blocks
                          (the numbers are computed here and checked against a direct softmax)
  04_loop_order.svg       FlashAttention-1's loop order (chapter 04) against FlashAttention-2's
                          (chapter 05)
  05_mma_fragments.svg    which lane holds which element of mma.m16n8k16's A, B and C: the
                          formulas are read from common/simt/include/simt/fragments.h
  05_swizzle_banks.svg    the shared-memory banks of ldmatrix's 8 rows, plain, padded and swizzled:
                          the swizzled address is read from 05_flash_v2/pipeline.cuh
  06_tile_map.svg         chapter 06's tiles (skipped, masked, visited without a mask): the rules
                          of tools/causal_schedule.py, which reproduces 06_causal/causal.h
  06_schedule.svg         skip_tiles' and balanced's launch orders on a small GPU (a model:
                          tools/causal_schedule.py's greedy scheduler)
  07_loop_order.svg       chapter 07's backward: the K/V-outer pass (a block per K/V tile from
                          first_q_tile down, dQ by atomics) and the deterministic dQ pass (a block
                          per Q tile up to the diagonal); tiles Br x Bc read from
                          07_backward/backward.h, skip and mask rules as chapter 06's
  08_split_kv.svg         chapter 08's split-KV: the grid's busy share unsplit and with the splits
                          of split_heuristic (common/harness/decode.cpp, reproduced here and
                          checked: 33 splits at 8 blocks and 32k keys), and the combine of one row
                          with numbers (checked against a direct softmax)
  08_paged_cache.svg      a pool of pages and a block table: key_row of 08_decoding/decode.cuh on
                          an example table, the new token appended in place
  08_gqa_packing.svg      the g x Lq query rows of one KV head as the rows of one block:
                          rows_per_block of 08_decoding/gqa_packed.cu, the row mapping of decode.cuh
  08_roofline.svg         decoding's arithmetic intensity against the H100's roofs, the numbers of
                          common/model/gpu.h

  tools/figures.py                          # writes notes/figures/*.svg
  tools/figures.py --out DIR --check        # CI: writes into DIR, draws each figure twice and
                                            # fails unless both SVGs are byte-identical
  tools/figures.py --br 128 --bc 64         # chapter 05/06 tiles other than the current code's

The SVGs are deterministic (fixed svg.hashsalt, no date, text kept as text), so regenerating them
does not churn git. Each figure checks what it draws (every fragment element held by exactly one
lane, the swizzle a permutation, the online softmax equal to the direct one): a failed check exits
with status 1.
"""
import argparse
import io
import math
import re
import sys
import xml.dom.minidom
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle
except ImportError:
    print("figures.py needs matplotlib: apt-get install python3-matplotlib", file=sys.stderr)
    sys.exit(77)

import causal_schedule  # noqa: E402  (tools/causal_schedule.py: chapter 06's tile rules)

plt.rcParams.update({
    "svg.hashsalt": "flashsteps",  # fixed ids: the same figure gives the same bytes
    "svg.fonttype": "none",        # text stays text: small, diffable files
    "font.size": 9,
    "font.family": "DejaVu Sans",
    "axes.titlesize": 10,
})
METADATA = {"Date": None, "Creator": "tools/figures.py"}

BLUE, ORANGE, GREEN, RED, GREY = "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8c8c8c"
LIGHT = "#eeeeee"


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


# --------------------------------------------------------------------------------------------
# Rules read from the code
# --------------------------------------------------------------------------------------------

def c_expr_to_python(expr):
    """An integer C++ expression of +, *, /, %, ^, &, >>, parentheses and names, as Python."""
    check(re.fullmatch(r"[\w\s+*/%^&<>()]+", expr) is not None, f"unexpected characters in {expr!r}")
    return expr.replace("/", "//")


def fragment_layout():
    """The six functions of simt/fragments.h as Python functions of (lane, i)."""
    src = (ROOT / "common/simt/include/simt/fragments.h").read_text()
    funcs = {}
    for name in ("a_row", "a_col", "b_k", "b_n", "c_row", "c_col"):
        m = re.search(name + r"\(int lane, int (?:/\*i\*/|i)\)\s*\{\s*return (.+?);\s*\}", src)
        check(m is not None, f"simt/fragments.h: cannot read {name}(); tools/figures.py must follow the header")
        funcs[name] = eval("lambda lane, i: " + c_expr_to_python(m.group(1)))  # noqa: S307 (our own header)
    return funcs


def swizzle_rule():
    """The layouts of 05_flash_v2/pipeline.cuh as Python functions of (row, col, D), in elements:
    (swizzled, padded). The swizzle is the one `return` expression there that XORs; the padding
    is the unswizzled row length of row_elems() in 05_flash_v2/flash_v2.h."""
    src = (ROOT / "05_flash_v2/pipeline.cuh").read_text()
    xors = [e for e in re.findall(r"return ([^;{}]+);", src) if "^" in e and "row" in e and "col" in e]
    check(len(xors) == 1, "05_flash_v2/pipeline.cuh: cannot find the one swizzled address (a `return` with ^); "
          "tools/figures.py must follow the code")
    header = (ROOT / "05_flash_v2/flash_v2.h").read_text()
    m = re.search(r"constexpr int row_elems\(int d, bool swizzle\) \{ return swizzle && d % 64 == 0 \? d : d \+ (\d+); \}",
                  header)
    check(m is not None, "05_flash_v2/flash_v2.h: row_elems() no longer pads rows by a constant; "
          "tools/figures.py must follow the code")
    pad = int(m.group(1))
    swz = eval("lambda row, col, D: " + c_expr_to_python(xors[0]))  # noqa: S307 (our own header)
    return swz, lambda row, col, D: row * (D + pad) + col


def save(fig, path, check_twice):
    if path.suffix == ".png":  # for a look on screen; the notes embed the SVGs
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        print(f"wrote {path}")
        return
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata=METADATA, bbox_inches="tight")
    data = buf.getvalue()
    if check_twice:
        again = io.BytesIO()
        fig.savefig(again, format="svg", metadata=METADATA, bbox_inches="tight")
        check(again.getvalue() == data, f"{path.name}: two renderings differ (the SVG is not deterministic)")
        xml.dom.minidom.parseString(data)  # well-formed, or it raises
    plt.close(fig)
    path.write_bytes(data)
    print(f"wrote {path} ({len(data)} bytes)")


def box(ax, x, y, w, h, text, color, fontsize=9, alpha=1.0, textcolor="black", lw=1.0):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="black", linewidth=lw, alpha=alpha))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, color=textcolor)


def arrow(ax, a, b, text="", color="black", rad=0.0, offset=(0, 0), fontsize=8, lw=1.2):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, color=color, linewidth=lw,
                                 connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((a[0] + b[0]) / 2 + offset[0], (a[1] + b[1]) / 2 + offset[1], text, ha="center", va="center",
                fontsize=fontsize, color=color, bbox=dict(facecolor="white", edgecolor="none", pad=1))


# --------------------------------------------------------------------------------------------
# Chapter 01: what the naive chapter stores and moves
# --------------------------------------------------------------------------------------------

def fig_memory_traffic(args):
    N, d, elt = args.n01, args.d01, 2  # fp16 inputs; S and P are fp32 (4 bytes) whatever the input
    qkvo_per_score = 4 * N * d * elt / (N * N)
    # 01_naive_attention/variants.cpp: S written once and read three times, P written once and read once.
    s_write, s_read, p_write, p_read = 4, 3 * 4, 4, 4
    per_score = s_write + s_read + p_write + p_read
    check(per_score == 24, "chapter 01's cost model is 24 bytes per score")
    head_mib = per_score * N * N / 2**20

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.6), gridspec_kw={"width_ratios": [1, 1.35]})
    # Left: one head's buffers to scale (element counts), N x d strips against N x N squares.
    ax0.set_title(f"One head's buffers, to scale (N = {N}, d = {d})")
    x = 0
    for name in ("Q", "K", "V", "O"):
        ax0.add_patch(Rectangle((x, 0), d, N, facecolor=BLUE, edgecolor="black", linewidth=0.6))
        ax0.text(x + d / 2, N + 80, name, ha="center", va="bottom")
        x += d + 330
    ax0.text(x / 2 - 165, -120, f"N x d, fp16: {N * d * elt // 1024} KiB each", ha="center", va="top", fontsize=8)
    x += 200
    for name in ("S", "P"):
        ax0.add_patch(Rectangle((x, 0), N, N, facecolor=ORANGE, edgecolor="black", linewidth=0.6))
        ax0.text(x + N / 2, N / 2, f"{name}\nN x N, fp32\n{N * N * 4 // 2**20} MiB", ha="center", va="center")
        x += N + 200
    ax0.set_xlim(-100, x)
    ax0.set_ylim(-700, N + 500)
    ax0.set_aspect("equal")
    ax0.axis("off")

    # Right: the round trips of one score through device memory.
    ax1.set_title("Bytes per score through device memory (chapter 01's cost model)")
    ax1.set_xlim(0, 10)
    ax1.set_ylim(-1.4, 5.4)
    ax1.axis("off")
    kernels = [("scores.cu\nS = scale·QKᵀ", 0.3), ("softmax.cu\n3 passes per row", 3.7), ("pv.cu\nO = PV", 7.1)]
    for text, kx in kernels:
        box(ax1, kx, 4.0, 2.6, 1.1, text, "#dce6f2")
    ax1.add_patch(Rectangle((0.1, 0.3), 9.8, 1.5, facecolor=LIGHT, edgecolor=GREY))
    ax1.text(9.8, 1.7, "device memory (HBM)", fontsize=8, color=GREY, va="top", ha="right")
    box(ax1, 2.1, 0.5, 1.6, 0.8, "S (fp32)", ORANGE)
    box(ax1, 5.6, 0.5, 1.6, 0.8, "P (fp32)", ORANGE)
    arrow(ax1, (1.6, 4.0), (2.6, 1.3), f"write {s_write} B", RED, offset=(-0.45, 0))
    arrow(ax1, (3.2, 1.3), (4.4, 4.0), f"read ×3: {s_read} B", RED, offset=(0.1, 0))
    arrow(ax1, (5.4, 4.0), (6.0, 1.3), f"write {p_write} B", RED, offset=(0.05, 0))
    arrow(ax1, (6.9, 1.3), (8.1, 4.0), f"read {p_read} B", RED, offset=(0.1, 0))
    ax1.text(5.0, -0.7,
             f"S and P: {per_score} bytes per score  ({head_mib:.0f} MiB per head at N = {N})\n"
             f"Q, K, V, O: 4·N·d·2 / N² = {qkvo_per_score:.3f} bytes per score",
             ha="center", va="center", fontsize=9,
             bbox=dict(facecolor="white", edgecolor=GREY, boxstyle="round,pad=0.4"))
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 02: the reduction trees of reduce.cuh
# --------------------------------------------------------------------------------------------

def fig_reduction_trees(args):
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 6.2), gridspec_kw={"width_ratios": [1.15, 1]})
    # Left: warp_max, for (offset = 16; offset > 0; offset /= 2) v = max(v, shfl_xor(v, offset)).
    offsets = [16, 8, 4, 2, 1]
    holds = [{lane} for lane in range(32)]  # which lanes' inputs each lane has combined so far
    contrib = {0}  # the lanes whose stage-s values reach lane 0 at the end
    tree = []  # per stage, the set of lanes on lane 0's tree
    for o in reversed(offsets):
        tree.append(set(contrib))
        contrib = contrib | {lane ^ o for lane in contrib}
    tree.append(set(contrib))
    tree.reverse()  # tree[s]: lanes whose value after stage s feeds lane 0's result
    for s, o in enumerate(offsets):
        new = [holds[lane] | holds[lane ^ o] for lane in range(32)]
        for lane in range(32):
            on = lane in tree[s + 1] and (lane in tree[s] or (lane ^ o) in tree[s])
            for src in (lane, lane ^ o):
                hot = on and src in tree[s]
                ax0.plot([s, s + 1], [src, lane], color=RED if hot else "#cccccc", linewidth=1.4 if hot else 0.5,
                         zorder=3 if hot else 1)
        holds = new
    check(all(h == set(range(32)) for h in holds), "after five exchanges every lane holds all 32 values")
    for s in range(6):
        ax0.scatter([s] * 32, range(32), s=9, color="black", zorder=4)
    for s, o in enumerate(offsets):
        ax0.text(s + 0.5, -1.6, f"xor {o}", ha="center", fontsize=8)
    ax0.set_xticks(range(6), ["input"] + [f"after {k}" for k in range(1, 6)])
    ax0.set_yticks([0, 8, 16, 24, 31])
    ax0.set_ylabel("lane")
    ax0.set_ylim(32, -2.5)
    ax0.set_title("warp_max: a butterfly of 5 __shfl_xor_sync\n"
                  "every lane ends with the maximum of all 32; red: what reaches lane 0")

    # Right: block_reduce for 256 threads (8 warps), as softmax_block.cu calls it.
    ax1.set_title("block_max / block_sum, 256 threads (reduce.cuh):\n"
                  "two levels of butterflies and three __syncthreads")
    ax1.set_xlim(0, 8.6)
    ax1.set_ylim(-0.3, 9.6)
    ax1.axis("off")
    for w in range(8):
        box(ax1, 0.2 + w * 1.03, 7.6, 0.9, 1.2, f"warp {w}\n5 shfl", "#dce6f2", fontsize=7)
        arrow(ax1, (0.65 + w * 1.03, 7.6), (0.65 + w * 1.03, 6.55), color=BLUE, lw=0.9)
    box(ax1, 0.2, 5.7, 8.2, 0.8, "lane 0 of each warp: scratch[warp] = v   (scratch: 33 floats of shared memory)",
        LIGHT, fontsize=7.5)
    for yb, n in ((5.35, 1), (2.75, 2), (0.45, 3)):
        ax1.plot([0.1, 8.5], [yb, yb], linestyle="--", color=RED, linewidth=1)
        ax1.text(8.5, yb + 0.12, f"__syncthreads ({n})", ha="right", va="bottom", color=RED, fontsize=8)
    box(ax1, 2.2, 3.4, 4.2, 1.4, "warp 0: lane l < 8 reads scratch[l],\nthe others the identity (−∞ or 0);\n"
        "one more butterfly (5 shfl)", "#dce6f2", fontsize=8)
    arrow(ax1, (4.3, 5.7), (4.3, 4.8), color=BLUE, lw=0.9)
    box(ax1, 2.2, 1.4, 4.2, 0.9, "lane 0 of warp 0: scratch[32] = result", LIGHT, fontsize=8)
    arrow(ax1, (4.3, 3.4), (4.3, 2.3), color=BLUE, lw=0.9)
    ax1.text(4.3, 0.95, "every thread reads scratch[32]", ha="center", fontsize=8)
    ax1.text(4.3, -0.15, "barrier (3): scratch may be reused by the next reduction", ha="center", fontsize=7,
             color=GREY)
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 03: the online softmax on one row of 8 scores in 2 blocks
# --------------------------------------------------------------------------------------------

ROW_SCORES = [2.0, 0.5, 3.0, 1.0, 1.5, 4.0, 0.0, 2.5]
ROW_VALUES = [1.0, -1.0, 2.0, 0.5, 3.0, 1.0, -2.0, 0.0]  # V with d = 1, so that O is one number


def online_softmax_steps(x, v, block):
    """The tile-by-tile update of notes/03 ("Rescaling O, step by step"), in base e."""
    m, l, o = -math.inf, 0.0, 0.0
    steps = []
    for start in range(0, len(x), block):
        xs, vs = x[start:start + block], v[start:start + block]
        m_tile = max(xs)
        m_new = max(m, m_tile)
        alpha = math.exp(m - m_new) if m != -math.inf else 0.0
        p = [math.exp(xj - m_new) for xj in xs]
        l_new = alpha * l + sum(p)
        o_new = alpha * o + sum(pj * vj for pj, vj in zip(p, vs))
        steps.append(dict(start=start, m_old=m, m_tile=m_tile, m=m_new, alpha=alpha, p=p, l=l_new, o=o_new))
        m, l, o = m_new, l_new, o_new
    return steps


def fig_online_softmax(args):
    x, v = ROW_SCORES, ROW_VALUES
    steps = online_softmax_steps(x, v, 4)
    m_all = max(x)
    e = [math.exp(xj - m_all) for xj in x]
    l_all = sum(e)
    o_all = sum(ej * vj for ej, vj in zip(e, v)) / l_all
    last = steps[-1]
    check(abs(last["l"] - l_all) < 1e-12 and abs(last["o"] / last["l"] - o_all) < 1e-12,
          "the online softmax equals the direct one")

    fig = plt.figure(figsize=(11, 7.2))
    ax = fig.add_axes([0.06, 0.58, 0.9, 0.36])
    colors = [BLUE] * 4 + [ORANGE] * 4
    ax.bar(range(8), x, color=colors, edgecolor="black", linewidth=0.6)
    for j, xj in enumerate(x):
        ax.text(j, xj + 0.08, f"x{j + 1} = {xj:g}\nv{j + 1} = {v[j]:g}", ha="center", va="bottom", fontsize=8)
    ax.hlines(steps[0]["m"], -0.45, 3.45, colors=BLUE, linestyles="--")
    ax.hlines(steps[1]["m"], -0.45, 7.45, colors=ORANGE, linestyles="--")
    ax.text(-0.4, steps[0]["m"] + 0.06, f"m after block 1 = {steps[0]['m']:g}", color=BLUE, fontsize=8, va="bottom")
    ax.text(7.45, steps[1]["m"] + 0.06, f"m after block 2 = {steps[1]['m']:g}", color=ORANGE, fontsize=8,
            ha="right", va="bottom")
    ax.axvline(3.5, color=GREY, linewidth=0.8)
    ax.set_xticks(range(8), [f"key {j + 1}" for j in range(8)])
    ax.set_ylim(-0.3, 5.6)
    ax.set_ylabel("score")
    ax.set_title("One row of 8 scores, read in 2 blocks of 4: the running maximum m, sum l and output õ")

    lines = []
    s1, s2 = steps
    lines.append("block 1 (keys 1-4):  m = max(−∞, " + f"{s1['m_tile']:g}) = {s1['m']:g}      "
                 "α = 0 (nothing before)")
    lines.append("   p = e^(x − m)  = " + "  ".join(f"{pj:.4f}" for pj in s1["p"]))
    lines.append(f"   l = Σ p = {s1['l']:.4f}        õ = Σ p·v = {s1['o']:.4f}")
    lines.append(f"block 2 (keys 5-8):  m = max({s1['m']:g}, {s2['m_tile']:g}) = {s2['m']:g}      "
                 f"α = e^({s1['m']:g} − {s2['m']:g}) = {s2['alpha']:.4f}")
    lines.append("   p = e^(x − m)  = " + "  ".join(f"{pj:.4f}" for pj in s2["p"]))
    lines.append(f"   l = α·{s1['l']:.4f} + {sum(s2['p']):.4f} = {s2['l']:.4f}"
                 f"        õ = α·{s1['o']:.4f} + {sum(pj * vj for pj, vj in zip(s2['p'], v[4:])):.4f}"
                 f" = {s2['o']:.4f}")
    lines.append(f"end:  O = õ / l = {s2['o'] / s2['l']:.4f}        lse = m + ln l = {s2['m'] + math.log(s2['l']):.4f}")
    lines.append(f"check, all 8 at once:  m = {m_all:g},  l = {l_all:.4f},  O = Σ softmax(x)·v = {o_all:.4f}")
    fig.text(0.06, 0.47, "\n".join(lines), family="DejaVu Sans Mono", fontsize=9, va="top", linespacing=1.7)
    return fig


# --------------------------------------------------------------------------------------------
# Chapters 04 and 05: FlashAttention-1's loop order against FlashAttention-2's
# --------------------------------------------------------------------------------------------

def fig_loop_order(args):
    tr, tc = 4, 4
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 5.4))
    block_colors = [BLUE, ORANGE, GREEN, "#8172b2"]
    for ax in (ax0, ax1):
        ax.set_xlim(-0.2, tc + 2.6)
        ax.set_ylim(tr + 1.3, -1.0)
        ax.set_aspect("equal")
        ax.axis("off")
        for j in range(tc):
            ax.text(j + 0.5, -0.25, f"K{j + 1},V{j + 1}", ha="center", fontsize=8)
        for i in range(tr):
            ax.text(-0.15, i + 0.5, f"Q{i + 1}", ha="right", va="center", fontsize=8)
    # FA1 (Algorithm 1, chapter 04): one block per (batch, head); j outside, i inside.
    order = 0
    for j in range(tc):
        for i in range(tr):
            order += 1
            box(ax0, j, i, 1, 1, str(order), "#dce6f2", fontsize=10)
    for j in range(tc):
        ax0.add_patch(FancyArrowPatch((j + 0.82, 0.1), (j + 0.82, tr - 0.1), arrowstyle="-|>", mutation_scale=8,
                                      color="black", linewidth=0.8))
    box(ax0, tc + 0.6, 0, 1.8, tr, "HBM\nO_i, l_i, m_i\n\nread and\nwritten at\nevery step:\n"
        f"Tc = {tc} times\neach", LIGHT, fontsize=8)
    for i in range(tr):
        ax0.add_patch(FancyArrowPatch((tc + 0.05, i + 0.5), (tc + 0.55, i + 0.5), arrowstyle="<|-|>",
                                      mutation_scale=8, color=RED, linewidth=1.0))
    ax0.set_title("FlashAttention-1 (chapter 04): K/V tiles outside, Q tiles inside\n"
                  "one block per (batch, head) walks the whole grid; O goes out and back")
    ax0.text(tc / 2, tr + 0.6, "K, V read once;  Q, O, l, m read (and O, l, m written) Tc times",
             ha="center", fontsize=8)
    # FA2 (chapter 05): one block per Q tile, j inside; O in registers, written once.
    for i in range(tr):
        for j in range(tc):
            box(ax1, j, i, 1, 1, str(j + 1), block_colors[i % 4], fontsize=10, alpha=0.55)
        ax1.add_patch(FancyArrowPatch((0.1, i + 0.82), (tc - 0.1, i + 0.82), arrowstyle="-|>", mutation_scale=8,
                                      color="black", linewidth=0.8))
        ax1.add_patch(FancyArrowPatch((tc + 0.05, i + 0.5), (tc + 0.55, i + 0.5), arrowstyle="-|>",
                                      mutation_scale=8, color=RED, linewidth=1.0))
    box(ax1, tc + 0.6, 0, 1.8, tr, "HBM\nO_i, lse_i\n\nwritten once,\nat the end", LIGHT, fontsize=8)
    ax1.set_title("FlashAttention-2 (chapter 05): Q tiles outside, one block each\n"
                  "O_i, l_i, m_i stay in registers; the blocks run in parallel")
    ax1.text(tc / 2, tr + 0.6, "Q read and O written once;  K, V read once per Q tile: Tr times",
             ha="center", fontsize=8)
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 05: mma.m16n8k16's fragments
# --------------------------------------------------------------------------------------------

def fig_mma_fragments(args):
    f = fragment_layout()
    operands = [  # name, rows, cols, elements per lane, (row, col) of element i of lane
        ("A (16 x 16, fp16/bf16): a[0..7]", 16, 16, 8, lambda lane, i: (f["a_row"](lane, i), f["a_col"](lane, i)), "a"),
        ("B (16 x 8, k x n): b[0..3]", 16, 8, 4, lambda lane, i: (f["b_k"](lane, i), f["b_n"](lane, i)), "b"),
        ("C, D (16 x 8, fp32): c[0..3]", 16, 8, 4, lambda lane, i: (f["c_row"](lane, i), f["c_col"](lane, i)), "c"),
    ]
    cmap = plt.get_cmap("tab20")
    fig, axes = plt.subplots(1, 3, figsize=(15, 7.6), gridspec_kw={"width_ratios": [16, 8, 8]})
    for ax, (title, rows, cols, per_lane, where, reg) in zip(axes, operands):
        owner = {}
        for lane in range(32):
            for i in range(per_lane):
                rc = where(lane, i)
                check(rc not in owner, f"{title}: element {rc} held by two lanes")
                check(0 <= rc[0] < rows and 0 <= rc[1] < cols, f"{title}: element {rc} outside the matrix")
                owner[rc] = (lane, i)
        check(len(owner) == rows * cols, f"{title}: every element held by exactly one lane")
        for (r, c), (lane, i) in owner.items():
            g = lane // 4
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=cmap(2 * (g % 8) + (lane % 2)), edgecolor="white",
                                   linewidth=0.5, alpha=0.9))
            bold = lane == 5
            ax.text(c + 0.5, r + 0.38, f"T{lane}", ha="center", va="center", fontsize=6.5,
                    fontweight="bold" if bold else "normal")
            ax.text(c + 0.5, r + 0.74, f"{reg}{i}", ha="center", va="center", fontsize=5.5, color="#333333")
            if bold:
                ax.add_patch(Rectangle((c, r), 1, 1, fill=False, edgecolor="black", linewidth=1.6))
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_xticks([k + 0.5 for k in range(cols)], range(cols), fontsize=7)
        ax.set_yticks([k + 0.5 for k in range(rows)], range(rows), fontsize=7)
        ax.tick_params(length=0)
        ax.set_xlabel("n" if reg == "b" else "column (k)" if reg == "a" else "column (n)")
        ax.set_ylabel("k" if reg == "b" else "row (m)")
        ax.set_title(title)
    fig.suptitle("mma.sync.m16n8k16: lane T holds element i (a_i, b_i, c_i) of each operand; two 16-bit elements "
                 "share a register (a0,a1 | a2,a3 ...)\nlane = 4g + t: A and C rows g and g + 8; lane T5 (g = 1, t = 1) "
                 "outlined.  From common/simt/include/simt/fragments.h (the PTX ISA's layout)", fontsize=10)
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 05: shared-memory banks, plain, padded, swizzled
# --------------------------------------------------------------------------------------------

def bank_groups(layout, D, rows=8, elt=2):
    """For rows 0..rows-1 and each logical 16-byte chunk: the group of 4 banks it lands in (0..7)."""
    chunks = D * elt // 16
    out = []
    for r in range(rows):
        row = []
        for c in range(chunks):
            byte = layout(r, c * 8) * elt
            check(byte % 16 == 0, "a 16-byte chunk stays 16-byte aligned")
            row.append((byte // 4) % 32 // 4)
        out.append(row)
    return out


def conflict_ways(groups, c):
    """How many of the 8 rows one ldmatrix matrix reads (logical chunk c) share a bank group."""
    col = [groups[r][c] for r in range(len(groups))]
    return max(col.count(g) for g in set(col))


def fig_swizzle_banks(args):
    swz, pad = swizzle_rule()
    layouts = [
        ("plain: row r at r·D", lambda r, col, D: r * D + col),
        ("padded: row r at r·(D + 8)", pad),
        ("swizzled: chunk c at c ^ (r % 8)", swz),
    ]
    dims = args.swizzle_dims
    fig, axes = plt.subplots(len(dims), 3, figsize=(14, 3.3 * len(dims) + 0.6), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for row_axes, D in zip(axes, dims):
        check(D % 64 == 0, "the swizzle applies to head dims that are multiples of 64")
        for ax, (title, layout) in zip(row_axes, layouts):
            groups = bank_groups(lambda r, col: layout(r, col, D), D)
            chunks = len(groups[0])
            ways = [conflict_ways(groups, c) for c in range(chunks)]
            for r in range(8):
                for c in range(chunks):
                    gid = groups[r][c]
                    ax.add_patch(Rectangle((c, r), 1, 1, facecolor=cmap(gid), edgecolor="white", alpha=0.75))
                    ax.text(c + 0.5, r + 0.5, f"{4 * gid}-{4 * gid + 3}", ha="center", va="center", fontsize=6)
            ax.add_patch(Rectangle((0, 0), 1, 8, fill=False, edgecolor="black", linewidth=2))
            ax.set_xlim(0, chunks)
            ax.set_ylim(8, 0)
            ax.set_aspect("equal")
            ax.set_xticks([c + 0.5 for c in range(chunks)], range(chunks), fontsize=7)
            ax.set_yticks([r + 0.5 for r in range(8)], range(8), fontsize=7)
            ax.tick_params(length=0)
            ax.set_xlabel("logical 16-byte chunk c (8 fp16 columns)")
            ax.set_ylabel("row r")
            ax.set_title(f"d = {D}, {title}\nchunk 0 of rows 0-7 (outlined): {ways[0]}-way; "
                         f"worst chunk: {max(ways)}-way", fontsize=9)
            if layout is swz:
                for c in range(chunks):
                    check(ways[c] == 1, f"d = {D}: the swizzle gives the 8 rows of chunk {c} 8 different bank groups")
            if title.startswith("plain"):
                check(ways[0] == 8, f"d = {D}: the plain layout puts the 8 rows on the same banks")
    fig.suptitle("Shared-memory banks (32 banks of 4 bytes) under an ldmatrix of 8 rows: each cell is the banks a "
                 "16-byte chunk lands on.\nComputed from the swizzled address of 05_flash_v2/pipeline.cuh (bank = byte address / 4 "
                 "mod 32); arithmetic, not the emulator's counters", fontsize=10)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 06: the tile map and the launch orders (models from tools/causal_schedule.py)
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Chapter 07: the backward's two loop orders
# --------------------------------------------------------------------------------------------

def backward_tiles():
    """kMmaBr and kMmaBc of 07_backward/backward.h: the tiles of the tensor-core steps."""
    src = (ROOT / "07_backward/backward.h").read_text()
    m = re.search(r"kMmaBr = (\d+), kMmaBc = (\d+);", src)
    check(m is not None, "07_backward/backward.h: cannot read kMmaBr, kMmaBc; tools/figures.py must follow it")
    return int(m.group(1)), int(m.group(2))


def first_q_tile(s, k0):
    """07_backward/backward.h first_q_tile: the first Q tile a K/V tile starting at k0 meets."""
    if s.align == "none":
        return 0
    i = k0 - s.offset
    return 0 if i <= 0 else s.tr if i >= s.lq else i // s.br


def fig_backward_loop_order(args):
    br, bc = backward_tiles()
    s = causal_schedule.Shape(6 * br, 6 * bc, "top-left", br, bc)
    # Both passes visit the same pairs: down from first_q_tile (K/V outer), up to tiles_to_visit (Q outer).
    for q in range(s.tr):
        for k in range(s.tc):
            check((q >= first_q_tile(s, k * bc)) == (k < s.tiles_to_visit(q)),
                  f"the K/V-outer and Q-outer passes disagree on tile ({q}, {k})")
    colors = {"#": BLUE, "/": ORANGE, ".": "white"}
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 6.2))
    for ax in (ax0, ax1):
        ax.set_xlim(-0.6, s.tc + 2.4)
        ax.set_ylim(s.tr + 1.2, -1.0)
        ax.set_aspect("equal")
        ax.axis("off")
        for q in range(s.tr):
            ax.text(-0.15, q + 0.5, f"Q{q + 1}", ha="right", va="center", fontsize=8)
            for k in range(s.tc):
                c = s.cell(q, k)
                ax.add_patch(Rectangle((k, q), 1, 1, facecolor=colors[c], edgecolor="black", linewidth=0.6, alpha=0.75))
        for k in range(s.tc):
            ax.text(k + 0.5, -0.25, f"K{k + 1},V{k + 1}", ha="center", fontsize=8)
    # Left: a block per K/V tile (column), walking down; dK, dV written once; dQ rows added to by atomics.
    for k in range(s.tc):
        first = first_q_tile(s, k * bc)
        if first < s.tr:
            ax0.add_patch(FancyArrowPatch((k + 0.5, first + 0.15), (k + 0.5, s.tr - 0.15), arrowstyle="-|>",
                                          mutation_scale=9, color="black", linewidth=0.9))
        ax0.text(k + 0.5, s.tr + 0.35, "dK, dV", ha="center", fontsize=7)
    for q in range(s.tr):
        ax0.add_patch(FancyArrowPatch((s.tc + 0.05, q + 0.5), (s.tc + 0.6, q + 0.5), arrowstyle="-|>",
                                      mutation_scale=8, color=RED, linewidth=1.0))
        n = sum(1 for k in range(s.tc) if s.cell(q, k) != ".")
        ax0.text(s.tc + 0.7, q + 0.5, f"dQ{q + 1}: atomics from {n} block{'s' if n > 1 else ''}", va="center", fontsize=7,
                 color=RED)
    ax0.set_title("Steps b to d: a block per K/V tile, dK, dV on chip, dQ by fp32 atomics. Drawn: step d,\n"
                  "from the first Q tile that sees its keys (b and c start at the first Q tile; b's tiles are 32 x 32)")
    # Right: the deterministic dQ pass, a block per Q tile (row), walking right up to the diagonal.
    for q in range(s.tr):
        n = s.tiles_to_visit(q)
        if n:
            ax1.add_patch(FancyArrowPatch((0.15, q + 0.5), (n - 0.15, q + 0.5), arrowstyle="-|>", mutation_scale=9,
                                          color="black", linewidth=0.9))
        ax1.text(s.tc + 0.15, q + 0.5, f"dQ{q + 1} written once", va="center", fontsize=7)
    ax1.set_title("Step d, deterministic: dQ in a pass of its own, a block per Q tile\nwalking right up to "
                  "the diagonal (the forward's order); no atomics")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", alpha=0.75) for c in (BLUE, ORANGE, "white")]
    fig.legend(handles, ["visited, no mask", "visited and masked (diagonal)", "skipped (no query sees a key)"],
               loc="lower center", ncol=3, frameon=False)
    fig.suptitle(f"Chapter 07 under is_causal (top-left), N = {s.lq}: tiles of Br = {br} queries by Bc = {bc} keys",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 08: decoding (split-KV, the paged cache, GQA packing, the roofline)
# --------------------------------------------------------------------------------------------

def h100_spec():
    """The H100's numbers of common/model/gpu.h (kGpus[0]): SMs, clock, DRAM TB/s, L2 TB/s, tensor
    TFLOP/s, fp32 TFLOP/s, mma.sync fraction."""
    src = re.sub(r"//[^\n]*", "", (ROOT / "common/model/gpu.h").read_text())
    m = re.search(r'\{"h100",\s*"[^"]*",([^}]*)\}', src)
    check(m is not None, "common/model/gpu.h: cannot read the h100 entry of kGpus; tools/figures.py must follow it")
    v = [float(x) for x in m.group(1).split(",") if x.strip()]
    check(len(v) >= 11, "common/model/gpu.h: the h100 entry has fewer fields than GpuSpec")
    # GpuSpec's order: sms, clock_ghz, dram_tb_s, l2_tb_s, l2_mb, l1, mufu, tensor_tflops, fp32_tflops, mma_sync_fraction
    return {"sms": int(v[0]), "clock": v[1], "dram": v[2], "l2": v[3], "tensor": v[7], "fp32": v[8], "mma": v[9]}


def split_rule():
    """split_heuristic of common/harness/decode.cpp, in Python, with kMinSplitKeys from decode.h. The
    function's three lines that decide are checked to be there as they are reproduced here."""
    header = (ROOT / "common/harness/decode.h").read_text()
    m = re.search(r"kMinSplitKeys = (\d+);", header)
    check(m is not None, "common/harness/decode.h: cannot read kMinSplitKeys")
    min_keys = int(m.group(1))
    src = (ROOT / "common/harness/decode.cpp").read_text()
    for line in ("std::clamp(max_keys / kMinSplitKeys, 1, 128)", "blocks * first * 10 < 18LL * sms",
                 "s <= std::min(most, 2 * first)", "n / (sms * std::ceil(n / sms))"):
        check(line in src, f"common/harness/decode.cpp: split_heuristic no longer has `{line}`; "
              "tools/figures.py must follow it")

    def heuristic(blocks, max_keys, sms):
        most = min(max(max_keys // min_keys, 1), 128)

        def filled(s):
            n = blocks * s
            return n / (sms * math.ceil(n / sms))
        first = 1
        while first < most and blocks * first * 10 < 18 * sms:
            first += 1
        best = first
        for s in range(first + 1, min(most, 2 * first) + 1):
            if filled(s) > filled(best) + 1e-9:
                best = s
        return best
    return heuristic


def rows_per_block_rule():
    """rows_per_block of 08_decoding/gqa_packed.cu: the fewest of 1, 2, 4, 8 rows that hold g x Lq."""
    src = (ROOT / "08_decoding/gqa_packed.cu").read_text()
    check("rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8" in src,
          "08_decoding/gqa_packed.cu: rows_per_block changed; tools/figures.py must follow it")
    return lambda rows: 1 if rows <= 1 else 2 if rows <= 2 else 4 if rows <= 4 else 8


def fig_split_kv(args):
    gpu, heuristic = h100_spec(), split_rule()
    sms, keys, blocks = gpu["sms"], args.split_context, 8  # B = 1, Hkv = 8: step e's unsplit grid
    splits = heuristic(blocks, keys, sms)
    if keys == 32768:
        check(splits == 33, "split_heuristic gives 33 splits to 8 blocks at 32k keys (notes/08)")
    per = math.ceil(keys / splits)
    grid = blocks * splits
    rounds = math.ceil(grid / sms)

    fig = plt.figure(figsize=(13, 7.4))
    top = fig.add_gridspec(2, 2, height_ratios=[1.5, 0.75], hspace=0.4, wspace=0.14)
    ax0, ax1 = fig.add_subplot(top[0, 0]), fig.add_subplot(top[0, 1])
    # Time in keys streamed by one SM, every SM at the same rate: a schematic of the busy share.
    for ax, title in ((ax0, f"unsplit: {blocks} blocks (one per KV head), {keys} keys each"),
                      (ax1, f"{splits} splits (split_heuristic): {grid} blocks of ≤ {per} keys, then the combine")):
        ax.set_xlim(0, keys * 1.04)
        ax.set_ylim(sms + 1, -1)
        ax.set_xlabel("time, in keys streamed by one SM (every SM at the same rate)")
        ax.set_ylabel(f"SM (of {sms})")
        ax.set_title(title, fontsize=9)
    for sm in range(blocks):
        ax0.barh(sm, keys, left=0, height=0.9, color=BLUE)
    ax0.add_patch(Rectangle((0, blocks - 0.5), keys, sms - blocks, facecolor=LIGHT, edgecolor="none"))
    ax0.text(keys / 2, (sms + blocks) / 2, f"{sms - blocks} SMs idle\nbusy share {blocks}/{sms} = "
             f"{blocks / sms:.3f}", ha="center", va="center", fontsize=10, color=GREY)
    for b in range(grid):
        sm, rnd = b % sms, b // sms
        lo = b // blocks * per  # split s = b / blocks covers keys [s * per, min(keys, (s + 1) * per))
        n = max(0, min(keys, lo + per) - lo)
        ax1.barh(sm, n, left=rnd * per, height=0.9, color=BLUE if rnd % 2 == 0 else GREEN)
    check(sum(max(0, min(keys, s * per + per) - s * per) for s in range(splits)) == keys,
          "the splits cover every key once")
    end = rounds * per
    rows = 32  # B x Lq x Hq query rows: the combine's blocks
    ax1.barh(range(min(rows, sms)), per * 0.4, left=end, height=0.9, color=ORANGE)
    last = grid - (rounds - 1) * sms
    ax1.annotate(f"{grid} blocks: {rounds} rounds of {sms}" +
                 (" (whole rounds)" if last == sms else f" (the last holds {last})") + ",\n"
                 f"then the combine (orange: {rows} blocks, one per query row;\nits width not to scale): "
                 f"the splits end at {end / keys:.3f} of the unsplit time",
                 xy=(end, sms / 2), xytext=(keys * 0.22, sms * 0.6), fontsize=9,
                 arrowprops=dict(arrowstyle="-|>", color="black"))

    # Bottom: the combine of one row, with numbers: 3 ranges of a row of 12 scores (base 2).
    ax2 = fig.add_subplot(top[1, :])
    ax2.axis("off")
    s = [1.0, 2.5, 0.5, 3.0, -1.0, 0.0, 4.0, 2.0, 1.5, -0.5, 0.5, 2.5]  # scores, base 2
    v = [0.3, -1.0, 0.8, 0.5, 2.0, -0.4, 1.2, 0.1, -0.7, 0.9, 0.0, -0.2]
    ranges = [(0, 4), (4, 8), (8, 12)]
    parts = []
    for lo, hi in ranges:
        m = max(s[lo:hi])
        p = [2 ** (x - m) for x in s[lo:hi]]
        l = sum(p)
        o = sum(pj * vj for pj, vj in zip(p, v[lo:hi])) / l
        parts.append((m, l, o, m + math.log2(l)))
    M = max(pt[3] for pt in parts)
    w = [2 ** (pt[3] - M) for pt in parts]
    O = sum(wi * pt[2] for wi, pt in zip(w, parts)) / sum(w)
    direct = sum(2 ** x * y for x, y in zip(s, v)) / sum(2 ** x for x in s)
    check(abs(O - direct) < 1e-12, "the combine equals the softmax over all the keys")
    lines = ["The combine (split_kv.cu's combine_kernel) on one row of 12 scores s_j (base 2: q·k · scale · log2 e) "
             "in 3 ranges of 4 keys:"]
    for i, ((lo, hi), (m, l, o, lse)) in enumerate(zip(ranges, parts)):
        lines.append(f"  split {i}: keys {lo}-{hi - 1}   m = {m:g}   l = Σ 2^(s − m) = {l:.4f}   "
                     f"O_{i} = Σ 2^(s − m) v / l = {o:+.4f}   lse_{i} = m + log2 l = {lse:.4f}")
    lines.append(f"  M = max lse = {M:.4f}      weights 2^(lse_s − M) = " + ", ".join(f"{x:.4f}" for x in w))
    lines.append(f"  O = Σ_s 2^(lse_s − M) O_s / Σ_s 2^(lse_s − M) = {O:+.6f}")
    lines.append(f"  check, all 12 at once: Σ 2^s v / Σ 2^s = {direct:+.6f}.   A split that sees no key writes "
                 "lse = −∞: weight 2^(−∞) = 0.")
    ax2.text(0.0, 1.0, "\n".join(lines), family="DejaVu Sans Mono", fontsize=9, va="top", linespacing=1.8,
             transform=ax2.transAxes)
    fig.suptitle(f"Split-KV (Flash-Decoding), step e at B = 1, Hq = 32, Hkv = 8, {keys} keys on {sms} SMs: "
                 "the split count from split_heuristic (common/harness/decode.cpp).\nA schematic of the grid's "
                 "busy share (time as keys per SM), not a measurement; the modelled times are in notes/08",
                 fontsize=10)
    return fig


def fig_paged_cache(args):
    src = (ROOT / "08_decoding/decode.cuh").read_text()
    for expr in ("p.block_table[b * p.max_pages + j / p.page_size]", "page) * p.page_size + j % p.page_size"):
        check(expr in src, f"08_decoding/decode.cuh: key_row no longer reads `{expr}`; tools/figures.py must follow it")
    page, pool = 4, 16
    lens = [9, 4, 6]   # cache_seqlens: keys before the append
    new = 1            # one new token per sequence, appended at cache_seqlens[b]
    keys = [n + new for n in lens]
    max_pages = math.ceil(max(keys) / page)
    import random
    order = list(range(pool))
    random.Random(8).shuffle(order)  # an example table: any free page will do
    table = [order[b * max_pages:(b + 1) * max_pages] for b in range(len(lens))]
    owner, where = {}, {}
    for b, n in enumerate(keys):
        for j in range(n):
            pg = table[b][j // page]
            row = pg * page + j % page  # key_row: block_table[b][j / page_size] * page_size + j % page_size
            check(row not in where.values(), "two keys in one row of the pool")
            where[(b, j)] = row
            owner[pg] = b
    seq_colors = [BLUE, ORANGE, GREEN]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1, 1.7]})
    # Left: the block table [B, max_pages] and cache_seqlens.
    ax0.set_xlim(-2.2, max_pages + 2.6)
    ax0.set_ylim(len(lens) + 1.6, -1.4)
    ax0.set_aspect("equal")
    ax0.axis("off")
    ax0.set_title(f"block_table [B = {len(lens)}, max_pages = {max_pages}]\nand cache_seqlens", fontsize=10)
    for i in range(max_pages):
        ax0.text(i + 0.5, -0.25, f"[{i}]", ha="center", fontsize=8)
    for b in range(len(lens)):
        ax0.text(-0.2, b + 0.5, f"seq {b}", ha="right", va="center", fontsize=9)
        used = math.ceil(keys[b] / page)
        for i in range(max_pages):
            box(ax0, i, b, 1, 1, str(table[b][i]) if i < used else "–", seq_colors[b] if i < used else "white",
                fontsize=10, alpha=0.55 if i < used else 1)
        ax0.text(max_pages + 0.2, b + 0.5, f"{lens[b]} + {new} new", va="center", fontsize=8)
    ax0.text(max_pages / 2, len(lens) + 0.9, "key j of seq b: page block_table[b][j / page_size],\n"
             "row j % page_size of it", ha="center", fontsize=8)
    # Right: the pool of pages, each page_size rows of Hkv x d values.
    cols = 4
    ax1.set_xlim(-0.3, cols * (page + 1.2))
    ax1.set_ylim(pool // cols * 2.0 + 0.6, -1.2)
    ax1.set_aspect("equal")
    ax1.axis("off")
    ax1.set_title(f"the pool: k_cache, v_cache [pages = {pool}, page_size = {page}, Hkv, d]\neach cell a key "
                  "row, Hkv × d values: never split between two pages", fontsize=10)
    for pg in range(pool):
        x0, y0 = (pg % cols) * (page + 1.2), (pg // cols) * 2.0
        ax1.text(x0 + page / 2, y0 - 0.15, f"page {pg}", ha="center", fontsize=7, color=GREY)
        for r in range(page):
            hit = [(b, j) for (b, j), row in where.items() if row == pg * page + r]
            if hit:
                b, j = hit[0]
                is_new = j >= lens[b]
                box(ax1, x0 + r, y0, 1, 1, f"{j}", seq_colors[b], fontsize=8, alpha=0.9 if is_new else 0.45,
                    lw=2.2 if is_new else 1.0)
            else:
                box(ax1, x0 + r, y0, 1, 1, "", "white" if pg in owner else LIGHT, fontsize=7)
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", alpha=0.45) for c in seq_colors]
    handles += [Rectangle((0, 0), 1, 1, facecolor=BLUE, edgecolor="black", linewidth=2.2, alpha=0.9),
                Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black"),
                Rectangle((0, 0), 1, 1, facecolor=LIGHT, edgecolor="black")]
    fig.legend(handles, [f"seq {b}'s keys (number: j)" for b in range(len(lens))] +
               ["the new token, appended at cache_seqlens[b] in place", "a row of a sequence's page, not yet written",
                "a page no sequence owns (free)"], loc="lower center", ncol=3, frameon=False, fontsize=8)
    fig.suptitle("The paged KV cache of step e (flash_attn_with_kvcache's layout; vLLM's PagedAttention): an "
                 "example table. The rule is key_row in 08_decoding/decode.cuh;\nan unpaged cache is the same with "
                 "one page per sequence of page_size = the capacity, and block_table[b][0] = b", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.93))
    return fig


def fig_gqa_packing(args):
    src = (ROOT / "08_decoding/decode.cuh").read_text()
    check("t = pr / g, hq = hk * g + pr % g" in src,
          "08_decoding/decode.cuh: a block's row pr is no longer token pr / g of head hk * g + pr % g; "
          "tools/figures.py must follow it")
    R_of = rows_per_block_rule()
    g, hk = 4, 1  # Hq = 8, Hkv = 2: KV head 1 serves query heads 4..7
    cases = [(1, "steps b, c: a block per query row"), (1, "steps d, e: Lq = 1"), (2, "steps d, e: Lq = 2"),
             (4, "steps d, e: Lq = 4 (speculative)")]
    fig, axes = plt.subplots(1, len(cases), figsize=(15, 6.4), gridspec_kw={"width_ratios": [1.2, 1, 1, 1.3]})
    tok_colors = [BLUE, ORANGE, GREEN, "#8172b2"]
    for ci, (ax, (Lq, title)) in enumerate(zip(axes, cases)):
        ax.axis("off")
        ax.set_xlim(-0.5, 7.2)
        ax.set_ylim(18.5, -3.2)
        rows = g * Lq
        packed = ci > 0
        R = R_of(rows) if packed else 1
        chunks = math.ceil(rows / R)
        box(ax, 0.5, -2.6, 5, 1.2, f"KV head {hk}: K, V of every key", LIGHT, fontsize=8)
        y = 0.0
        for c in range(chunks):
            top_y = y
            for r in range(R):
                pr = c * R + r
                if pr >= rows:
                    break
                t, hq = pr // g, hk * g + pr % g
                box(ax, 1.5, y, 3.6, 0.9, f"row {pr}: token {t}, q head {hq}", tok_colors[t % 4], fontsize=7,
                    alpha=0.55)
                if not packed:
                    ax.add_patch(Rectangle((1.3, y - 0.1), 4.0, 1.1, fill=False, edgecolor="black", linewidth=1.4))
                    arrow(ax, (3.3, -1.4), (5.2, y + 0.45), color=RED, rad=-0.25, lw=0.8)
                y += 1.0 if packed else 1.25
            if packed:
                ax.add_patch(Rectangle((1.3, top_y - 0.1), 4.0, y - top_y + 0.2, fill=False, edgecolor="black",
                                       linewidth=1.6))
                ax.text(0.1, (top_y + y) / 2, f"block\n{c}", ha="center", va="center", fontsize=8)
                if c == 0:
                    arrow(ax, (3.3, -1.4), (3.3, top_y - 0.15), color=RED, lw=1.4)
                else:  # around the blocks above: each chunk streams the KV head again
                    arrow(ax, (5.5, -2.0), (5.35, top_y + 0.6), color=RED, rad=-0.35, lw=1.4)
            y += 0.8
        reads = rows if not packed else chunks
        ax.set_title(f"{title}\ng = {g}, Lq = {Lq}: {rows} rows, {R} per block\n{chunks if packed else rows} "
                     f"block{'s' if (chunks if packed else rows) > 1 else ''}: the KV head read {reads}×",
                     fontsize=9)
    fig.suptitle("GQA packing (step d): the g × Lq query rows of one KV head are the rows of one block (up to 8, "
                 "rows_per_block in gqa_packed.cu), so each 16-byte load of K or V serves all of them.\nRow pr of a "
                 "block is new token pr / g of query head hk·g + pr % g (decode.cuh); Hq = 8, Hkv = 2 here. Red: a "
                 "stream of the KV head's cache", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return fig


def fig_roofline(args):
    gpu = h100_spec()
    bw = gpu["dram"]  # TB/s
    roofs = [("tensor cores, dense fp16 (wgmma)", gpu["tensor"], RED),
             (f"mma.sync (× {gpu['mma']}, an assumption)", gpu["tensor"] * gpu["mma"], ORANGE),
             ("CUDA cores, fp32 FFMA", gpu["fp32"], GREEN)]
    fig, ax = plt.subplots(figsize=(10, 6.4))
    x = [10 ** (k / 20) for k in range(-20, 81)]  # 0.1 .. 10^4 FLOP/byte
    for name, peak, color in roofs:
        ridge = peak / bw
        ax.plot(x, [min(bw * xi, peak) for xi in x], color=color, linewidth=1.6,
                label=f"{name}: {peak:.0f} TFLOP/s, ridge {ridge:.0f} FLOP/byte")
        ax.plot([ridge], [peak], "o", color=color)
    # One query row against its KV head's cache, fp16: per key 4d FLOP (q·k and p·v) over 2·2·d bytes (a K and a
    # V row): 1 FLOP per byte whatever d. r rows sharing each load: r FLOP per byte.
    d, t = 128, 2
    per_row = 4 * d / (2 * d * t)
    check(per_row == 1.0, "one query row in fp16 does 1 FLOP per byte of K and V")
    points = [(per_row, "one query row per load (steps b, c: MHA, or each query head for itself)"),
              (4 * per_row, "g = 4 rows per load (steps d, e: Hq = 32, Hkv = 8, Lq = 1)"),
              (8 * per_row, "8 rows per load (a block's most: g·Lq = 8)"),
              (16 * per_row, "g·Lq = 16 (4 new tokens) if one block held them (an mma tile); two blocks of 8 "
                             "read the cache twice: 8")]
    for (xi, label), mk in zip(points, "sD^v"):
        ax.plot([xi], [bw * xi], mk, color=BLUE, markersize=8, label=f"{xi:g} FLOP/byte: {label}")
    ax.axvspan(0.5, 20, color=BLUE, alpha=0.06)
    ax.text(3.2, 1200, "decoding", ha="center", fontsize=9, color=BLUE)
    # A prefill for comparison: chapter 05's compulsory bytes at N = 8k, d = 128 (4096 FLOP/byte, notes/05's table).
    ax.plot([4096], [gpu["tensor"] * gpu["mma"]], "*", color="black", markersize=11,
            label="prefill, N = 8k, d = 128, Q, K, V, O once (notes/05's table): 4096 FLOP/byte, on mma.sync")
    ax.annotate("the decoding kernel's CUDA-core ceiling is below this roof:\nits loop issues shuffles, conversions "
                "and exp2 beside\nthe FFMA: notes/08 estimates it at 3 to 7 rows per block",
                xy=(20, gpu["fp32"]), xytext=(30, 12), fontsize=8, color=GREEN,
                arrowprops=dict(arrowstyle="-|>", color=GREEN))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.3, 1e4)
    ax.set_ylim(0.5, 3000)
    ax.set_xlabel("arithmetic intensity: FLOP per byte of DRAM traffic (K and V of the cache, fp16)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.grid(True, which="both", color=LIGHT, linewidth=0.6)
    ax.legend(loc="lower right", fontsize=7.5, framealpha=0.95)
    ax.set_title(f"The H100's roofline (common/model/gpu.h: {bw:g} TB/s of HBM3, the peaks below): decoding "
                 "sits on the bandwidth slope.\nArithmetic, not a measurement; each roof is a peak the kernels "
                 "reach only in part", fontsize=10)
    return fig


FIGURES = {
    "01_memory_traffic": fig_memory_traffic,
    "02_reduction_trees": fig_reduction_trees,
    "03_online_softmax": fig_online_softmax,
    "04_loop_order": fig_loop_order,
    "05_mma_fragments": fig_mma_fragments,
    "05_swizzle_banks": fig_swizzle_banks,
    "06_tile_map": fig_tile_map,
    "06_schedule": fig_schedule,
    "07_loop_order": fig_backward_loop_order,
    "08_split_kv": fig_split_kv,
    "08_paged_cache": fig_paged_cache,
    "08_gqa_packing": fig_gqa_packing,
    "08_roofline": fig_roofline,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--out", default=str(ROOT / "notes" / "figures"), help="folder for the SVGs (default notes/figures)")
    ap.add_argument("--only", action="append", choices=sorted(FIGURES), help="draw only this figure (repeatable)")
    ap.add_argument("--png", action="store_true", help="write PNGs instead (to look at; not committed)")
    ap.add_argument("--check", action="store_true", help="draw each figure twice and fail unless the SVGs are identical")
    ap.add_argument("--n01", type=int, default=4096, help="chapter 01's N (default 4096)")
    ap.add_argument("--d01", type=int, default=64, help="chapter 01's head dim (default 64)")
    ap.add_argument("--br", type=int, default=128,
                    help="chapter 05/06's rows of Q per tile (default 128: fa2_tiles(d).Br in 05_flash_v2/flash_v2.h, d <= 64)")
    ap.add_argument("--bc", type=int, default=64,
                    help="chapter 05/06's keys per K/V tile (default 64: fa2_tiles(64).Bc in 05_flash_v2/flash_v2.h)")
    ap.add_argument("--swizzle-dims", type=int, nargs="+", default=[64, 128], help="head dims of the bank figure")
    ap.add_argument("--sched-n", type=int, default=2048, help="sequence length of the schedule figure")
    ap.add_argument("--sched-heads", type=int, default=4, help="B*H of the schedule figure")
    ap.add_argument("--sched-sms", type=int, default=8, help="multiprocessors of the schedule figure's small GPU")
    ap.add_argument("--sched-per-sm", type=int, default=2, help="resident blocks per SM of the schedule figure")
    ap.add_argument("--split-context", type=int, default=32768,
                    help="keys per sequence of the split-KV figure (default 32768: notes/08's example)")
    args = ap.parse_args()
    for name in ("n01", "d01", "br", "bc", "sched_n", "sched_heads", "sched_sms", "sched_per_sm", "split_context"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name in args.only or FIGURES:
            save(FIGURES[name](args), out / f"{name}.{'png' if args.png else 'svg'}", args.check)
    except CheckFailed as e:
        print(f"figures.py: check failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
