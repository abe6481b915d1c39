"""Chapter 05: mma.m16n8k16's fragments (simt/fragments.h) and the shared-memory banks of
ldmatrix's rows, plain, padded and swizzled (05_flash_v2/pipeline.cuh)."""
import re

from .rules import c_expr_to_python, fragment_layout
from .style import ROOT, Rectangle, check, plt


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
