"""Chapter 02: the reduction trees of common/kernels/reduce.cuh (warp_max, block_reduce)."""
from .style import BLUE, GREY, LIGHT, RED, arrow, box, check, plt


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
