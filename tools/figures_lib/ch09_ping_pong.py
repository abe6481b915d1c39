"""Chapter 09, steps d to f: who issues what when on the shared tensor cores, a small event simulation of
the consumers' code (warp_specialized.cu, ping_pong.cu, intra_overlap.cu, tile.cuh, ring.cuh)."""
import re

from .rules import hopper_constants
from .style import BLUE, GREEN, GREY, LIGHT, ORANGE, RED, ROOT, CheckFailed, FancyArrowPatch, Rectangle, check, plt


PP_CALL = re.compile(r"\b(take|pass|start|wait_tile|attend_tile|issue_s|issue_pv|softmax_s|rescale_o|pack_p|"
                     r"mbarrier_arrive|store_rows)\s*(?:<[^<>()]*>)?\s*\(|\bwgmma_wait(?:_in_place)?<(\d+)>\s*\(")


def uncommented(path):
    """09_hopper/<path> without its // comments (which may hold braces: `P_{j-1}`)."""
    return re.sub(r"//[^\n]*", "", (ROOT / "09_hopper" / path).read_text())


def consumer_calls(text):
    """The calls of C++ text that 09_ping_pong.svg models, in source order: wgmma_wait<N> (and
    wgmma_wait_in_place<N>, the same wait where the source has it) as "wait<N>", the
    others by name (turn.take() is "take", PingPong::start(c) is "start")."""
    return [m.group(1) or f"wait<{m.group(2)}>" for m in PP_CALL.finditer(text)]


def matching(text, at):
    """The index of the bracket that closes the one at text[at]."""
    pair = {"{": "}", "(": ")"}[text[at]]
    depth = 0
    for i in range(at, len(text)):
        depth += (text[i] == text[at]) - (text[i] == pair)
        if depth == 0:
            return i
    raise CheckFailed(f"unbalanced {text[at]} in 09_hopper")


def consumer_code(path):
    """A consumer's code in 09_hopper/<path>, from the role split (split_roles) to its store_rows, split around its one loop
    over the K/V tiles: (calls before it, the loop's first j, calls in it, calls after it, the whole text)."""
    src = uncommented(path)
    a = src.find("split_roles(")
    check(a >= 0, f"09_hopper/{path}: no split_roles(; tools/figures.py must follow the consumers")
    m = re.compile(r"for \(int j = (\d+); j < tiles; \+\+j\) \{").search(src, a)
    check(m is not None, f"09_hopper/{path}: no `for (int j = ...; j < tiles; ++j) {{` after split_roles")
    close = matching(src, m.end() - 1)
    b = src.find(";", src.find("store_rows", close)) + 1
    check(b > close, f"09_hopper/{path}: no store_rows after the loop")
    return (consumer_calls(src[a:m.start()]), int(m.group(1)), consumer_calls(src[m.end():close]),
            consumer_calls(src[close:b]), src[a:b])


def ping_pong_rules():
    """The order of steps d, e and f's consumers, read from the code and checked against the order that
    09_ping_pong.svg simulates (line numbers as of writing), and PingPong's rules (ring.cuh)."""
    k = hopper_constants()
    # hopper.h:36 `kConsumers = 2`; ring.cuh:73 static_asserts it for the turns
    check(k["kConsumers"] == 2, f"09_hopper/hopper.h: kConsumers = {k['kConsumers']}; the figure draws two consumers")
    tile = uncommented("tile.cuh")
    m = re.search(r"template <class T, int D, class Turn = NoTurn>\s*__device__ __forceinline__ void attend_tile\(",
                  tile)
    check(m is not None, "09_hopper/tile.cuh: attend_tile<T, D, Turn = NoTurn> not found")
    body_at = tile.index("{", matching(tile, m.end() - 1))
    attend = consumer_calls(tile[body_at:matching(tile, body_at)])
    # tile.cuh:64-74 (attend_tile): take; issue_s; pass; wgmma_wait<0>(S); softmax_s; rescale_o; pack_p;
    # issue_pv; wgmma_wait<0>(O)
    want = ["take", "issue_s", "pass", "wait<0>", "softmax_s", "rescale_o", "pack_p", "issue_pv", "wait<0>"]
    check(attend == want, f"09_hopper/tile.cuh: attend_tile calls {attend}, the figure simulates {want}")
    # tile.cuh:15-17: NoTurn's take and pass do nothing (step d)
    check(re.search(r"struct NoTurn \{\s*__device__ __forceinline__ void take\(\) const \{\}\s*"
                    r"__device__ __forceinline__ void pass\(\) const \{\}", tile) is not None,
          "09_hopper/tile.cuh: NoTurn's take() and pass() are no longer empty")
    # the chains: tile.cuh:26 D / 16 wgmma_ss for S; tile.cuh:51 kBc / 16 wgmma_rs for P V (one group each)
    n_s = re.search(r"void issue_s\(.*?for \(int s = 0; s < D / (\d+); \+\+s\)\s*simt::wgmma_ss<", tile, re.S)
    n_pv = re.search(r"void issue_pv\(.*?for \(int kk = 0; kk < kBc / (\d+); \+\+kk\) simt::wgmma_rs<", tile, re.S)
    check(n_s is not None and n_pv is not None, "09_hopper/tile.cuh: issue_s / issue_pv's loops not found")
    d = 128  # the figure's head dim
    n_instr = {"S": d // int(n_s.group(1)), "PV": k["kBc"] // int(n_pv.group(1))}

    loop = ["wait_tile", "attend_tile", "mbarrier_arrive"]
    steps = {  # (calls before the loop, first j, in the loop, after it) that the figure simulates
        # warp_specialized.cu:48-53: for j: wait_tile; attend_tile (NoTurn); arrive on empty; then store_rows
        "d": ([], 0, loop, ["store_rows"]),
        # ping_pong.cu:47-56: PingPong::start(c); for j: wait_tile; attend_tile with PingPong; arrive; store_rows
        "e": (["start"], 0, loop, ["store_rows"]),
        # intra_overlap.cu:46-59: start; tile 0's wait_tile, take, issue_s, pass, wgmma_wait<0>, softmax_s, pack_p;
        # :61-74: for j >= 1: wait_tile; take; issue_s (S_j); issue_pv (P_{j-1} V_{j-1}); pass; wgmma_wait<1>;
        #          softmax_s (tile j); wgmma_wait<0>; arrive on empty (tile j - 1); rescale_o; pack_p;
        # :76-79: issue_pv (the last tile); wgmma_wait<0>; arrive on empty; store_rows
        "f": (["start", "wait_tile", "take", "issue_s", "pass", "wait<0>", "softmax_s", "pack_p"], 1,
              ["wait_tile", "take", "issue_s", "issue_pv", "pass", "wait<1>", "softmax_s", "wait<0>",
               "mbarrier_arrive", "rescale_o", "pack_p"], ["issue_pv", "wait<0>", "mbarrier_arrive", "store_rows"]),
    }
    files = {"d": "warp_specialized.cu", "e": "ping_pong.cu", "f": "intra_overlap.cu"}
    texts = {}
    for step, path in files.items():
        before, j0, body, after, texts[step] = consumer_code(path)
        got = (before, j0, body, after)
        check(got == steps[step], f"09_hopper/{path}: the consumer calls {got}, the figure simulates {steps[step]}")
    rules = [  # (step, rule): the arguments that say which tile and which turn each call is for
        ("d", r"attend_tile<T, D>\([^;]*, scale_log2\);"),                 # warp_specialized.cu:50: NoTurn
        ("e", r"const PingPong turn\(c, j, tiles\);\s*attend_tile<T, D>\([^;]*, scale_log2, turn\);"),  # :52-53
        ("f", r"int s = ring\.wait_tile\(0\);\s*const PingPong first\(c, 0, tiles\);"),  # intra_overlap.cu:52-53
        ("f", r"const int prev = s;\s*s = ring\.wait_tile\(j\);\s*const PingPong turn\(c, j, tiles\);"),  # :62-64
        ("f", r"issue_pv<T, D>\(O, pa, ring\.v_desc\(prev\)\);"),          # :67: P_{j-1} V_{j-1}
        ("f", r"mbarrier_arrive\(&ring\.empty\[prev\]\);"),                # :72: tile j - 1's stage
        ("f", r"\}\s*issue_pv<T, D>\(O, pa, ring\.v_desc\(s\)\);"),         # :76: the last tile's P V
    ]
    for step, rule in rules:
        check(re.search(rule, texts[step]) is not None,
              f"09_hopper/{files[step]} no longer matches `{rule}`; tools/figures.py must follow it")
    ring = uncommented("ring.cuh")
    # ring.cuh: mine = kTurn + c, other = kTurn + (c + 1) % consumers, pass_on(c + 1 < consumers || j + 1 < tiles),
    # consumers kConsumers by default (steps d to g; step h's three are not drawn)
    m = re.search(r"PingPong\(int c, int j, int tiles, int consumers = kConsumers\)\s*:\s*"
                  r"mine\(kTurn \+ static_cast<unsigned>\(c\)\),\s*"
                  r"other\(kTurn \+ static_cast<unsigned>\(\(c \+ 1\) % consumers\)\),\s*pass_on\(([^(){};]*)\)", ring)
    check(m is not None, "09_hopper/ring.cuh: PingPong's constructor no longer reads as expected")
    expr = m.group(1).replace("||", " or ").replace("&&", " and ")
    check(re.fullmatch(r"[\w\s+\-*<>=]+", expr) is not None, f"ring.cuh: unexpected pass_on({m.group(1)})")
    pass_on = eval("lambda c, j, tiles, consumers=%d: " % k["kConsumers"] + expr)  # noqa: S307 (our own header)
    # ring.cuh: start: the last consumer arrives on kTurn (consumer 0's barrier); take: bar.sync on mine;
    # pass: if pass_on, bar.arrive on other; both for the two warpgroups that meet there
    m = re.search(r"static void start\(int c, int consumers = kConsumers\) \{\s*if \(c == consumers - 1\) "
                  r"simt::named_barrier_arrive\(kTurn(?: \+ (\d))?, kWaiters\);", ring)
    check(m is not None, "09_hopper/ring.cuh: PingPong::start no longer reads as expected")
    starter, first = k["kConsumers"] - 1, int(m.group(1) or 0)
    check(first == 1 - starter, "ring.cuh: PingPong::start gives the first turn to the consumer that does not arrive")
    for rule in (r"static constexpr int kWaiters = 2 \* kThreads;",
                 r"void take\(\) const \{ simt::named_barrier_sync\(mine, kWaiters\); \}",
                 r"void pass\(\) const \{\s*if \(pass_on\) "
                 r"simt::named_barrier_arrive\(other, kWaiters\);"):
        check(re.search(rule, ring) is not None, f"09_hopper/ring.cuh no longer matches `{rule}`")
    return dict(steps=steps, attend=want, n_instr=n_instr, pass_on=pass_on, starter=starter, d=d)


def consumer_program(rules, step, c, tiles):
    """Consumer c's operations in step d, e or f, one per modelled call, each (what, tile, argument): the calls
    of ping_pong_rules, the loop unrolled, attend_tile expanded, NoTurn's take and pass dropped (step d), a pass
    dropped where pass_on is false, K/V tiles taken as landed (wait_tile: the producer is not modelled)."""
    before, j0, body, after = rules["steps"][step]
    # the tile each call is for: in step f's loop issue_pv and the arrive are tile j - 1's (prev)
    seq = [(call, 0) for call in before] + [(call, j - 1 if step == "f" and call in ("issue_pv", "mbarrier_arrive")
                                             else j) for j in range(j0, tiles) for call in body]
    seq += [(call, tiles - 1) for call in after]
    ops = []
    for call, j in seq:
        for call in rules["attend"] if call == "attend_tile" else [call]:
            if call in ("take", "pass") and step == "d" or call == "wait_tile":
                continue
            if call == "pass" and not rules["pass_on"](c, j, tiles):
                continue
            if call == "start" and c != rules["starter"]:
                continue
            what = {"issue_s": "S", "issue_pv": "PV", "softmax_s": "softmax", "rescale_o": "rescale",
                    "pack_p": "pack", "mbarrier_arrive": "empty", "store_rows": "end"}.get(call, call)
            if what.startswith("wait<"):
                ops.append(("wait", j, int(what[5:-1])))
            else:
                ops.append((what, j, None))
    return ops


def ping_pong_sim(programs, dur, n_instr, issue):
    """Runs the consumers' programs against one tensor-core queue. Issuing a chain issues its n_instr[kind]
    wgmma one per `issue` time units (two consumers issuing at once interleave them); the tensor cores
    execute wgmma one at a time in the order they were issued, each dur[kind] / n_instr[kind]. wait<N> blocks
    until at most N of the consumer's own groups are unfinished; softmax, rescale and pack take dur[...] on the
    consumer; take blocks until the other consumer has arrived on this one's turn barrier (pass, start).
    Returns each consumer's end, the executed wgmma, the groups and each consumer's log."""
    n = len(programs)
    t, pc, sub, blocked = [0.0] * n, [0] * n, [0] * n, [False] * n
    tc_free, tc, groups = 0.0, [], {}
    arrived = [[] for _ in range(n)]  # arrivals on consumer c's turn barrier not yet taken
    log = [[] for _ in range(n)]      # (what, tile, start, end, argument)
    while True:
        ready = [c for c in range(n) if pc[c] < len(programs[c]) and not blocked[c]]
        if not ready:
            check(all(pc[c] == len(programs[c]) for c in range(n)),
                  "the turns deadlock: a consumer waits on its barrier for an arrival that never comes")
            check(not any(arrived), "a bar.arrive that no bar.sync completes: a turn passed after the last chain")
            break
        c = min(ready, key=lambda c: (t[c], c))  # the earliest consumer next (ties: consumer 0)
        what, j, arg = programs[c][pc[c]]
        if what in ("S", "PV"):
            g = groups.setdefault((c, what, j), dict(issued=t[c], instr=[]))
            start = max(t[c], tc_free)
            tc_free = start + dur[what] / n_instr[what]
            g["instr"].append((start, tc_free))
            tc.append(((c, what, j), t[c], start, tc_free))
            t[c] += issue
            sub[c] += 1
            if sub[c] < n_instr[what]:
                continue  # the rest of the chain: the other consumer may issue in between
            sub[c], g["end"] = 0, tc_free
            log[c].append((what, j, g["issued"], t[c], None))
        elif what == "wait":
            ends = sorted(g["end"] for (cc, _, _), g in groups.items() if cc == c and g["end"] > t[c])
            t0 = t[c]
            if len(ends) > arg:
                t[c] = ends[len(ends) - arg - 1]
            log[c].append((what, j, t0, t[c], arg))
        elif what in ("softmax", "rescale", "pack"):
            log[c].append((what, j, t[c], t[c] + dur[what], None))
            t[c] += dur[what]
        elif what == "take":
            if not arrived[c]:
                blocked[c] = True  # bar.sync: until the other consumer arrives
                continue
            t0 = t[c]
            t[c] = max(t0, arrived[c].pop(0))
            log[c].append((what, j, t0, t[c], None))
        elif what in ("pass", "start"):
            o = 1 - c
            check(not arrived[o], "a second bar.arrive before the barrier completed (the emulator's error)")
            arrived[o].append(t[c])
            blocked[o] = False
            log[c].append((what, j, t[c], t[c], o))
        else:  # empty, end: markers
            log[c].append((what, j, t[c], t[c], None))
        pc[c] += 1
    return t, tc, groups, log


def check_ping_pong(step, programs, tc, groups, log):
    """What the simulated timeline must show: each consumer's work in its code's order, the queue's rules, and
    per step: e's S chains alternating, f's softmax of tile j under its own P V of tile j - 1."""
    where = f"09_ping_pong step {step}"
    for i in range(len(tc) - 1):  # one wgmma at a time, in issue order
        check(tc[i][1] <= tc[i + 1][1] and tc[i][3] <= tc[i + 1][2], f"{where}: the queue is not FIFO, one at a time")
    check(all(issued <= start for _, issued, start, _ in tc), f"{where}: a wgmma ran before it was issued")
    for c, prog in enumerate(programs):
        check([(w, j) for w, j, *_ in log[c]] == [(w, j) for w, j, _ in prog],
              f"{where}: consumer {c} did not follow its code's order")
        check(all(a[3] <= b[2] for a, b in zip(log[c], log[c][1:])), f"{where}: consumer {c} did two things at once")
        done = {(w, j): e for w, j, s, e, _ in log[c]}
        for w, j, s, e, arg in log[c]:
            if w == "wait":  # wgmma_wait<N>: at most N of its groups unfinished when it returns
                left = [g for (cc, _, _), g in groups.items() if cc == c and g["issued"] < e and g["end"] > e]
                check(len(left) <= arg, f"{where}: consumer {c} passed wait<{arg}> with {len(left)} groups running")
            if w == "softmax":
                check(s >= groups[(c, "S", j)]["end"], f"{where}: consumer {c}'s softmax of tile {j} before its S")
            if w == "PV":
                check(s >= done[("pack", j)], f"{where}: consumer {c}'s P V {j} issued before P {j} was packed")
            if w == "empty":
                check(s >= groups[(c, "PV", j)]["end"], f"{where}: consumer {c} freed tile {j} before its P V")
    s_chains = sorted((g["instr"][0][0], g["instr"][-1][1], c) for (c, w, _), g in groups.items() if w == "S")
    if step in "ef":  # the turn: S chains alternate c0, c1, c0, ... and never interleave
        check([c for _, _, c in s_chains] == [i % 2 for i in range(len(s_chains))],
              f"{where}: the S chains do not alternate between the consumers: {[c for *_, c in s_chains]}")
        check(all(a[1] <= b[0] for a, b in zip(s_chains, s_chains[1:])), f"{where}: two S chains interleave")
    if step == "f":
        for c in range(len(programs)):
            for w, j, s, e, _ in log[c]:
                if w == "softmax" and j >= 1:
                    pv = groups[(c, "PV", j - 1)]
                    check(min(e, pv["end"]) - max(s, pv["instr"][0][0]) > 0,
                          f"{where}: consumer {c}'s softmax of tile {j} does not overlap its P V of tile {j - 1}")


def fig_ping_pong(args):
    rules = ping_pong_rules()
    tiles, n_instr, issue = 4, rules["n_instr"], 1 / 64
    check(n_instr["S"] == n_instr["PV"] == 8, f"d = 128, kBc = 128: 8 wgmma per chain, not {n_instr}")
    # S (64 x 128 x 128) and P V (64 x 128 x 128) are the same work at d = 128: one unit each. Powers of two
    # keep the times exact (no float ties broken by rounding).
    dur = dict(S=1.0, PV=1.0, softmax=1.25, rescale=0.125, pack=0.125)
    PURPLE = "#8172b2"
    steps = [("d", "step d, warp_specialized.cu: attend_tile with NoTurn, the consumers uncoordinated "
                   "(both issue their first S chain at once: the tensor cores interleave the two)"),
             ("e", "step e, ping_pong.cu: S chains in turns (PingPong, ring.cuh: bar.sync on kTurn + c before "
                   "issue_s, bar.arrive on the other's after it; consumer 1 gives consumer 0 the first turn)"),
             ("f", "step f, intra_overlap.cu: in its turn S of tile j, then P V of tile j − 1; wgmma_wait<1>, the "
                   "softmax of tile j while that P V runs; wgmma_wait<0>, rescale_o, pack_p")]
    results = {}
    for step, _ in steps:
        programs = [consumer_program(rules, step, c, tiles) for c in range(2)]
        ends, tc, groups, log = ping_pong_sim(programs, dur, n_instr, issue)
        check_ping_pong(step, programs, tc, groups, log)
        total = max(ends)
        busy = sum(e - s for *_, s, e in tc) / total
        results[step] = (total, busy, tc, groups, log)
    check(results["f"][0] < results["e"][0] < results["d"][0],
          "09_ping_pong: with these durations each step should finish before the one it improves on")

    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    name = lambda w, j: (f"S{j}" if w == "S" else f"PV{j}").translate(sub)  # noqa: E731
    span = max(r[0] for r in results.values())
    fig, axes = plt.subplots(3, 1, figsize=(14, 10.2), sharex=True)
    rows = ["consumer 0", "consumer 1", "tensor cores"]
    for ax, (step, title) in zip(axes, steps):
        total, busy, tc, groups, log = results[step]
        for c in range(2):
            y = c
            issued = []  # consecutive issues share one label
            for w, j, s, e, arg in log[c]:
                if w in ("S", "PV"):
                    ax.barh(y, e - s, left=s, height=0.7, color=BLUE if w == "S" else GREEN, edgecolor="black",
                            linewidth=0.4)
                    if issued and s - issued[-1][1] < 1e-9:
                        issued[-1] = (issued[-1][0], e, issued[-1][2] + " + " + name(w, j))
                    else:
                        issued.append((s, e, name(w, j)))
                elif w in ("softmax", "rescale", "pack"):
                    ax.barh(y, e - s, left=s, height=0.7, color=ORANGE if w == "softmax" else PURPLE,
                            alpha=0.8, edgecolor="black", linewidth=0.5)
                    if w == "softmax":
                        ax.text((s + e) / 2, y, f"softmax {j}", ha="center", va="center", fontsize=7.5)
                elif w in ("wait", "take") and e > s:
                    ax.barh(y, e - s, left=s, height=0.22, color=LIGHT if w == "wait" else RED,
                            alpha=1.0 if w == "wait" else 0.6, edgecolor=GREY, linewidth=0.5)
                    if e - s >= 0.75:
                        ax.text((s + e) / 2, y + 0.2, f"wait<{arg}>" if w == "wait" else "turn", ha="center",
                                va="top", fontsize=6.5, color="black" if w == "wait" else RED)
                elif w in ("pass", "start"):
                    ax.add_patch(FancyArrowPatch((s, y + (0.36 if arg > c else -0.36)),
                                                 (s, arg + (-0.36 if arg > c else 0.36)), arrowstyle="-|>",
                                                 mutation_scale=8, color=RED, linewidth=1.1))
                elif w == "empty":
                    ax.plot([s], [y + 0.3], marker="^", color="black", markersize=4.5)
                elif w == "end":
                    ax.plot([s, s], [y - 0.42, y + 0.42], color="black", linewidth=1.6)
            for s, e, text in issued:
                ax.text(s, y - 0.37, text, ha="left", va="bottom", fontsize=6.5,
                        color="black", bbox=dict(facecolor="white", edgecolor="none", pad=0.2, alpha=0.8))
        # the tensor cores: a box per group, the wgmma of interleaved groups as slivers
        segs = []
        for key, _, s, e in tc:
            if segs and segs[-1][0] == key and abs(segs[-1][2] - s) < 1e-9:
                segs[-1][2] = e
            else:
                segs.append([key, s, e])
        count = {}
        for key, *_ in segs:
            count[key] = count.get(key, 0) + 1
        clusters = []  # interleaved groups: [start, end, names]
        for (c, w, j), s, e in segs:
            ax.barh(2, e - s, left=s, height=0.7, color=BLUE if w == "S" else GREEN, alpha=0.85 if c == 0 else 0.4,
                    hatch=None if c == 0 else "///", edgecolor="black",
                    linewidth=0.5 if count[(c, w, j)] == 1 else 0.15)
            if count[(c, w, j)] == 1:
                ax.text((s + e) / 2, 2, f"{name(w, j)} (c{c})", ha="center", va="center", fontsize=7.5)
                continue
            text = f"{name(w, j)} (c{c})"
            if clusters and s <= clusters[-1][1] + 1e-9:
                clusters[-1][1] = max(clusters[-1][1], e)
                if text not in clusters[-1][2]:
                    clusters[-1][2].append(text)
            else:
                clusters.append([s, e, [text]])
        for s, e, texts in clusters:
            ax.text((s + e) / 2, 2, " ∥ ".join(texts) + "\ninterleaved", ha="center", va="center", fontsize=7,
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.85))
        ax.axvline(total, color=GREY, linestyle="--", linewidth=0.8)
        ax.text(total + 0.08, 2.45, f"{total:g}", color=GREY, fontsize=7.5, va="center")
        ax.set_yticks(range(3), rows, fontsize=8.5)
        ax.set_ylim(2.55, -0.75)
        ax.set_xlim(-0.2, span + 0.8)
        ax.set_title(f"{title}\n{tiles} K/V tiles in {total:g} units: tensor cores busy {busy:.0%} of the time "
                     "(of this simulation, schematic)", fontsize=9)
        ax.grid(axis="x", color=LIGHT, linewidth=0.6)
        ax.set_axisbelow(True)
    axes[-1].set_xlabel("time (illustrative units: the order of events is the code's, the durations are chosen)")
    axes[-1].set_xticks(range(0, int(span) + 1))
    handles = [Rectangle((0, 0), 1, 1, facecolor=BLUE, alpha=0.85, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=BLUE, alpha=0.4, hatch="///", edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=GREEN, alpha=0.85, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=ORANGE, alpha=0.8, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=PURPLE, alpha=0.8, edgecolor="black"),
               Rectangle((0, 0), 1, 1, facecolor=LIGHT, edgecolor=GREY),
               Rectangle((0, 0), 1, 1, facecolor=RED, alpha=0.6, edgecolor=GREY),
               plt.Line2D([], [], marker=r"$\downarrow$", color=RED, linestyle="none", markersize=9),
               plt.Line2D([], [], marker="^", color="black", linestyle="none", markersize=4.5),
               plt.Line2D([], [], marker="|", color="black", linestyle="none", markersize=9, markeredgewidth=1.6)]
    fig.legend(handles, ["S chain Q Kᵀ (c0; on a consumer's row: issuing it)", "the same, consumer 1's (c1)",
                         "P V chain (c1's hatched)", "softmax_s (scale, mask, m, l, P)", "rescale_o, pack_p",
                         "wgmma_wait<N>: until at most N of its groups run", "bar.sync: waiting for its turn",
                         "bar.arrive: the turn to the other consumer", "arrive on empty (the tile's stage)",
                         "store_rows"],
               loc="lower center", ncol=5, frameon=False, fontsize=8)
    fig.suptitle("SCHEMATIC, NOT MEASURED: durations illustrative. Steps d, e, f of chapter 09 as a small event "
                 f"simulation of the code's order (tools/figures.py), kConsumers = 2 (hopper.h), {tiles} K/V tiles "
                 "taken as landed (producer not drawn).\n"
                 f"S chain = P V chain = 1 unit ({n_instr['S']} wgmma each at d = {rules['d']}, issued 1/64 unit "
                 "apart, executed one at a time in issue order), softmax_s = "
                 f"{dur['softmax']:g}, rescale_o = pack_p = {dur['rescale']:g}.\nStep d loses its time where both "
                 "consumers issue at once; not modelled: what could keep them in step on a GPU (the same full[s] "
                 "releasing both, two softmaxes sharing the SM's ALUs)", fontsize=10)
    fig.tight_layout(rect=(0, 0.055, 1, 0.96))
    return fig
