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
  08_paged_cache.svg      a pool of pages and a block table: DecodeParams::cache_row
                          (common/kernels/decode_params.h) on an example table, the new token appended in place
  08_gqa_packing.svg      the g x Lq query rows of one KV head as the rows of one block:
                          rows_per_block of 08_decoding/gqa_packed.cu, the row mapping of decode.cuh
  08_roofline.svg         decoding's arithmetic intensity against the H100's roofs, the numbers of
                          common/gpus/gpus.h
  09_wgmma_layout.svg     which thread and register of a warpgroup hold each element of wgmma's
                          m64nNk16 accumulator (drawn at N = 16): frag::wgmma_d_row / wgmma_d_col read
                          from common/simt/include/simt/fragments.h, tiles()[N / 8][4] from simt/wgmma.cuh
  09_swizzle_descriptor.svg  a K-major tile in the 128-byte swizzle: swizzled<R> and k_major_step<R> read
                          from 09_hopper/smem_tiles.cuh, checked against the address wgmma reads (the
                          emulator's element_offset in common/simt/src/wgmma.cpp) for every element
  09_pipeline.svg         steps c (tma_ring.cu) and d (warp_specialized.cu) as a schematic timeline of the
                          ring's stages and mbarriers, kStages from 09_hopper/hopper.h: the order of events
                          is the code's, the durations are illustrative
  09_registers.svg        the SM's 65536 registers by role, d = 128: ptxas's counts
                          (results/static-sm90a/09_hopper_ptxas.txt) and setmaxnreg's (09_hopper/hopper.h)
  09_ping_pong.svg        steps d (warp_specialized.cu), e (ping_pong.cu) and f (intra_overlap.cu): the two
                          consumers and the tensor cores over 4 K/V tiles, a small event simulation of the code's
                          order (attend_tile in tile.cuh, PingPong in ring.cuh, read and checked here; kConsumers
                          from hopper.h), durations illustrative; checked: e's S chains alternate, f's softmax of
                          tile j overlaps its own P V of tile j - 1

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
    """An integer C++ expression of +, -, *, /, %, ^, &, <<, >>, parentheses, names and calls, as Python
    (whose precedence of these operators is C's)."""
    check(re.fullmatch(r"[\w\s+\-*/%^&<>(),]+", expr) is not None, f"unexpected characters in {expr!r}")
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
    """The H100's numbers of common/gpus/gpus.h (the row keyed "h100"): SMs, clock, DRAM TB/s, L2 TB/s,
    tensor TFLOP/s, fp32 TFLOP/s, mma.sync fraction."""
    src = re.sub(r"//[^\n]*", "", (ROOT / "common/gpus/gpus.h").read_text())
    m = re.search(r'\{\.key = "h100",(.*?)\},\s*\{', src, re.S)
    check(m is not None, "common/gpus/gpus.h: cannot read the h100 row of kGpus; tools/figures.py must follow it")
    fields = dict(re.findall(r"\.(\w+) = ([0-9.]+)", m.group(1)))
    want = ["sms", "clock_ghz", "dram_tb_s", "l2_tb_s", "tensor_tflops", "fp32_tflops", "mma_sync_fraction"]
    check(all(k in fields for k in want), "common/gpus/gpus.h: the h100 row lacks one of " + ", ".join(want))
    return {"sms": int(fields["sms"]), "clock": float(fields["clock_ghz"]), "dram": float(fields["dram_tb_s"]),
            "l2": float(fields["l2_tb_s"]), "tensor": float(fields["tensor_tflops"]), "fp32": float(fields["fp32_tflops"]),
            "mma": float(fields["mma_sync_fraction"])}


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
    src = (ROOT / "common/kernels/decode_params.h").read_text()
    for expr in ("block_table[b * max_pages + j / page_size]) * page_size + j % page_size",):
        check(expr in src, "common/kernels/decode_params.h: cache_row no longer reads "
                           f"`{expr}`; tools/figures.py must follow it")
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
            row = pg * page + j % page  # cache_row: block_table[b][j / page_size] * page_size + j % page_size
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
                 "example table. The rule is DecodeParams::cache_row\n(common/kernels/decode_params.h); an unpaged cache is the "
                 "same with one page per sequence of page_size = the capacity, and block_table[b][0] = b", fontsize=10)
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
                "and exp2 beside\nthe FFMA: notes/08 finds the CUDA cores the bound beyond 6.1 rows\nper block unpaged, 5.5 paged",
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
    ax.set_title(f"The H100's roofline (common/gpus/gpus.h: {bw:g} TB/s of HBM3, the peaks below): decoding "
                 "sits on the bandwidth slope.\nArithmetic, not a measurement; each roof is a peak the kernels "
                 "reach only in part", fontsize=10)
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 09: Hopper (wgmma's accumulator, the 128-byte swizzle, the ring, the register budget)
# --------------------------------------------------------------------------------------------

def hopper_constants():
    """The constants of 09_hopper/hopper.h that the figures use, each evaluated from its definition."""
    src = (ROOT / "09_hopper/hopper.h").read_text()
    k = {}
    for name in ("kBr", "kBc", "kThreads", "kStages", "kConsumers", "kWsThreads", "kProducerRegs", "kConsumerRegs"):
        m = re.search(r"\b" + name + r" = ([^,;]+)[,;]", src)
        check(m is not None, f"09_hopper/hopper.h: cannot read {name}; tools/figures.py must follow it")
        k[name] = eval(c_expr_to_python(m.group(1)), {}, dict(k))  # noqa: S307 (our own header)
    m = re.search(r"long ring_smem_bytes\(int d\) \{ return ([^;]+); \}", src)
    check(m is not None, "09_hopper/hopper.h: cannot read ring_smem_bytes()")
    ring = c_expr_to_python(re.sub(r"(\d)L\b", r"\1", m.group(1)))
    k["ring_smem_bytes"] = lambda d: eval(ring, {}, dict(k, d=d))  # noqa: S307
    return k


def fig_wgmma_layout(args):
    f = fragment_layout()
    src = (ROOT / "common/simt/include/simt/fragments.h").read_text()
    rules = {}
    for name, params in (("wgmma_d_row", "warp, lane, i"), ("wgmma_d_col", "lane, i")):
        m = re.search(name + r"\(" + ", ".join(f"int {p}" for p in params.split(", ")) +
                      r"\)\s*\{\s*return (.+?);\s*\}", src)
        check(m is not None, f"simt/fragments.h: cannot read {name}(); tools/figures.py must follow the header")
        rules[name] = eval(f"lambda {params}: " + c_expr_to_python(m.group(1)), dict(f))  # noqa: S307
    acc = (ROOT / "common/simt/include/simt/wgmma.cuh").read_text()
    check("reinterpret_cast<float(*)[N / 8][4]>(v)" in acc and "float v[N / 2];" in acc,
          "simt/wgmma.cuh: WgmmaAccumulator<N> is no longer float v[N / 2] seen as tiles()[N / 8][4]")
    ring = (ROOT / "09_hopper/tma_ring.cu").read_text()
    check("row = q0 + warp * 16 + static_cast<int>(threadIdx.x % 32 / 4)" in ring,
          "09_hopper/tma_ring.cu: a thread's row is no longer q0 + warp * 16 + lane / 4")
    N, show = 16, 1  # N columns drawn (the kernels' N is Bc = 128 for S and d for O); warp `show` zoomed
    owner = {}
    for t in range(128):
        w, lane = t // 32, t % 32
        for i in range(N // 2):
            rc = (rules["wgmma_d_row"](w, lane, i), rules["wgmma_d_col"](lane, i))
            check(0 <= rc[0] < 64 and 0 <= rc[1] < N, f"D: element {rc} outside 64 x {N}")
            check(rc not in owner, f"D: element {rc} held by two (thread, register) pairs")
            owner[rc] = (t, i)
            nt, e = i // 4, i % 4  # tiles()[nt][e] is v[4 nt + e]: tile nt in mma.m16n8k16's C layout
            check(rc == (16 * w + f["c_row"](lane, e), 8 * nt + f["c_col"](lane, e)),
                  f"D: tiles()[{nt}][{e}] of thread {t} is not element {e} of C tile {nt} of warp {w}'s rows")
            if i == 0:
                check(rc[0] == 16 * w + lane // 4, "the kernels' row (warp * 16 + lane / 4) is d[0]'s row")
    check(len(owner) == 64 * N, "D: every element held by exactly one (thread, register)")
    t5 = 32 * show + 5
    rows5 = sorted({r for (r, c), (t, i) in owner.items() if t == t5})
    cols5 = sorted({c for (r, c), (t, i) in owner.items() if t == t5})
    warp_colors = [BLUE, ORANGE, GREEN, "#8172b2"]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(14, 8.0), gridspec_kw={"width_ratios": [0.9, 1.5]})
    for r in range(64):  # a row's colour is its warp's, darker for odd lane quads (g = r % 8 here)
        for ax in (ax0, ax1) if r // 16 == show else (ax0,):
            ax.add_patch(Rectangle((0, r), N, 1, facecolor=warp_colors[r // 16], edgecolor="none",
                                   alpha=0.35 + 0.5 * (r % 2)))
    for ax, r0, r1 in ((ax0, 0, 64), (ax1, 16 * show, 16 * show + 16)):  # cell edges
        ax.vlines(range(1, N), r0, r1, colors="white", linewidth=0.5)
        ax.hlines(range(r0 + 1, r1), 0, N, colors="white", linewidth=0.5)
    for (r, c), (t, i) in owner.items():
        check((t % 32) // 4 % 2 == r % 2, "a row's colour is its lane quad's")
        ax0.text(c + 0.5, r + 0.55, str(t), ha="center", va="center", fontsize=4.8)
        if t // 32 == show:
            bold = t % 32 == 5
            ax1.text(c + 0.5, r + 0.27, f"T{t}", ha="center", va="center", fontsize=7,
                     fontweight="bold" if bold else "normal")
            ax1.text(c + 0.5, r + 0.55, f"d[{i}]", ha="center", va="center", fontsize=6)
            ax1.text(c + 0.5, r + 0.8, f"[{i // 4}][{i % 4}]", ha="center", va="center", fontsize=5.5, color="#333333")
            if bold:
                ax1.add_patch(Rectangle((c, r), 1, 1, fill=False, edgecolor="black", linewidth=1.6, zorder=3))
    for w in range(4):
        ax0.add_patch(Rectangle((0, 16 * w), N, 16, fill=False, edgecolor="black", linewidth=1.4, zorder=3))
        ax0.text(N + 0.4, 16 * w + 8, f"warp {w}\nthreads\n{32 * w}-{32 * w + 31}\nrows\n{16 * w}-{16 * w + 15}",
                 va="center", fontsize=8, color=warp_colors[w])
    ax0.add_patch(Rectangle((0, 16 * show), N, 16, fill=False, edgecolor=RED, linewidth=2.2, zorder=3))
    ax0.set_xlim(0, N + 4.2)
    ax0.set_ylim(64, 0)
    ax0.set_xticks([c + 0.5 for c in range(0, N, 2)], range(0, N, 2), fontsize=7)
    ax0.set_yticks([r + 0.5 for r in range(0, 64, 8)], range(0, 64, 8), fontsize=7)
    ax0.tick_params(length=0)
    for side in ("top", "right"):
        ax0.spines[side].set_visible(False)
    ax0.spines["bottom"].set_bounds(0, N)
    ax0.set(xlabel="column n", ylabel="row m")
    ax0.set_title(f"D (64 x {N}): the thread (0-127) holding each element", fontsize=9)
    ax1.plot([8, 8], [16 * show, 16 * show + 16], color="black", linewidth=1.6)
    ax1.set_xlim(0, N)
    ax1.set_ylim(16 * show + 16, 16 * show)
    ax1.set_aspect("equal")
    ax1.set_xticks([c + 0.5 for c in range(N)], range(N), fontsize=7)
    ax1.set_yticks([r + 0.5 for r in range(16 * show, 16 * show + 16)], range(16 * show, 16 * show + 16), fontsize=7)
    ax1.tick_params(length=0)
    ax1.set(xlabel="column n  (tiles()[0]: columns 0-7, tiles()[1]: 8-15)", ylabel="row m")
    ax1.set_title(f"warp {show} (rows {16 * show}-{16 * show + 15}), enlarged: thread T, its float d[i] and "
                  "tiles()[i / 4][i % 4]\n"
                  f"T{t5} (lane 5: g = 1, t = 1) outlined: rows {' and '.join(map(str, rows5))}, "
                  f"columns {', '.join(map(str, cols5))}",
                  fontsize=9)
    fig.suptitle(f"wgmma.m64nNk16's fp32 accumulator D over a warpgroup (4 warps, 128 threads), drawn at N = {N} "
                 f"(the kernels use N = Bc = 128 for S, d for O): each thread holds N / 2 = {N // 2} floats.\n"
                 "Warp w owns rows 16w to 16w + 15; every 8 columns are mma.m16n8k16's C tile, so WgmmaAccumulator's "
                 "tiles()[N / 8][4] is chapter 05's layout.\nFrom frag::wgmma_d_row / wgmma_d_col "
                 "(common/simt/include/simt/fragments.h) and simt/wgmma.cuh; lighter and darker: alternate lane quads",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def swizzle128_rules():
    """smem_tiles.cuh's swizzled<R>(r, c), k_major()'s descriptor fields and k_major_step<R>(s); and the
    address the emulator's wgmma reads for element (r, k) of a swizzled K-major operand (wgmma.cpp's
    element_offset, then block_runner.h's swizzled(o, span)), all as Python."""
    def read(path, pattern, what):
        m = re.search(pattern, (ROOT / path).read_text())
        check(m is not None, f"{path}: cannot read {what}; tools/figures.py must follow the code")
        return m.groups()
    tiles = "09_hopper/smem_tiles.cuh"
    (swz,) = read(tiles, r"int swizzled\(int r, int c\) \{\s*return ([^;]+);", "swizzled<R>")
    kind, lbo, sbo = read(tiles, r"k_major\(const T\* tile\) \{\s*return simt::wgmma_desc\(tile, "
                          r"simt::WgmmaSwizzle::(\w+), (\d+), (\d+)\);", "k_major()")
    step, shift = read(tiles, r"k_major_step\(int s\) \{\s*return static_cast<uint64_t>\((.+)\) >> (\d+);",
                       "k_major_step<R>")
    (code,) = read("common/simt/include/simt/wgmma.cuh", kind + r" = (\d+)", f"WgmmaSwizzle::{kind}")
    (spans,) = read("common/simt/src/wgmma.cpp", r"kSpan\[4\] = \{([\d, ]+)\}", "the swizzle field's spans")
    (offset,) = read("common/simt/src/wgmma.cpp", r"d\.span \? (d\.start [^:]+?)\s*:", "element_offset (K-major)")
    (xor,) = read("common/simt/src/block_runner.h", r"size_t swizzled\(size_t o, unsigned span\) \{ return span \? "
                  r"(.+?) : o; \}", "swizzled(o, span)")
    span = int(spans.split(",")[int(code)])
    check(span == 128, f"k_major() names WgmmaSwizzle::{kind}, not the 128-byte swizzle")
    rule = dict(
        swizzled=eval("lambda R, r, c: " + c_expr_to_python(swz)),  # noqa: S307 (our own code, as the others)
        step=eval(f"lambda R, s: ({c_expr_to_python(step)}) >> {shift}"),  # noqa: S307
        offset=eval("lambda start, span, sbo, r, k: " + c_expr_to_python(offset.replace("d.", ""))),  # noqa: S307
        xor=eval("lambda o, span: " + c_expr_to_python(xor)),  # noqa: S307
        span=span, lbo=int(lbo), sbo=int(sbo))
    for R in (64, 128):  # Q (kBr rows) and K (kBc rows) at d = 128: every element, both ways
        D = 128
        seen = {rule["swizzled"](R, r, c) for r in range(R) for c in range(D)}
        check(seen == set(range(R * D)), f"swizzled<{R}> is not a permutation of the {R} x {D} tile")
        for s in range(D // 16):
            start = rule["step"](R, s) * 16
            check(start % (8 * span) + 32 <= span, f"k-step {s}'s 32 bytes leave the swizzle's row (wgmma.cpp)")
            for r in range(R):
                for k in range(16):
                    a = rule["xor"](rule["offset"](start, span, rule["sbo"], r, k), span)
                    check(a == 2 * rule["swizzled"](R, r, 16 * s + k),
                          f"R = {R}: wgmma reads element ({r}, {16 * s + k}) at byte {a}, swizzled<R> put it at "
                          f"{2 * rule['swizzled'](R, r, 16 * s + k)}")
    return rule


def fig_swizzle_descriptor(args):
    rule, R = swizzle128_rules(), hopper_constants()["kBr"]
    D, rows = 128, 16
    step_colors = [BLUE, ORANGE, GREEN, "#8172b2"]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(15, 7.6), gridspec_kw={"width_ratios": [1, 1.55]})
    # Left: rows 0-15 of column block 0, where each logical chunk lands.
    for r in range(rows):
        for c in range(8):
            byte = 2 * rule["swizzled"](R, r, 8 * c)
            p = (byte - 128 * r) // 16
            check(byte % 16 == 0 and 0 <= p < 8 and p == c ^ (r % 8), f"row {r}: chunk {c} not at chunk c ^ (r % 8)")
            ax0.add_patch(Rectangle((p, r), 1, 1, facecolor=step_colors[c // 2], edgecolor="white",
                                    alpha=0.45 if c % 2 == 0 else 0.8))
            ax0.text(p + 0.5, r + 0.4, f"c{c}", ha="center", va="center", fontsize=8, fontweight="bold")
            ax0.text(p + 0.5, r + 0.75, f"k {8 * c}-{8 * c + 7}", ha="center", va="center", fontsize=5.5)
    for g in range(rows // 8):
        ax0.add_patch(Rectangle((0, 8 * g), 8, 8, fill=False, edgecolor="black", linewidth=1.6))
        ax0.text(8.25, 8 * g + 4, f"8-row group {g}:\nbytes {1024 * g}-{1024 * g + 1023}" +
                 ("\n\nthe next group:\n+ sbo = 1024 B" if g else ""), va="center", fontsize=8)
    ax0.set_xlim(0, 11)
    ax0.set_ylim(rows, 0)
    ax0.set_aspect("equal")
    ax0.set_xticks([p + 0.5 for p in range(8)], [f"{p}\n+{16 * p}" for p in range(8)], fontsize=7)
    ax0.set_yticks([r + 0.5 for r in range(rows)], [f"{r}  @{128 * r}" for r in range(rows)], fontsize=7)
    ax0.tick_params(length=0)
    ax0.xaxis.set_label_position("top")
    ax0.xaxis.tick_top()
    ax0.set_xlabel("16-byte chunk in the row's 128 bytes, and its byte offset")
    ax0.set_ylabel("row r, and the byte where it starts (r · 128)")
    for side in ("bottom", "right"):
        ax0.spines[side].set_visible(False)
    ax0.spines["top"].set_bounds(0, 8)
    ax0.set_title(f"Column block 0, rows 0-{rows - 1}: logical chunk c (columns k = 8c to 8c + 7) lands at chunk "
                  "c ^ (r % 8);\ncolour: the k-step s = c / 2 that reads it (32 bytes of each row)", fontsize=9, pad=34)
    # Right: the whole tile, logical (r, k), with the k-steps' descriptor starts.
    ax1.set_xlim(-4, D + 30)
    ax1.set_ylim(R + 22, -16)
    ax1.axis("off")
    for s in range(D // 16):
        start = rule["step"](R, s) * 16
        check(start == s // 4 * R * 128 + s % 4 * 32, f"k-step {s} starts where the notes say")
        ax1.add_patch(Rectangle((16 * s, 0), 16, R, facecolor=step_colors[s % 4], alpha=0.45 if s < 4 else 0.25,
                                edgecolor="black", linewidth=0.6))
        ax1.text(16 * s + 8, -1.5, f"s = {s}\n+{start} B", ha="center", va="bottom", fontsize=8)
    for g in range(1, R // 8):
        ax1.plot([0, D], [8 * g, 8 * g], color="black", linewidth=0.5, linestyle="--")
    ax1.plot([64, 64], [-0.5, R + 0.5], color="black", linewidth=2.2)
    ax1.add_patch(Rectangle((0, 0), 64, rows, fill=False, edgecolor=RED, linewidth=2))
    ax1.text(D + 1.5, 8, "8-row groups\n(dashed):\n+ sbo = 1024 B\neach", va="center", fontsize=8)
    ax1.text(D + 1.5, R / 2, f"R = {R} rows\n(Q: kBr;\nK: kBc = 128,\nthe same rule)", va="center", fontsize=8)
    for cb in range(D // 64):
        ax1.text(64 * cb + 32, R + 2.5, f"column block {cb}: k = {64 * cb}-{64 * cb + 63}\nbytes {cb * R * 128}-"
                 f"{(cb + 1) * R * 128 - 1}" + ("  (+ R · 128)" if cb else ""), ha="center", va="top", fontsize=8)
    ax1.text(D / 2 + 10, R + 10, f"k_major(tile) = wgmma_desc(tile, WgmmaSwizzle::b128, lbo = {rule['lbo']}, sbo = "
             f"{rule['sbo']})\nk_major_step<R>(s) = (s / 4 · R · 128 + s % 4 · 32) >> 4, added to the start field "
             "(16-byte units)\nwgmma reads (r, k) of k-step s at start + (r % 8) · 128 + (r / 8) · sbo + 2k,\n"
             "its bits 4-6 (the chunk) then XORed with bits 7-9 (r % 8 here)",
             ha="center", va="top", fontsize=8.5,
             bbox=dict(facecolor="white", edgecolor=GREY, boxstyle="round,pad=0.4"))
    ax1.set_title(f"The whole K-major tile, {R} x {D} (d = 128), by logical column k: k-step s (16 columns) and "
                  "its start address\n(red: the rows enlarged on the left)", fontsize=9)
    fig.suptitle("wgmma's 128-byte swizzle as 09_hopper/smem_tiles.cuh lays out a K-major tile (Q, K): "
                 "swizzled<R>(r, c) = column block c / 64 at c / 64 · R · 64 elements, row r at r · 64,\n"
                 "chunk c % 64 / 8 at that ^ (r % 8). "
                 "Checked here: a permutation, and equal to the address the emulator's wgmma reads from the descriptor "
                 "(wgmma.cpp)\nfor every element of a 64 x 128 and a 128 x 128 tile", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def ring_timeline(stages, tiles, consumers, dur, specialized):
    """The events of step c (specialized False: thread 0 of the one warpgroup refills) or d (a producer
    thread refills), in illustrative time units: per tile j its landing, the stage's refill issue,
    and per consumer its (start, QK end, softmax end, end)."""
    land, issue, comp, empty_done = {}, {}, [], {}
    t_issue = dur["q"]  # the Q copy is issued first (its own barrier)
    for j in range(min(stages, tiles)):  # the prologue: no wait on empty
        issue[j] = t_issue
        land[j] = t_issue + dur["copy"]
        t_issue += dur["issue"]
    q_land = dur["q"] + dur["copy"] / 2
    ends = [q_land] * consumers
    for j in range(tiles):
        row = []
        for c in range(consumers):
            st = max(land[j], ends[c]) + (dur["skew"] * c if j == 0 else 0)  # consumer c later (illustrative)
            qk = st + dur["qk"]
            sm = qk + dur["softmax"]
            en = sm + dur["pv"]
            row.append((st, qk, sm, en))
            ends[c] = en
        comp.append(row)
        empty_done[j] = max(r[3] for r in row)  # every consumer thread has arrived on empty[j % stages]
        if j + stages < tiles:  # the refill of stage j % stages with tile j + stages
            issue[j + stages] = empty_done[j] + dur["wait"] + dur["issue"]
            land[j + stages] = issue[j + stages] + dur["copy"]
            if not specialized:  # thread 0's warp waited and issued before the warpgroup's next wgmma
                ends[0] = max(ends[0], issue[j + stages])
    # thread 0's waits on empty: in step c from its own arrival; in step d from its previous issue
    waits = {j: (empty_done[j - stages] if not specialized else issue[j - 1] + 0.05, issue[j] - dur["issue"])
             for j in range(stages, tiles)}
    return land, issue, comp, empty_done, waits


def fig_pipeline(args):
    k = hopper_constants()
    S, tiles = k["kStages"], 5
    check(S >= 2, "09_hopper/hopper.h: a ring of at least 2 stages")
    ring = (ROOT / "09_hopper/tma_ring.cu").read_text()
    ws = "".join((ROOT / "09_hopper" / f).read_text() for f in ("warp_specialized.cu", "ring.cuh")
                 if (ROOT / "09_hopper" / f).exists())  # step d: its consumers, and the ring they share
    for src, name, rule in ((ring, "tma_ring.cu", r"mbarrier_init\(&empty\[s\], kThreads\)"),
                            (ring, "tma_ring.cu", r"for \(int j = 0; j < kStages && j < tiles; \+\+j\) refill\(j\);"),
                            (ring, "tma_ring.cu", r"if \(threadIdx\.x == 0 && j \+ kStages < tiles\) \{\s*"
                             r"simt::mbarrier_wait_parity\(&empty\[s\], phase\);"),
                            (ws, "warp_specialized.cu", r"mbarrier_init\(&empty\[s\], kConsumers \* kThreads\)"),
                            (ws, "warp_specialized.cu", r"if \(j >= kStages\) simt::mbarrier_wait_parity\(&empty\[s\]"),
                            (ws, "warp_specialized.cu", r"mbarrier_arrive\(&(ring\.)?empty\[s\]\);")):
        check(re.search(rule, src) is not None, f"09_hopper/{name} (or ring.cuh) no longer matches `{rule}`; "
              "tools/figures.py must follow it")
    dur = dict(q=0.2, copy=2.4, issue=0.2, wait=0.3, qk=1.0, pv=1.0, softmax=1.4, skew=0.35)
    steps = [(False, 1, "step c, tma_ring.cu: one warpgroup (128 threads, rows 0-63); thread 0 also refills",
              ["warpgroup (rows 0-63)"], "thread 0 (of warp 0)"),
             (True, k["kConsumers"], f"step d, warp_specialized.cu: a producer warpgroup and {k['kConsumers']} "
              f"consumers ({k['kConsumers'] * k['kBr']} rows of Q); empty[s] counts all "
              f"{k['kConsumers'] * k['kThreads']} consumer threads",
              [f"consumer {c + 1} (rows {c * k['kBr']}-{(c + 1) * k['kBr'] - 1})" for c in range(k["kConsumers"])],
              "producer (its thread 0)")]
    fig, axes = plt.subplots(2, 1, figsize=(14, 9.4), sharex=True, gridspec_kw={"height_ratios": [4, 5]})
    tile_colors = ["#c6d7ee", "#f6d3bd", "#cde8d3", "#ddd5ea", "#eeeeee"]
    for ax, (spec, consumers, title, names, issuer) in zip(axes, steps):
        land, issue, comp, empty_done, waits = ring_timeline(S, tiles, consumers, dur, spec)
        labels = [f"stage {s}" for s in range(S)] + [issuer] + names
        y = {name: i for i, name in enumerate(labels)}
        ax.plot([0], [y[issuer]], marker="v", color=RED, markersize=7)
        ax.text(-0.1, y[issuer] - 0.22, "Q, " + ", ".join(f"{j}→{j}" for j in range(min(S, tiles))),
                va="bottom", fontsize=7, color=RED)
        for j in range(tiles):
            s = j % S
            check(all(c[0] >= land[j] for c in comp[j]), f"tile {j} read before it landed")
            if j >= S:
                check(issue[j] >= empty_done[j - S], f"stage {s} refilled before every consumer arrived on empty")
            ax.barh(y[f"stage {s}"], land[j] - issue[j], left=issue[j], height=0.7, color="white",
                    edgecolor=GREY, hatch="///")
            ax.text((issue[j] + land[j]) / 2, y[f"stage {s}"], f"TMA: K, V {j}", ha="center", va="center",
                    fontsize=7.5, bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
            ax.barh(y[f"stage {s}"], empty_done[j] - land[j], left=land[j], height=0.7,
                    color=tile_colors[j % len(tile_colors)], edgecolor="black", linewidth=0.6)
            ax.text((land[j] + empty_done[j]) / 2, y[f"stage {s}"], f"tile {j}: full[{s}] → empty[{s}]",
                    ha="center", va="center", fontsize=7.5)
            ax.plot([issue[j]], [y[issuer]], marker="v", color=RED, markersize=7)
            if j >= S:
                ax.text(issue[j], y[issuer] - 0.22, f"{j}→{s}", ha="center", va="bottom", fontsize=7, color=RED)
            if j >= S:
                ax.barh(y[issuer], waits[j][1] - waits[j][0], left=waits[j][0], height=0.3, color=RED, alpha=0.6)
            for c, (st, qk, sm, en) in enumerate(comp[j]):
                yc = y[names[c]]
                for a, b, text, color in ((st, qk, f"QKᵀ {j}", BLUE), (qk, sm, "softmax", ORANGE),
                                          (sm, en, "PV", GREEN)):
                    ax.barh(yc, b - a, left=a, height=0.6, color=color, alpha=0.75, edgecolor="black", linewidth=0.5)
                    ax.text((a + b) / 2, yc, text, ha="center", va="center", fontsize=7.5)
                ax.plot([en], [yc - 0.36], marker="v", color="black", markersize=5)
        if spec:
            check(all(issue[j] < min(c[3] for c in comp[0]) for j in range(S)),
                  "step d: the first kStages tiles are issued without a wait on empty")
            ax.text(0.05, y[issuer] + 0.33, "setmaxnreg.dec: 24 registers; the other 127 threads have returned",
                    fontsize=7, color=GREY, va="center")
        else:
            ax.text(0.05, y[issuer] + 0.33, "thread 0 computes too: its refill waits for its own warpgroup",
                    fontsize=7, color=GREY, va="center")
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_ylim(len(labels) - 0.4, -0.7)
        ax.set_title(title, fontsize=9.5)
    axes[-1].set_xlabel("time (schematic: the order of events is the code's, the durations are illustrative)")
    axes[-1].set_xticks([])
    handles = [Rectangle((0, 0), 1, 1, facecolor="white", edgecolor=GREY, hatch="///"),
               Rectangle((0, 0), 1, 1, facecolor=tile_colors[0], edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=RED, alpha=0.6)]
    handles += [Rectangle((0, 0), 1, 1, facecolor=c, alpha=0.75, edgecolor="black") for c in (BLUE, ORANGE, GREEN)]
    handles += [plt.Line2D([], [], marker="v", color=RED, linestyle="none"),
                plt.Line2D([], [], marker="v", color="black", linestyle="none", markersize=5)]
    fig.legend(handles, ["copy in flight (expect_tx on full[s])", "stage holds the tile: from full[s] to the last "
                         "arrival on empty[s]", "wait on empty[s] (the refill's)", "QKᵀ: 8 wgmma_ss + wait",
                         "softmax (ch05's, on S's registers)", "PV: 8 wgmma_rs + wait",
                         "issue tile j into stage s (j→s)", "arrive on empty[s] (every thread)"],
               loc="lower center", ncol=4, frameon=False, fontsize=8)
    fig.suptitle(f"SCHEMATIC, NOT MEASURED: durations illustrative. The ring of kStages = {S} stages "
                 f"(09_hopper/hopper.h), {tiles} K/V tiles: tile j in stage j % {S}, refilled with tile j + {S} once "
                 f"empty[s] completes.\nConsumer 2 is drawn starting a little later than consumer 1, to show empty[s] "
                 "waiting for the later arrival. Not modelled: the tensor cores the consumers share",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.98))
    return fig


def ptxas_registers():
    """results/static-sm90a/09_hopper_ptxas.txt: {(kernel, dtype, d): registers per thread} (ptxas -v)."""
    regs = {}
    for line in (ROOT / "results/static-sm90a/09_hopper_ptxas.txt").read_text().splitlines():
        m = re.match(r"\S+\.cu\s+(\w+)\s+(fp16|bf16)\s+(\d+)\s+(\d+)\s", line)
        if m:
            regs[(m.group(1), m.group(2), int(m.group(3)))] = int(m.group(4))
    for kernel in ("tma_ring", "warp_specialized"):
        check((kernel, "fp16", 128) in regs, f"results/static-sm90a/09_hopper_ptxas.txt: no row for {kernel} fp16 "
              "d = 128; tools/figures.py must follow its table")
    return regs


def fig_registers(args):
    k, regs, pool = hopper_constants(), ptxas_registers(), 65536
    thr, cons = k["kThreads"], k["kConsumers"]
    check(k["kWsThreads"] == thr * (1 + cons), "kWsThreads is a producer and kConsumers consumer warpgroups")
    ring, ws = regs[("tma_ring", "fp16", 128)], regs[("warp_specialized", "fp16", 128)]
    check(regs[("tma_ring", "bf16", 128)] == ring and regs[("warp_specialized", "bf16", 128)] == ws,
          "ptxas gives fp16 and bf16 the same registers at d = 128")
    at_launch = k["kWsThreads"] * ws
    check(at_launch <= pool < 2 * at_launch, f"step d's launch ({k['kWsThreads']} x {ws}): one block per SM")
    after = thr * k["kProducerRegs"] + cons * thr * k["kConsumerRegs"]
    check(after <= pool, f"step d's budget after setmaxnreg, {after}, exceeds the SM's {pool} registers")
    smem, per_sm = k["ring_smem_bytes"](128) + 1024 + 1024, 228 * 1024  # + kAlign + 1 KiB reserved per block
    check(2 * smem > per_sm, "step c at d = 128: one block per SM (shared memory)")
    bars = [  # label, [(text, threads, registers per thread, color)]
        ("step c, tma_ring\nd = 128, 1 block per SM", [(f"1 warpgroup: {thr} x {ring}", thr, ring, BLUE)]),
        ("step d, warp_specialized\nat launch (d = 128)",
         [(f"{'producer' if g == 0 else f'consumer {g}'}: {thr} x {ws}", thr, ws, GREY if g == 0 else GREEN)
          for g in range(1 + cons)]),
        (f"step d after setmaxnreg\n(dec {k['kProducerRegs']}, inc {k['kConsumerRegs']})",
         [(f"producer:\n{thr} x {k['kProducerRegs']}", thr, k["kProducerRegs"], GREY)] +
         [(f"consumer {c + 1}: {thr} x {k['kConsumerRegs']}", thr, k["kConsumerRegs"], GREEN) for c in range(cons)]),
    ]
    fig, ax = plt.subplots(figsize=(13, 4.8))
    for yb, (label, parts) in enumerate(bars):
        x = 0
        for text, n, r, color in parts:
            ax.barh(yb, n * r, left=x, height=0.6, color=color, alpha=0.7, edgecolor="black", linewidth=0.8)
            if n * r >= 8000:
                ax.text(x + n * r / 2, yb, f"{text}\n= {n * r}", ha="center", va="center", fontsize=8)
            else:  # too narrow: below the bar
                ax.text(x, yb + 0.34, f"{text} = {n * r}".replace("\n", " "), va="top", fontsize=8)
            x += n * r
        ax.text(x + 600, yb, f"{x} of {pool}\n({x / pool:.1%})", va="center", fontsize=8)
        if yb == 0:
            ax.text((x + pool) / 2, yb, f"unused: two blocks would need {2 * smem // 1024} KiB of shared memory\n"
                    f"(ring_smem_bytes(128), kAlign and 1 KiB reserved, twice); an SM has {per_sm // 1024}",
                    ha="center", va="center", fontsize=8, color=GREY)
    check(sum(n * r for _, n, r, _ in bars[2][1]) == after, "the bar adds up to the budget")
    ax.axvline(pool, color=RED, linewidth=1.4)
    ax.text(pool, -0.55, f"the SM's {pool} registers", color=RED, ha="right", va="center", fontsize=8)
    moved = cons * thr * (k["kConsumerRegs"] - ws)
    ax.text(thr * ws * 1.1, 2.36, f"setmaxnreg moves {thr} x ({ws} − {k['kProducerRegs']}) = "
            f"{thr * (ws - k['kProducerRegs'])} registers from the producer to the consumers\n"
            f"({cons} x {thr} x ({k['kConsumerRegs']} − {ws}) = {moved}); .inc waits until the SM has them free",
            fontsize=8, va="top")
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=8.5)
    ax.set_ylim(len(bars) + 0.05, -0.9)
    ax.set_xlim(0, pool * 1.16)
    ax.set_xlabel("registers of one SM (32-bit), per resident block")
    ax.set_title("The register budget by role, d = 128: per-thread counts are ptxas's "
                 "(results/static-sm90a/09_hopper_ptxas.txt) and hopper.h's kProducerRegs, kConsumerRegs\n"
                 "(a compiler report and the code's constants, not a measurement); each bar one block, the SM's "
                 "only one", fontsize=10)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# Chapter 09, steps d to f: who issues what when on the shared tensor cores
# --------------------------------------------------------------------------------------------

PP_CALL = re.compile(r"\b(take|pass|start|wait_tile|attend_tile|issue_s|issue_pv|softmax_s|rescale_o|pack_p|"
                     r"mbarrier_arrive|store_rows)\s*(?:<[^<>()]*>)?\s*\(|\bwgmma_wait<(\d+)>\s*\(")


def uncommented(path):
    """09_hopper/<path> without its // comments (which may hold braces: `P_{j-1}`)."""
    return re.sub(r"//[^\n]*", "", (ROOT / "09_hopper" / path).read_text())


def consumer_calls(text):
    """The calls of C++ text that 09_ping_pong.svg models, in source order: wgmma_wait<N> as "wait<N>", the
    others by name (turn.take() is "take", PingPong::start(c) is "start")."""
    return [m.group(1) or f"wait<{m.group(2)}>" for m in PP_CALL.finditer(text)]


def matching(text, at):
    """The index of the bracket that closes the one at text[at]."""
    pair = {"{": "}", "(": ")"}[text[at]]
    depth = 0
    for i in range(at, len(text)):
        depth += (text[i] == text[at]) - (text[i] == pair)
        if depth == 0:
            return i
    raise CheckFailed(f"unbalanced {text[at]} in 09_hopper")


def consumer_code(path):
    """A consumer's code in 09_hopper/<path>, from the role split (split_roles) to its store_rows, split around its one loop
    over the K/V tiles: (calls before it, the loop's first j, calls in it, calls after it, the whole text)."""
    src = uncommented(path)
    a = src.find("split_roles(")
    check(a >= 0, f"09_hopper/{path}: no split_roles(; tools/figures.py must follow the consumers")
    m = re.compile(r"for \(int j = (\d+); j < tiles; \+\+j\) \{").search(src, a)
    check(m is not None, f"09_hopper/{path}: no `for (int j = ...; j < tiles; ++j) {{` after split_roles")
    close = matching(src, m.end() - 1)
    b = src.find(";", src.find("store_rows", close)) + 1
    check(b > close, f"09_hopper/{path}: no store_rows after the loop")
    return (consumer_calls(src[a:m.start()]), int(m.group(1)), consumer_calls(src[m.end():close]),
            consumer_calls(src[close:b]), src[a:b])


def ping_pong_rules():
    """The order of steps d, e and f's consumers, read from the code and checked against the order that
    09_ping_pong.svg simulates (line numbers as of writing), and PingPong's rules (ring.cuh)."""
    k = hopper_constants()
    # hopper.h:36 `kConsumers = 2`; ring.cuh:73 static_asserts it for the turns
    check(k["kConsumers"] == 2, f"09_hopper/hopper.h: kConsumers = {k['kConsumers']}; the figure draws two consumers")
    tile = uncommented("tile.cuh")
    m = re.search(r"template <class T, int D, class Turn = NoTurn>\s*__device__ __forceinline__ void attend_tile\(",
                  tile)
    check(m is not None, "09_hopper/tile.cuh: attend_tile<T, D, Turn = NoTurn> not found")
    body_at = tile.index("{", matching(tile, m.end() - 1))
    attend = consumer_calls(tile[body_at:matching(tile, body_at)])
    # tile.cuh:64-74 (attend_tile): take; issue_s; pass; wgmma_wait<0>(S); softmax_s; rescale_o; pack_p;
    # issue_pv; wgmma_wait<0>(O)
    want = ["take", "issue_s", "pass", "wait<0>", "softmax_s", "rescale_o", "pack_p", "issue_pv", "wait<0>"]
    check(attend == want, f"09_hopper/tile.cuh: attend_tile calls {attend}, the figure simulates {want}")
    # tile.cuh:15-17: NoTurn's take and pass do nothing (step d)
    check(re.search(r"struct NoTurn \{\s*__device__ __forceinline__ void take\(\) const \{\}\s*"
                    r"__device__ __forceinline__ void pass\(\) const \{\}", tile) is not None,
          "09_hopper/tile.cuh: NoTurn's take() and pass() are no longer empty")
    # the chains: tile.cuh:26 D / 16 wgmma_ss for S; tile.cuh:51 kBc / 16 wgmma_rs for P V (one group each)
    n_s = re.search(r"void issue_s\(.*?for \(int s = 0; s < D / (\d+); \+\+s\)\s*simt::wgmma_ss<", tile, re.S)
    n_pv = re.search(r"void issue_pv\(.*?for \(int kk = 0; kk < kBc / (\d+); \+\+kk\) simt::wgmma_rs<", tile, re.S)
    check(n_s is not None and n_pv is not None, "09_hopper/tile.cuh: issue_s / issue_pv's loops not found")
    d = 128  # the figure's head dim
    n_instr = {"S": d // int(n_s.group(1)), "PV": k["kBc"] // int(n_pv.group(1))}

    loop = ["wait_tile", "attend_tile", "mbarrier_arrive"]
    steps = {  # (calls before the loop, first j, in the loop, after it) that the figure simulates
        # warp_specialized.cu:48-53: for j: wait_tile; attend_tile (NoTurn); arrive on empty; then store_rows
        "d": ([], 0, loop, ["store_rows"]),
        # ping_pong.cu:47-56: PingPong::start(c); for j: wait_tile; attend_tile with PingPong; arrive; store_rows
        "e": (["start"], 0, loop, ["store_rows"]),
        # intra_overlap.cu:46-59: start; tile 0's wait_tile, take, issue_s, pass, wgmma_wait<0>, softmax_s, pack_p;
        # :61-74: for j >= 1: wait_tile; take; issue_s (S_j); issue_pv (P_{j-1} V_{j-1}); pass; wgmma_wait<1>;
        #          softmax_s (tile j); wgmma_wait<0>; arrive on empty (tile j - 1); rescale_o; pack_p;
        # :76-79: issue_pv (the last tile); wgmma_wait<0>; arrive on empty; store_rows
        "f": (["start", "wait_tile", "take", "issue_s", "pass", "wait<0>", "softmax_s", "pack_p"], 1,
              ["wait_tile", "take", "issue_s", "issue_pv", "pass", "wait<1>", "softmax_s", "wait<0>",
               "mbarrier_arrive", "rescale_o", "pack_p"], ["issue_pv", "wait<0>", "mbarrier_arrive", "store_rows"]),
    }
    files = {"d": "warp_specialized.cu", "e": "ping_pong.cu", "f": "intra_overlap.cu"}
    texts = {}
    for step, path in files.items():
        before, j0, body, after, texts[step] = consumer_code(path)
        got = (before, j0, body, after)
        check(got == steps[step], f"09_hopper/{path}: the consumer calls {got}, the figure simulates {steps[step]}")
    rules = [  # (step, rule): the arguments that say which tile and which turn each call is for
        ("d", r"attend_tile<T, D>\([^;]*, scale_log2\);"),                 # warp_specialized.cu:50: NoTurn
        ("e", r"const PingPong turn\(c, j, tiles\);\s*attend_tile<T, D>\([^;]*, scale_log2, turn\);"),  # :52-53
        ("f", r"int s = ring\.wait_tile\(0\);\s*const PingPong first\(c, 0, tiles\);"),  # intra_overlap.cu:52-53
        ("f", r"const int prev = s;\s*s = ring\.wait_tile\(j\);\s*const PingPong turn\(c, j, tiles\);"),  # :62-64
        ("f", r"issue_pv<T, D>\(O, pa, ring\.v_desc\(prev\)\);"),          # :67: P_{j-1} V_{j-1}
        ("f", r"mbarrier_arrive\(&ring\.empty\[prev\]\);"),                # :72: tile j - 1's stage
        ("f", r"\}\s*issue_pv<T, D>\(O, pa, ring\.v_desc\(s\)\);"),         # :76: the last tile's P V
    ]
    for step, rule in rules:
        check(re.search(rule, texts[step]) is not None,
              f"09_hopper/{files[step]} no longer matches `{rule}`; tools/figures.py must follow it")
    ring = uncommented("ring.cuh")
    # ring.cuh:72: mine = kTurn + c, other = kTurn + (1 - c), pass_on(c == 0 || j + 1 < tiles)
    m = re.search(r"PingPong\(int c, int j, int tiles\)\s*:\s*mine\(kTurn \+ static_cast<unsigned>\(c\)\), "
                  r"other\(kTurn \+ static_cast<unsigned>\(1 - c\)\), pass_on\(([^(){};]*)\)", ring)
    check(m is not None, "09_hopper/ring.cuh: PingPong's constructor no longer reads as expected")
    expr = m.group(1).replace("||", " or ").replace("&&", " and ")
    check(re.fullmatch(r"[\w\s+\-*<>=]+", expr) is not None, f"ring.cuh: unexpected pass_on({m.group(1)})")
    pass_on = eval("lambda c, j, tiles: " + expr)  # noqa: S307 (our own header)
    # ring.cuh:75-80: start: consumer 1 arrives on kTurn (consumer 0's barrier); take: bar.sync on mine;
    # pass: if pass_on, bar.arrive on other
    m = re.search(r"static void start\(int c\) \{\s*if \(c == (\d)\) "
                  r"simt::named_barrier_arrive\(kTurn(?: \+ (\d))?,", ring)
    check(m is not None, "09_hopper/ring.cuh: PingPong::start no longer reads as expected")
    starter, first = int(m.group(1)), int(m.group(2) or 0)
    check(first == 1 - starter, "ring.cuh: PingPong::start gives the first turn to the consumer that does not arrive")
    for rule in (r"void take\(\) const \{ simt::named_barrier_sync\(mine, kConsumers \* kThreads\); \}",
                 r"void pass\(\) const \{\s*if \(pass_on\) "
                 r"simt::named_barrier_arrive\(other, kConsumers \* kThreads\);"):
        check(re.search(rule, ring) is not None, f"09_hopper/ring.cuh no longer matches `{rule}`")
    return dict(steps=steps, attend=want, n_instr=n_instr, pass_on=pass_on, starter=starter, d=d)


def consumer_program(rules, step, c, tiles):
    """Consumer c's operations in step d, e or f, one per modelled call, each (what, tile, argument): the calls
    of ping_pong_rules, the loop unrolled, attend_tile expanded, NoTurn's take and pass dropped (step d), a pass
    dropped where pass_on is false, K/V tiles taken as landed (wait_tile: the producer is not modelled)."""
    before, j0, body, after = rules["steps"][step]
    # the tile each call is for: in step f's loop issue_pv and the arrive are tile j - 1's (prev)
    seq = [(call, 0) for call in before] + [(call, j - 1 if step == "f" and call in ("issue_pv", "mbarrier_arrive")
                                             else j) for j in range(j0, tiles) for call in body]
    seq += [(call, tiles - 1) for call in after]
    ops = []
    for call, j in seq:
        for call in rules["attend"] if call == "attend_tile" else [call]:
            if call in ("take", "pass") and step == "d" or call == "wait_tile":
                continue
            if call == "pass" and not rules["pass_on"](c, j, tiles):
                continue
            if call == "start" and c != rules["starter"]:
                continue
            what = {"issue_s": "S", "issue_pv": "PV", "softmax_s": "softmax", "rescale_o": "rescale",
                    "pack_p": "pack", "mbarrier_arrive": "empty", "store_rows": "end"}.get(call, call)
            if what.startswith("wait<"):
                ops.append(("wait", j, int(what[5:-1])))
            else:
                ops.append((what, j, None))
    return ops


def ping_pong_sim(programs, dur, n_instr, issue):
    """Runs the consumers' programs against one tensor-core queue. Issuing a chain issues its n_instr[kind]
    wgmma one per `issue` time units (two consumers issuing at once interleave them); the tensor cores
    execute wgmma one at a time in the order they were issued, each dur[kind] / n_instr[kind]. wait<N> blocks
    until at most N of the consumer's own groups are unfinished; softmax, rescale and pack take dur[...] on the
    consumer; take blocks until the other consumer has arrived on this one's turn barrier (pass, start).
    Returns each consumer's end, the executed wgmma, the groups and each consumer's log."""
    n = len(programs)
    t, pc, sub, blocked = [0.0] * n, [0] * n, [0] * n, [False] * n
    tc_free, tc, groups = 0.0, [], {}
    arrived = [[] for _ in range(n)]  # arrivals on consumer c's turn barrier not yet taken
    log = [[] for _ in range(n)]      # (what, tile, start, end, argument)
    while True:
        ready = [c for c in range(n) if pc[c] < len(programs[c]) and not blocked[c]]
        if not ready:
            check(all(pc[c] == len(programs[c]) for c in range(n)),
                  "the turns deadlock: a consumer waits on its barrier for an arrival that never comes")
            check(not any(arrived), "a bar.arrive that no bar.sync completes: a turn passed after the last chain")
            break
        c = min(ready, key=lambda c: (t[c], c))  # the earliest consumer next (ties: consumer 0)
        what, j, arg = programs[c][pc[c]]
        if what in ("S", "PV"):
            g = groups.setdefault((c, what, j), dict(issued=t[c], instr=[]))
            start = max(t[c], tc_free)
            tc_free = start + dur[what] / n_instr[what]
            g["instr"].append((start, tc_free))
            tc.append(((c, what, j), t[c], start, tc_free))
            t[c] += issue
            sub[c] += 1
            if sub[c] < n_instr[what]:
                continue  # the rest of the chain: the other consumer may issue in between
            sub[c], g["end"] = 0, tc_free
            log[c].append((what, j, g["issued"], t[c], None))
        elif what == "wait":
            ends = sorted(g["end"] for (cc, _, _), g in groups.items() if cc == c and g["end"] > t[c])
            t0 = t[c]
            if len(ends) > arg:
                t[c] = ends[len(ends) - arg - 1]
            log[c].append((what, j, t0, t[c], arg))
        elif what in ("softmax", "rescale", "pack"):
            log[c].append((what, j, t[c], t[c] + dur[what], None))
            t[c] += dur[what]
        elif what == "take":
            if not arrived[c]:
                blocked[c] = True  # bar.sync: until the other consumer arrives
                continue
            t0 = t[c]
            t[c] = max(t0, arrived[c].pop(0))
            log[c].append((what, j, t0, t[c], None))
        elif what in ("pass", "start"):
            o = 1 - c
            check(not arrived[o], "a second bar.arrive before the barrier completed (the emulator's error)")
            arrived[o].append(t[c])
            blocked[o] = False
            log[c].append((what, j, t[c], t[c], o))
        else:  # empty, end: markers
            log[c].append((what, j, t[c], t[c], None))
        pc[c] += 1
    return t, tc, groups, log


def check_ping_pong(step, programs, tc, groups, log):
    """What the simulated timeline must show: each consumer's work in its code's order, the queue's rules, and
    per step: e's S chains alternating, f's softmax of tile j under its own P V of tile j - 1."""
    where = f"09_ping_pong step {step}"
    for i in range(len(tc) - 1):  # one wgmma at a time, in issue order
        check(tc[i][1] <= tc[i + 1][1] and tc[i][3] <= tc[i + 1][2], f"{where}: the queue is not FIFO, one at a time")
    check(all(issued <= start for _, issued, start, _ in tc), f"{where}: a wgmma ran before it was issued")
    for c, prog in enumerate(programs):
        check([(w, j) for w, j, *_ in log[c]] == [(w, j) for w, j, _ in prog],
              f"{where}: consumer {c} did not follow its code's order")
        check(all(a[3] <= b[2] for a, b in zip(log[c], log[c][1:])), f"{where}: consumer {c} did two things at once")
        done = {(w, j): e for w, j, s, e, _ in log[c]}
        for w, j, s, e, arg in log[c]:
            if w == "wait":  # wgmma_wait<N>: at most N of its groups unfinished when it returns
                left = [g for (cc, _, _), g in groups.items() if cc == c and g["issued"] < e and g["end"] > e]
                check(len(left) <= arg, f"{where}: consumer {c} passed wait<{arg}> with {len(left)} groups running")
            if w == "softmax":
                check(s >= groups[(c, "S", j)]["end"], f"{where}: consumer {c}'s softmax of tile {j} before its S")
            if w == "PV":
                check(s >= done[("pack", j)], f"{where}: consumer {c}'s P V {j} issued before P {j} was packed")
            if w == "empty":
                check(s >= groups[(c, "PV", j)]["end"], f"{where}: consumer {c} freed tile {j} before its P V")
    s_chains = sorted((g["instr"][0][0], g["instr"][-1][1], c) for (c, w, _), g in groups.items() if w == "S")
    if step in "ef":  # the turn: S chains alternate c0, c1, c0, ... and never interleave
        check([c for _, _, c in s_chains] == [i % 2 for i in range(len(s_chains))],
              f"{where}: the S chains do not alternate between the consumers: {[c for *_, c in s_chains]}")
        check(all(a[1] <= b[0] for a, b in zip(s_chains, s_chains[1:])), f"{where}: two S chains interleave")
    if step == "f":
        for c in range(len(programs)):
            for w, j, s, e, _ in log[c]:
                if w == "softmax" and j >= 1:
                    pv = groups[(c, "PV", j - 1)]
                    check(min(e, pv["end"]) - max(s, pv["instr"][0][0]) > 0,
                          f"{where}: consumer {c}'s softmax of tile {j} does not overlap its P V of tile {j - 1}")


def fig_ping_pong(args):
    rules = ping_pong_rules()
    tiles, n_instr, issue = 4, rules["n_instr"], 1 / 64
    check(n_instr["S"] == n_instr["PV"] == 8, f"d = 128, kBc = 128: 8 wgmma per chain, not {n_instr}")
    # S (64 x 128 x 128) and P V (64 x 128 x 128) are the same work at d = 128: one unit each. Powers of two
    # keep the times exact (no float ties broken by rounding).
    dur = dict(S=1.0, PV=1.0, softmax=1.25, rescale=0.125, pack=0.125)
    PURPLE = "#8172b2"
    steps = [("d", "step d, warp_specialized.cu: attend_tile with NoTurn, the consumers uncoordinated "
                   "(both issue their first S chain at once: the tensor cores interleave the two)"),
             ("e", "step e, ping_pong.cu: S chains in turns (PingPong, ring.cuh: bar.sync on kTurn + c before "
                   "issue_s, bar.arrive on the other's after it; consumer 1 gives consumer 0 the first turn)"),
             ("f", "step f, intra_overlap.cu: in its turn S of tile j, then P V of tile j − 1; wgmma_wait<1>, the "
                   "softmax of tile j while that P V runs; wgmma_wait<0>, rescale_o, pack_p")]
    results = {}
    for step, _ in steps:
        programs = [consumer_program(rules, step, c, tiles) for c in range(2)]
        ends, tc, groups, log = ping_pong_sim(programs, dur, n_instr, issue)
        check_ping_pong(step, programs, tc, groups, log)
        total = max(ends)
        busy = sum(e - s for *_, s, e in tc) / total
        results[step] = (total, busy, tc, groups, log)
    check(results["f"][0] < results["e"][0] < results["d"][0],
          "09_ping_pong: with these durations each step should finish before the one it improves on")

    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    name = lambda w, j: (f"S{j}" if w == "S" else f"PV{j}").translate(sub)  # noqa: E731
    span = max(r[0] for r in results.values())
    fig, axes = plt.subplots(3, 1, figsize=(14, 10.2), sharex=True)
    rows = ["consumer 0", "consumer 1", "tensor cores"]
    for ax, (step, title) in zip(axes, steps):
        total, busy, tc, groups, log = results[step]
        for c in range(2):
            y = c
            issued = []  # consecutive issues share one label
            for w, j, s, e, arg in log[c]:
                if w in ("S", "PV"):
                    ax.barh(y, e - s, left=s, height=0.7, color=BLUE if w == "S" else GREEN, edgecolor="black",
                            linewidth=0.4)
                    if issued and s - issued[-1][1] < 1e-9:
                        issued[-1] = (issued[-1][0], e, issued[-1][2] + " + " + name(w, j))
                    else:
                        issued.append((s, e, name(w, j)))
                elif w in ("softmax", "rescale", "pack"):
                    ax.barh(y, e - s, left=s, height=0.7, color=ORANGE if w == "softmax" else PURPLE,
                            alpha=0.8, edgecolor="black", linewidth=0.5)
                    if w == "softmax":
                        ax.text((s + e) / 2, y, f"softmax {j}", ha="center", va="center", fontsize=7.5)
                elif w in ("wait", "take") and e > s:
                    ax.barh(y, e - s, left=s, height=0.22, color=LIGHT if w == "wait" else RED,
                            alpha=1.0 if w == "wait" else 0.6, edgecolor=GREY, linewidth=0.5)
                    if e - s >= 0.75:
                        ax.text((s + e) / 2, y + 0.2, f"wait<{arg}>" if w == "wait" else "turn", ha="center",
                                va="top", fontsize=6.5, color="black" if w == "wait" else RED)
                elif w in ("pass", "start"):
                    ax.add_patch(FancyArrowPatch((s, y + (0.36 if arg > c else -0.36)),
                                                 (s, arg + (-0.36 if arg > c else 0.36)), arrowstyle="-|>",
                                                 mutation_scale=8, color=RED, linewidth=1.1))
                elif w == "empty":
                    ax.plot([s], [y + 0.3], marker="^", color="black", markersize=4.5)
                elif w == "end":
                    ax.plot([s, s], [y - 0.42, y + 0.42], color="black", linewidth=1.6)
            for s, e, text in issued:
                ax.text(s, y - 0.37, text, ha="left", va="bottom", fontsize=6.5,
                        color="black", bbox=dict(facecolor="white", edgecolor="none", pad=0.2, alpha=0.8))
        # the tensor cores: a box per group, the wgmma of interleaved groups as slivers
        segs = []
        for key, _, s, e in tc:
            if segs and segs[-1][0] == key and abs(segs[-1][2] - s) < 1e-9:
                segs[-1][2] = e
            else:
                segs.append([key, s, e])
        count = {}
        for key, *_ in segs:
            count[key] = count.get(key, 0) + 1
        clusters = []  # interleaved groups: [start, end, names]
        for (c, w, j), s, e in segs:
            ax.barh(2, e - s, left=s, height=0.7, color=BLUE if w == "S" else GREEN, alpha=0.85 if c == 0 else 0.4,
                    hatch=None if c == 0 else "///", edgecolor="black",
                    linewidth=0.5 if count[(c, w, j)] == 1 else 0.15)
            if count[(c, w, j)] == 1:
                ax.text((s + e) / 2, 2, f"{name(w, j)} (c{c})", ha="center", va="center", fontsize=7.5)
                continue
            text = f"{name(w, j)} (c{c})"
            if clusters and s <= clusters[-1][1] + 1e-9:
                clusters[-1][1] = max(clusters[-1][1], e)
                if text not in clusters[-1][2]:
                    clusters[-1][2].append(text)
            else:
                clusters.append([s, e, [text]])
        for s, e, texts in clusters:
            ax.text((s + e) / 2, 2, " ∥ ".join(texts) + "\ninterleaved", ha="center", va="center", fontsize=7,
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.85))
        ax.axvline(total, color=GREY, linestyle="--", linewidth=0.8)
        ax.text(total + 0.08, 2.45, f"{total:g}", color=GREY, fontsize=7.5, va="center")
        ax.set_yticks(range(3), rows, fontsize=8.5)
        ax.set_ylim(2.55, -0.75)
        ax.set_xlim(-0.2, span + 0.8)
        ax.set_title(f"{title}\n{tiles} K/V tiles in {total:g} units: tensor cores busy {busy:.0%} of the time "
                     "(of this simulation, schematic)", fontsize=9)
        ax.grid(axis="x", color=LIGHT, linewidth=0.6)
        ax.set_axisbelow(True)
    axes[-1].set_xlabel("time (illustrative units: the order of events is the code's, the durations are chosen)")
    axes[-1].set_xticks(range(0, int(span) + 1))
    handles = [Rectangle((0, 0), 1, 1, facecolor=BLUE, alpha=0.85, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=BLUE, alpha=0.4, hatch="///", edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=GREEN, alpha=0.85, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=ORANGE, alpha=0.8, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=PURPLE, alpha=0.8, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=LIGHT, edgecolor=GREY),
               Rectangle((0, 0), 1, 1, facecolor=RED, alpha=0.6, edgecolor=GREY),
               plt.Line2D([], [], marker=r"$\downarrow$", color=RED, linestyle="none", markersize=9),
               plt.Line2D([], [], marker="^", color="black", linestyle="none", markersize=4.5),
               plt.Line2D([], [], marker="|", color="black", linestyle="none", markersize=9, markeredgewidth=1.6)]
    fig.legend(handles, ["S chain Q Kᵀ (c0; on a consumer's row: issuing it)", "the same, consumer 1's (c1)",
                         "P V chain (c1's hatched)", "softmax_s (scale, mask, m, l, P)", "rescale_o, pack_p",
                         "wgmma_wait<N>: until at most N of its groups run", "bar.sync: waiting for its turn",
                         "bar.arrive: the turn to the other consumer", "arrive on empty (the tile's stage)",
                         "store_rows"],
               loc="lower center", ncol=5, frameon=False, fontsize=8)
    fig.suptitle("SCHEMATIC, NOT MEASURED: durations illustrative. Steps d, e, f of chapter 09 as a small event "
                 f"simulation of the code's order (tools/figures.py), kConsumers = 2 (hopper.h), {tiles} K/V tiles "
                 "taken as landed (producer not drawn).\n"
                 f"S chain = P V chain = 1 unit ({n_instr['S']} wgmma each at d = {rules['d']}, issued 1/64 unit "
                 "apart, executed one at a time in issue order), softmax_s = "
                 f"{dur['softmax']:g}, rescale_o = pack_p = {dur['rescale']:g}.\nStep d loses its time where both "
                 "consumers issue at once; not modelled: what could keep them in step on a GPU (the same full[s] "
                 "releasing both, two softmaxes sharing the SM's ALUs)", fontsize=10)
    fig.tight_layout(rect=(0, 0.055, 1, 0.96))
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
    "09_wgmma_layout": fig_wgmma_layout,
    "09_swizzle_descriptor": fig_swizzle_descriptor,
    "09_pipeline": fig_pipeline,
    "09_registers": fig_registers,
    "09_ping_pong": fig_ping_pong,
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
