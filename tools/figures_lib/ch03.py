"""Chapter 03: the online softmax on one row of 8 scores in 2 blocks, checked against the direct one."""
import math

from .style import BLUE, GREY, ORANGE, check, plt


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
