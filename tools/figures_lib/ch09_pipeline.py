"""Chapter 09: steps c and d's ring of stages as a schematic timeline (tma_ring.cu, warp_specialized.cu),
and the SM's registers by role (ptxas's counts, hopper.h's setmaxnreg)."""
import re

from .rules import hopper_constants
from .style import BLUE, GREEN, GREY, ORANGE, RED, ROOT, Rectangle, check, plt


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
                            (ws, "warp_specialized.cu", r"mbarrier_init\(&empty\[s\], Consumers \* kThreads\)"),
                            # ring.cuh's Ring<T, D, Stages, Consumers>: step d takes the defaults, kStages and kConsumers
                            (ws, "warp_specialized.cu", r"int Stages = kStages, int Consumers = kConsumers>"),
                            (ws, "warp_specialized.cu", r"if \((j|t) >= Stages\) simt::mbarrier_wait_parity\(&empty\[s\]"),
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
