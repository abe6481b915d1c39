"""Chapter 10: the block mask of a mask_mod (FlexAttention's BlockMask) at the kernel's tiles.

The rules are read from common/kernels/mask_mod.h and evaluated on every (query, key) pair; a tile is
full (every pair in range visible), partial (some) or empty. The counts are checked against the
kernel's own: block_mask's plan line in results/cpu-emulation-simt/10_masks_runs.txt.
"""
import re

import numpy as np

from .style import BLUE, ORANGE, ROOT, Rectangle, check, plt

RUNS = "results/cpu-emulation-simt/10_masks_runs.txt"


def rules():
    """{name: f(q, kv, arg)} of the rules of common/kernels/mask_mod.h the figure draws, on numpy arrays."""
    src = (ROOT / "common/kernels/mask_mod.h").read_text()
    out = {}
    for name, field in (("SlidingWindow", "window"), ("PrefixLM", "prefix")):
        m = re.search(r"struct " + name + r" \{\s*int (\w+);\s*ATTN_HOST_DEVICE bool operator\(\)\(int, int, int q, int kv\) const "
                      r"\{ return (.+?); \}", src)
        check(m is not None and m.group(1) == field, f"common/kernels/mask_mod.h: cannot read {name}'s rule")
        expr = m.group(2)
        check(re.fullmatch(r"[\w\s<=>+\-&|]+", expr) is not None and not ("&&" in expr and "||" in expr),
              f"{name}'s rule {expr!r}: tools/figures_lib/ch10.py reads one && or || of comparisons")
        terms = re.split(r"&&|\|\|", expr)
        joined = (" & " if "&&" in expr else " | ").join("(%s)" % t.strip() for t in terms)
        out[name] = eval(f"lambda q, kv, {field}: {joined}")  # noqa: S307 (our own header)
    m = re.search(r"struct Document \{\s*const int\* doc;\s*ATTN_HOST_DEVICE bool operator\(\)\(int, int, int q, int kv\) const "
                  r"\{ return doc\[q\] == doc\[kv\]; \}", src)
    check(m is not None, "common/kernels/mask_mod.h: cannot read Document's rule")
    out["Document"] = lambda q, kv, doc: np.asarray(doc)[q] == np.asarray(doc)[kv]
    return out


def classify(visible, br, bc):
    """Per (Q tile, K/V tile): 2 full, 1 partial, 0 empty, over the pairs in range."""
    lq, lk = visible.shape
    tr, tc = -(-lq // br), -(-lk // bc)
    pad = np.zeros((tr * br, tc * bc), dtype=np.int64)
    inside = np.zeros_like(pad)
    pad[:lq, :lk] = visible
    inside[:lq, :lk] = 1
    seen = pad.reshape(tr, br, tc, bc).sum(axis=(1, 3))
    total = inside.reshape(tr, br, tc, bc).sum(axis=(1, 3))
    return np.where(seen == 0, 0, np.where(seen == total, 2, 1))


def pattern(rule, n, arg):
    q, kv = np.arange(n)[:, None], np.arange(n)[None, :]
    return rule(q, kv, arg)


def check_against_runs(rule, br, bc):
    """Every sliding-window run of the committed file: its plan line's counts, from the rule."""
    text = (ROOT / RUNS).read_text()
    runs = re.findall(r"## \$ \S*10_masks (.*?--mask-mod sliding_window --window (\d+).*?)\n.*?"
                      r"Br = (\d+), Bc = (\d+): (\d+) of (\d+) \(Q tile, K/V tile\) pairs listed per head, (\d+) partial",
                      text, re.S)
    check(len(runs) >= 2, f"{RUNS}: no sliding-window plan lines to check the figure's rule against")
    for cmd, window, rbr, rbc, listed, pairs, partial in runs:
        n = int(re.search(r"-n (\d+)", cmd).group(1))
        c = classify(pattern(rule, n, int(window)), int(rbr), int(rbc))
        got = (int((c > 0).sum()), c.size, int((c == 1).sum()))
        check(got == (int(listed), int(pairs), int(partial)),
              f"sliding window {window} at N = {n}: the figure's rule lists {got}, block_mask's plan line "
              f"{(int(listed), int(pairs), int(partial))} ({RUNS})")


def draw(ax, c, br, bc, n, title):
    colors = {2: BLUE, 1: ORANGE, 0: "white"}
    for r in range(c.shape[0]):
        for k in range(c.shape[1]):
            ax.add_patch(Rectangle((k * bc, r * br), min(bc, n - k * bc), min(br, n - r * br),
                                   facecolor=colors[int(c[r, k])], edgecolor="black", linewidth=0.4, alpha=0.85))
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    ax.set_xlabel("key (K/V tiles of %d)" % bc)
    ax.set_ylabel("query (Q tiles of %d)" % br)
    listed, partial = int((c > 0).sum()), int((c == 1).sum())
    ax.set_title(f"{title}\n{listed} of {c.size} tiles listed, {partial} of them partial", fontsize=9)


def fig_block_mask(args):
    br, bc, n = args.br, args.bc, 1024
    r = rules()
    check_against_runs(r["SlidingWindow"], br, bc)
    lengths = [200, 450, 100, 274]
    doc = np.repeat(np.arange(len(lengths)), lengths)
    panels = [
        (pattern(r["SlidingWindow"], n, 256), "sliding_window, window 256 (causal)"),
        (pattern(r["PrefixLM"], n, 300), "prefix_lm, prefix 300"),
        (pattern(r["Document"], n, doc), "document: lengths " + ", ".join(map(str, lengths))),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(14, 5.2))
    for ax, (visible, title) in zip(axes, panels):
        draw(ax, classify(visible, br, bc), br, bc, n, title)
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", alpha=0.85) for c in (BLUE, ORANGE, "white")]
    fig.legend(handles, ["full: in full_kv_indices, no rule evaluated", "partial: in kv_indices, the rule per score",
                         "empty: not listed, never loaded"], loc="lower center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Chapter 10's block masks, N = {n}, Br = {br} by Bc = {bc} (the rules of common/kernels/mask_mod.h, "
                 f"every pair evaluated;\nthe counts agree with block_mask's plan lines in {RUNS})", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 0.93))
    return fig
