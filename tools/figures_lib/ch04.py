"""Chapters 04 and 05: FlashAttention-1's loop order against FlashAttention-2's."""
from .style import BLUE, GREEN, LIGHT, ORANGE, RED, FancyArrowPatch, box, plt


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
