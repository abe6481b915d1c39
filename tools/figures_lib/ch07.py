"""Chapter 07: the backward's two loop orders (07_backward/backward.h's tiles, chapter 06's rules)."""
import re

import causal_schedule  # tools/causal_schedule.py: chapter 06's tile rules

from .style import BLUE, ORANGE, RED, ROOT, FancyArrowPatch, Rectangle, check, plt


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
