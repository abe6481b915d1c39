"""What every figure shares: matplotlib's settings, the colours, the checks, and saving an SVG."""
import io
import sys
import xml.dom.minidom
from pathlib import Path

from . import ROOT  # noqa: F401  (the chapters' modules take it from here)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle
except ImportError:  # tools/figures.py imports this module only to draw: a skip (77), as its test expects
    print(f"figures.py needs matplotlib to draw, and {sys.executable} has none: apt-get install python3-matplotlib "
          "(for /usr/bin/python3)", file=sys.stderr)
    sys.exit(77)

plt.rcParams.update({
    "svg.hashsalt": "flashsteps",  # fixed ids: the same figure gives the same bytes
    "svg.fonttype": "none",        # text stays text: small, diffable files
    "font.size": 9,
    "font.family": "DejaVu Sans",
    "axes.titlesize": 10,
})
METADATA = {"Date": None, "Creator": "tools/figures.py"}  # the command that draws them; in every SVG's bytes

BLUE, ORANGE, GREEN, RED, GREY = "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8c8c8c"
LIGHT = "#eeeeee"


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


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
