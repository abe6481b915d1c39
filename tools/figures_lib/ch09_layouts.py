"""Chapter 09: wgmma's accumulator over a warpgroup (simt/fragments.h, simt/wgmma.cuh) and the 128-byte
swizzle of a K-major tile (09_hopper/smem_tiles.cuh, checked against the emulator's wgmma)."""
import re

from .rules import c_expr_to_python, fragment_layout, hopper_constants
from .style import BLUE, GREEN, GREY, ORANGE, RED, ROOT, Rectangle, check, plt


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
