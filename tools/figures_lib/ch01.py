"""Chapter 01: what the naive chapter stores and moves (01_naive_attention/variants.cpp's cost model)."""
from .style import BLUE, GREY, LIGHT, ORANGE, RED, Rectangle, arrow, box, check, plt


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
