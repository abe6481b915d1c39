#!/usr/bin/env python3
"""sass_issue.py: what each kernel issues beside what the emulator sees, from the sm_90 SASS.

The emulator counts the instructions a profiler would see move data or synchronise: global and
shared-memory requests (ld, st, atom, cp.async, ldmatrix), mma.sync, barriers, shuffles and votes.
It does not see the FP32, integer, conversion and branch instructions around them, which a GPU must
issue too, at 4 per clock per SM. This tool compiles every chapter's kernels for sm_90 (chapter 09's for
sm_90a, whose wgmma (HGMMA) and TMA (UTMALDG) are seen kinds too),
cuts nvdisasm's listing into basic blocks, finds the loops by their back edges and splits each
kernel in parts (issue_profile): the blocks outside the loops (a warp-specialized kernel's start,
its producer's own and its consumers' own apart), one iteration of the tile loop, one iteration of
the loops around it, and one iteration of each other loop, each with its instructions and the seen
instructions of each kind in it. common/model/sass.h weights them by the emulator's counts: every
warp runs the first part once (the producer's own blocks: once per block, by its one copying thread;
the consumers' own: once per consumer warp), the tile loop as often as the emulator's barriers say
(or its seen instructions), each other loop as often as the seen instructions left over say, loop
by loop: first a loop with an explicit kind (an intrinsic: cp.async, ldmatrix, mma.sync, shuffles)
that no other loop has, by those kinds, then the next; the loops left together, by the kind that
allows the fewest trips (an access the two compilers split or merge differently does not inflate
it), and then those of them with a global access that hold none of the kinds used up, by what is
left (sass.h's loop_trips). Each part also counts its FP32 and IMAD instructions, which share the FMA pipes (model.h's FMA
term). With each kernel, ptxas's registers per thread, which occupancy needs. The common path is that of a problem without is_causal, attn_mask, mask_mod or
score mods; a kernel whose path depends on them has a row per kind besides: "<kernel> causal=<kind>"
and "<kernel> mask=<kind>" (chapter 05's lean_loop masks every tile of such a problem; with
attn_mask, its loads; chapter 09's step g tests each tile's place against the diagonal, masks few
tiles of a causal one and has no causal row), "<kernel> mask_mod=<kind>" (chapter 10's step b applies the rule on every
tile, a switch followed through its jump table), "<kernel> score_mod=<mods>" (step d changes every
score), and a mask's kind with score mods where both matter. The kinds' names are the harness's
(common/harness/problem.cpp).

  tools/sass_issue.py --out common/model/sass_sm90.inc   # compile, count, write (needs nvcc and nvdisasm,
                                                         # pip install nvidia-cuda-nvdisasm)
  tools/sass_issue.py --check                            # exit 1 when a source changed since it was written
  tools/sass_issue.py --live build/sass_live.cpp         # the counters build's rule: the edited kernels' own
                                                         # rows, compiled and counted the same way
  tools/sass_issue.py --archs build/sass_archs.cpp --arch sm_80 --cache build/sass_cache
                                                         # the counters build's rule for other GPUs: every
                                                         # kernel's rows for sm_80, each source cached by hash

The data file names every source file the kernels were compiled from (and this tool, and
kernel_resources.py) with a hash of its contents; --check (CTest sass_data_fresh) recomputes them
without a compiler. Exit 2 on bad input or a missing tool.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402

ROOT = kr.ROOT
DEFAULT = os.path.join(ROOT, "common", "model", "sass_sm90.inc")
# Every chapter's kernels, for sm_90; chapter 09's for sm_90a (wgmma, TMA, setmaxnreg: only the
# architecture-specific target has them).
SOURCES = "[0-9][0-9]_*/*.cu"
SM90A = "09_"
# The kinds of SASS instruction the emulator also counts, one for one (simt/counters.h), and their
# opcodes, first match wins: global loads and stores (generic LD/ST too), atomics, cp.async (LDGSTS,
# counted once, on its global side), shared-memory loads, stores and ldmatrix, HMMA (mma.sync),
# BAR.SYNC and BAR.ARV (__syncthreads, and the named barriers' bar.sync and bar.arrive: the emulator
# counts each warp a barrier releases, those that only arrived too), SHFL and VOTE; on sm_90a, HGMMA
# (each warp's part of a wgmma) and UTMALDG (a TMA box). common/model/sass.h takes the same kinds
# from the counters.
KINDS = [("cp.async", ("LDGSTS",)), ("ld", ("LDG", "LD.")), ("st", ("STG", "ST.")), ("atom", ("ATOMG", "ATOMS", "ATOM.", "RED.")),
         ("ldsm", ("LDSM",)), ("lds", ("LDS",)), ("sts", ("STS",)), ("mma", ("HMMA",)), ("bar", ("BAR.SYNC", "BAR.ARV")),
         ("shfl", ("SHFL", "VOTE.")), ("wgmma", ("HGMMA",)), ("tma", ("UTMALDG",))]
LD = [k for k, _ in KINDS].index("ld")


def kind(x):
    """The index in KINDS of the instruction's kind, or None for one the emulator does not see."""
    if x["never"]:
        return None
    for k, (_, ops) in enumerate(KINDS):
        if x["op"].startswith(ops):
            return k
    return None


# What a result that comes back through a scoreboard (a variable-latency instruction) takes, in
# cycles from issue, on an H100 SXM5: the shared-memory load latency (LDS, LDSM), and the L2 hit and
# DRAM latencies of a global load, measured by a third-party rerun of Luo et al.'s suite
# (Johnsonms/NVIDIA-Hopper-Benchmark, reproduction/H100-dapperdingo; ../shared/design table). A part's
# cycles are counted twice, with every global load hitting L2 and with every one going to DRAM; the
# model takes between them by the share of a launch's loaded bytes that DRAM serves (model.h). No
# measurement of MUFU or SHFL on Hopper is cited yet: they take the shared-memory figure (ASSUMPTION:
# both return through the same scoreboards, and Volta/Turing measurements put them within a few
# cycles of it).
SHARED_LATENCY, L2_LATENCY, DRAM_LATENCY = 29, 272, 484
GLOBAL = ("LDG", "LD.", "LDGSTS", "ATOM", "RED")
OTHER_LATENCY = 29


def latency(op, global_latency=L2_LATENCY):
    if op.startswith(("LDS", "LDSM")):
        return SHARED_LATENCY
    if op.startswith(GLOBAL):
        return global_latency
    return OTHER_LATENCY


# wgmma (sm_90a's HGMMA) returns through no scoreboard: WARPGROUP.DEPBAR.LE gsb0, n waits until at
# most n of the warpgroup's committed groups (each closed by an HGMMA marked gsb0) are still running.
# A warp's part of an m64nNk16 HGMMA is N/8 m16n8k16 products on its sub-partition's tensor core,
# which does one per 4 clocks (one per clock per SM is the dense peak, gpus.h): N/2 cycles of that
# core, one HGMMA after the other. Its result is ready no sooner than wgmma's latency after it
# starts: 128 cycles (Luo et al., arXiv:2402.13499, dense wgmma on an H800; ../shared/design table).
WGMMA_LATENCY = 128


def hgmma_cycles(x):
    """The cycles of its sub-partition's tensor core one warp's part of an HGMMA.64xNx16 takes (above)."""
    return kr.hgmma_n(x) // 2


def block_cycles(instrs, start, end, global_latency=L2_LATENCY):
    """The cycles one warp takes to issue instructions [start, end) alone, its scoreboards clear at
    the start (block_issue)."""
    return block_issue(instrs, start, end, global_latency)[0]


def block_issue(instrs, start, end, global_latency=L2_LATENCY, ready_in=None, trace=None):
    """(cycles, [cycles after the block until each scoreboard clears]) one warp takes to issue
    instructions [start, end): each waits for the scoreboards its control bits name
    (kernel_resources.control), then stalls as many cycles as the compiler encoded before the next
    may issue; a WARPGROUP.DEPBAR waits for the wgmma groups it names (above). The scoreboards start
    as `ready_in` says (cycles until each clears; clear if not given), the tensor core free. Without
    control bits (no -hex), one cycle each. `trace`, a list: gets (index, cycles, waited, for what,
    1) per instruction: its cycles are its wait, its issue cycle and its stall, adding up to the
    block's; `for what`, the op whose result it waited for ("wgmma" for a group's products; "op (its
    operands read)" for a scoreboard set when an instruction has read its registers; "earlier" for
    one set before the block; "" when it waited for nothing); the last field is the times it counts
    for (mix weights a block's entries by its trips)."""
    t, ready = 0, list(ready_in) if ready_in else [0] * 8
    who = ["earlier"] * 8  # the op each scoreboard waits for (one set before the block: "earlier")
    core, running, group = 0, [], 0  # the tensor core free from; committed groups' ends; the open group's
    for i in range(start, end):
        x = instrs[i]
        t_in, why = t, ""
        if x["op"].startswith("HGMMA") and not x["never"]:
            begin = max(t, core)
            core = begin + hgmma_cycles(x)
            group = max(group, begin + WGMMA_LATENCY, core)
            if "gsb0" in x["args"]:
                running, group = running + [group], 0
        elif x["op"].startswith("WARPGROUP.DEPBAR") and not x["never"]:
            n = re.search(r"gsb0, (0x[0-9a-f]+|\d+)", x["args"])
            keep = int(n.group(1), 0) if n else 0
            if len(running) > keep:
                t = max([t] + running[:len(running) - keep])
                running = running[len(running) - keep:]
                why = "wgmma" if t > t_in else ""
        c = x.get("ctl")
        if c is None:
            t += 1
            if trace is not None:
                trace.append((i, t - t_in, t - 1 - t_in, why, 1))
            continue
        for b in range(6):
            if c["wait"] >> b & 1 and ready[b] > t:
                t, why = ready[b], who[b]
        waited = t - t_in
        if c["wbar"] < 6:
            ready[c["wbar"]], who[c["wbar"]] = t + latency(instrs[i]["op"], global_latency), instrs[i]["op"]
        if c["rbar"] < 6 and t + 2 >= ready[c["rbar"]]:
            ready[c["rbar"]], who[c["rbar"]] = t + 2, instrs[i]["op"] + " (its operands read)"
        t += max(1, c["stall"])
        if trace is not None:
            trace.append((i, t - t_in, waited, why, 1))
    return t, [max(0, r - t) for r in ready]


# The instructions of the FMA pipes (Nsight Compute's "fma"; NVIDIA's description of the pipes: on
# GA100 one FMA pipe takes IMAD, IDP and FP32; from GA10x on, FMAheavy takes IMAD, IDP and FP32 and
# FMAlite FP32): FP32 adds, multiplies and multiply-adds, and the integer multiply-adds (IMAD, which
# the compiler also uses to move and to shift, and IDP). common/gpus/gpus.h gives each GPU's rates
# of both; model.h's FMA term.
FP32_OPS, IMAD_OPS = ("FFMA", "FADD", "FMUL"), ("IMAD", "IDP")


# A consumer gives a ring's stage back (chapter 09: mbarrier_arrive on `empty`): an arrival on an
# mbarrier that announces no bytes.
RELEASE = "SYNCS.ARRIVE.TRANS64.A1T0"


def mix(instrs, blocks, times, one_warp=False, order=None, loop=False, trace=None):
    """(instructions, [seen instructions of each kind], cycles, cycles from DRAM, FP32 instructions,
    IMAD instructions, release) of the blocks, each `times[block]` times; cycles: what one warp alone
    takes to issue them (block_cycles), with every global load hitting L2, and with every one going to
    DRAM; release: the cycles to the first arrival that gives a stage back (release_cycles), 0 without
    one (how long a consumer holds a ring's stage into its iteration: sass.h's SassPart::release).
    The blocks run in address order, each starting with the scoreboards the one before left set: a
    load whose result a later block waits for costs that wait (nvcc puts a guarded load in its
    guard's block and its first use after the join). Not in a part that holds wgmma (an HGMMA or
    WARPGROUP.DEPBAR): there a warpgroup's role takes some blocks and skips others, so address order
    is not one warp's order, and each block starts clear; unless `one_warp` (the tile part: the
    consumers' walked loop, whose address order is a warp's), and then the blocks are issued as one
    sequence (as_sequence(), in the walk's `order` where given), the tensor core's groups carried
    too: a wait may be for products another block issued (chapter 09's steps f and g issue
    P_{j-1} V_{j-1} beside S_j's products and wait for them in the block after the mask's tests).
    `loop`: the blocks are one whole iteration of a loop (an innermost loop's, or the tile loop's
    with its inner loops walked), costed in its steady state: issued twice, the second time starting
    with the scoreboards the first left set (a global or shared load's, MUFU's, a shuffle's), and
    the cycles are the second's. A result one iteration asks for and the next waits for then costs
    what is left of its latency when the next iteration needs it, not nothing. Today no row
    changes: chapter 03's step c asks for the next row's scores and chapter 08's step g for the
    next step's rows, and each iteration is longer than the latency. In the wgmma path the tensor
    core's groups are not carried from one pass to the next (each pass waits for its own), and
    `release` is still counted from clear scoreboards. `trace`, a list: gets block_issue's trace of
    the pass whose cycles are returned (with every global load hitting L2), each entry's cycles
    weighted by its block's times, its index the instruction's in `instrs`."""
    total, seen, fp32, imad = 0, [0] * len(KINDS), 0, 0
    carry = not any(instrs[i]["op"].startswith(("HGMMA", "WARPGROUP.DEPBAR"))
                    for b in times for i in range(blocks[b]["start"], blocks[b]["end"]))
    for b in sorted(times):
        n = times[b]
        total += n * (blocks[b]["end"] - blocks[b]["start"])
        for i in range(blocks[b]["start"], blocks[b]["end"]):
            k = kind(instrs[i])
            if k is not None:
                seen[k] += n
            if not instrs[i]["never"]:
                fp32 += n * instrs[i]["op"].startswith(FP32_OPS)
                imad += n * instrs[i]["op"].startswith(IMAD_OPS)

    def issue(at_l2, at_dram, tr=None):  # (cycles, from DRAM, scoreboards after, from DRAM) of one pass
        cycles, dram = 0, 0
        for b in sorted(times):
            mine = [] if tr is not None else None
            c, after_l2 = block_issue(instrs, blocks[b]["start"], blocks[b]["end"], L2_LATENCY, at_l2, mine)
            if tr is not None:
                tr += [(i, n * times[b], w * times[b], why, times[b]) for i, n, w, why, _ in mine]
            d, after_dram = block_issue(instrs, blocks[b]["start"], blocks[b]["end"], DRAM_LATENCY, at_dram)
            cycles, dram = cycles + times[b] * c, dram + times[b] * d
            if carry:
                at_l2, at_dram = after_l2, after_dram
        return cycles, dram, at_l2, at_dram

    # The trace is of the pass whose cycles are returned: the second where a carried loop is issued
    # twice, the sequence's below where a wgmma part's blocks are one warp's sequence.
    traced = trace is not None and not (one_warp and not carry)
    cycles, dram, at_l2, at_dram = issue(None, None, trace if traced and not (loop and carry) else None)
    if loop and carry:
        cycles, dram = issue(at_l2, at_dram, trace if traced else None)[:2]
    seq = as_sequence(instrs, blocks, times, order)
    if one_warp and not carry:
        mine = [] if trace is not None else None
        (cycles, at_l2), (dram, at_dram) = (block_issue(seq, 0, len(seq), L2_LATENCY, None, None if loop else mine),
                                            block_issue(seq, 0, len(seq), DRAM_LATENCY))
        if loop:
            cycles = block_issue(seq, 0, len(seq), L2_LATENCY, at_l2, mine)[0]
            dram = block_issue(seq, 0, len(seq), DRAM_LATENCY, at_dram)[0]
        if trace is not None:  # the sequence's instructions back to their indices in `instrs`
            where = {id(x): i for i, x in enumerate(instrs)}
            trace += [(where[id(seq[k])], n, w, why, 1) for k, n, w, why, _ in mine]
    return total, seen, cycles, dram, fp32, imad, release_cycles(seq)


def as_sequence(instrs, blocks, times, order=None):
    """The blocks' instructions as one sequence: in the order a walk visited them (`order`, a block
    as often as it ran: an inner loop's blocks in turn, trip after trip), else in address order,
    each block `times` times (rounded, at least once)."""
    if order is not None:
        return [instrs[i] for b in order for i in range(blocks[b]["start"], blocks[b]["end"])]
    return [instrs[i] for b in sorted(times) for _ in range(max(1, round(times[b])))
            for i in range(blocks[b]["start"], blocks[b]["end"])]


def release_cycles(seq):
    """The cycles one warp alone takes from the start of `seq` (blocks as one sequence: as_sequence())
    to the first arrival that gives a stage back (RELEASE), with it, every global load hitting L2; 0
    without one. The tensor core's groups are carried from block to block: the arrival follows the
    wait for every group the iteration issued (the products of tile j - 1 that read the stage),
    which may be in another block than the products. In the tile part, the one whose release
    says how long a consumer holds its stage, the blocks are the consumers' walked loop: their
    address order is a warp's (in a part that holds both roles' blocks it need not be)."""
    at = next((n for n, x in enumerate(seq) if x["op"].startswith(RELEASE) and not x["never"]), None)
    return 0 if at is None else block_issue(seq, 0, at + 1, L2_LATENCY)[0]


def reaching(blocks, target):
    """The blocks from which some path reaches block `target` (itself included)."""
    preds = {}
    for b, blk in enumerate(blocks):
        for t in blk["succ"]:
            preds.setdefault(t, []).append(b)
    reached, stack = set(), [target]
    while stack:
        b = stack.pop()
        if b not in reached:
            reached.add(b)
            stack.extend(preds.get(b, []))
    return reached


def issue_profile(instrs, cold, params=None, trace=None):
    """One kernel's issue data, per warp, in parts, each (instructions, [seen of each kind], cycles,
    cycles from DRAM, FP32 instructions, IMAD instructions, release), `inner` a list of them;
    common/model/model.h's issue term (sass.h) weights them by the emulator's counts:
      fixed: every block the entry reaches outside the loops, once, but mask code (blocks whose
        instructions come mostly from `cold` source lines);
      tile: one iteration of the tile loop. For a kernel with mma.sync, the loop with the most HMMA,
        on its common path, inner loops times their trip counts (kernel_resources.tile_loop);
        otherwise the innermost loop with a BAR.SYNC of its own (where loops with barriers nest,
        chapter 04's Q tiles inside its K/V tiles, the one that runs most), its own blocks once
        (its inner loops and its mask code apart);
      outer: one iteration of the loops around the tile loop, their own blocks (chapter 04's K/V
        tiles around its Q tiles), mask code apart;
      inner: a list, one iteration of each of the other loops, each its own part, because each runs
        its own number of times (a decoding kernel's key loop thousands, its append loop a few):
        the innermost loops (of an unrolled loop and the remainder loops the compiler made of it,
        whose back edges come from one source line, the unrolled body, which the remainder does not
        outrun), each on its common path; then the loops between them and the tile loop, their own
        blocks (mask code apart). In the order of their first instruction.
      producer, consumers: a warp-specialized kernel's roles (its producer's warps give registers
        back, USETMAXREG.DEALLOC; its consumers' take more, TRY_ALLOC): the blocks outside the loops
        on the producer's own branch, and those on the consumers'; `fixed` is then the block's
        start, which every warp runs. And producer_loops: the indices in `inner` of the loops on
        the producer's own branch.
    Also lockstep: the tile loop, or a loop around it, waits at __syncthreads. `trace`, a list: gets
    the tile part's trace (mix(), block_issue()): where its cycles go, instruction by instruction."""
    blocks = kr.basic_blocks(instrs)
    loops = kr.find_loops(blocks)
    reach = kr.reachable(blocks)
    none = (0, [0] * len(KINDS), 0, 0, 0, 0, 0)

    def count(body, ops):
        return sum(1 for b in body for i in range(blocks[b]["start"], blocks[b]["end"])
                   if instrs[i]["op"].startswith(ops) and not instrs[i]["never"])

    def warm(bs):  # without the blocks of mask code (most of their instructions from `cold` lines)
        return {b for b in bs if 2 * sum(1 for i in range(blocks[b]["start"], blocks[b]["end"]) if instrs[i]["chain"] & cold)
                <= blocks[b]["end"] - blocks[b]["start"]}

    def inner_of(h):
        return set().union(*(loops[g] for g in loops if g != h and g in loops[h]), set())

    out, described, tile_blocks = {"tile": none}, [], set()
    head = kr.tile_loop_head(instrs, blocks, loops)
    if head is not None:
        order = []
        walk = kr.common_path(instrs, blocks, loops, head, loops[head], cold, params, order=order)
        tile_blocks = loops[head]
        walked = set(walk[0]) if walk else tile_blocks
        out["tile"] = mix(instrs, blocks, walk[0] if walk else {b: 1 for b in tile_blocks}, one_warp=True,
                          order=order if walk else None, loop=True, trace=trace)
        described.append("tile %d/%d%s" % (out["tile"][0], sum(out["tile"][1]), "" if walk else " (every block once)"))
    else:
        with_bar = [h for h in sorted(loops) if count(loops[h] - inner_of(h), "BAR.SYNC")]
        deepest = [h for h in with_bar if not any(g != h and g in loops[h] for g in with_bar)]
        if deepest:
            head = deepest[0]
            tile_blocks = loops[head] - inner_of(head)
            walked = warm(tile_blocks)
            out["tile"] = mix(instrs, blocks, {b: 1 for b in warm(tile_blocks)}, loop=not inner_of(head), trace=trace)
            described.append("tile %d/%d" % (out["tile"][0], sum(out["tile"][1])))
    groups, between, outer = {}, {}, set()
    for h in loops:
        if h in tile_blocks or loops[h] <= tile_blocks:
            continue
        if any(g != h and g in loops[h] for g in loops):
            own = loops[h] - inner_of(h) - tile_blocks
            if head is not None and head in loops[h]:
                outer |= own  # a loop around the tile loop: its own blocks run once per trip of it
            else:
                between[h] = own
            continue
        latch = max(b for b in loops[h] if h in blocks[b]["succ"])
        key = frozenset(instrs[blocks[latch]["end"] - 1]["chain"])
        weight = (sum(mix(instrs, blocks, {b: 1 for b in loops[h]})[1]), len(loops[h]))
        if key not in groups or weight > groups[key][0]:
            groups[key] = (weight, h)
    parts = []
    for _, h in groups.values():
        walk = kr.common_path(instrs, blocks, loops, h, loops[h], cold, params)
        parts.append((h, mix(instrs, blocks, walk[0] if walk else {b: 1 for b in loops[h]}, loop=True)))
    for h, own in between.items():
        if warm(own):  # not a whole iteration (its inner loops apart): costed from clear scoreboards
            parts.append((h, mix(instrs, blocks, {b: 1 for b in warm(own)})))
    parts.sort()
    out["inner"] = [part for _, part in parts]
    described += ["%d/%d" % (p[0], sum(p[1])) for p in out["inner"]]
    out["outer"] = mix(instrs, blocks, {b: 1 for b in warm(outer)})  # its inner loops apart, as `between`
    if outer:
        described.append("outer %d/%d" % (out["outer"][0], sum(out["outer"][1])))
    fixed = warm(reach - set().union(*loops.values(), set()))
    # Warp specialization (chapter 09's steps d onwards): after the block's start, which every warp
    # runs, the producer's warps give registers back (USETMAXREG.DEALLOC) and the consumers' take
    # more (TRY_ALLOC), each role on its own branch. `fixed` keeps the start (the blocks from which
    # both branches are reached); `producer` holds the fixed blocks of the producer's own branch,
    # `consumers` the others.
    def first(op):
        return next((b for b in sorted(reach) for i in range(blocks[b]["start"], blocks[b]["end"])
                     if instrs[i]["op"].startswith(op) and not instrs[i]["never"]), None)

    out["producer"], out["consumers"], out["producer_loops"] = none, none, []
    dealloc, alloc = first("USETMAXREG.DEALLOC"), first("USETMAXREG.TRY_ALLOC")
    if dealloc is not None and alloc is not None:
        producer, consumer = kr.reachable(blocks, dealloc), kr.reachable(blocks, alloc)
        # The start: the fixed blocks from which both roles are reached, i.e. those that reach
        # the entries of both (one walk back from each, not one walk forward per block).
        start = fixed & reaching(blocks, dealloc) & reaching(blocks, alloc)
        own = fixed & producer - consumer
        out["producer"] = mix(instrs, blocks, {b: 1 for b in own})
        out["consumers"] = mix(instrs, blocks, {b: 1 for b in fixed - start - own})
        fixed = start
        out["producer_loops"] = [j for j, (h, _) in enumerate(parts) if h in producer - consumer]
        described.append("start %d, producer %d/%d, loops %s, consumers %d" % (
            len(start), out["producer"][0], sum(out["producer"][1]), out["producer_loops"], out["consumers"][0]))
    out["fixed"] = mix(instrs, blocks, {b: 1 for b in fixed})
    # Its warps meet every tile when the tile loop, or a loop around it, waits at __syncthreads
    # (barrier 0, the whole block); chapter 09's named barriers pass turns between warpgroups instead.
    looped = (walked if tile_blocks else set()) | warm(outer)
    out["lockstep"] = any(instrs[i]["op"].startswith("BAR.SYNC") and not instrs[i]["never"] and instrs[i]["args"] == "0x0"
                          for b in looped for i in range(blocks[b]["start"], blocks[b]["end"]))
    out["loops"] = " ".join(described) + (" lockstep" if out["lockstep"] else "")
    return out


# ---- the data file ----------------------------------------------------------------------------------
def file_hash(path):
    """FNV-1a, 64 bits, over the file's bytes, in hex: common/model/sass_fresh.h computes the same at
    run time, to tell a learner whose kernel changed since the data was written."""
    h = 0xcbf29ce484222325
    for b in open(path, "rb").read():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def sources_path(out):
    """The C++ table of the sources the data file lists (sass_sm90.inc -> sass_sm90_sources.inc)."""
    return out[:-len(".inc")] + "_sources.inc" if out.endswith(".inc") else out + "_sources.inc"


def files_read(nvcc, src, target="sm_90"):
    """Every file but the system's and the CUDA toolkit's headers that nvcc reads to compile src for
    `target` (nvcc -MM), as absolute paths: a lab's own headers too, wherever it lives."""
    toolkit = os.path.dirname(os.path.dirname(os.path.realpath(nvcc))) + os.sep  # /usr/local/cuda-13.0/
    system = ("/usr/include/", "/usr/lib/") + ((toolkit,) if toolkit != "/usr/" else ())  # Debian's nvcc: /usr/bin
    r = subprocess.run([nvcc, "-std=c++20", "-MM", "-arch=" + target, "-I" + ROOT, "-I" + os.path.join(ROOT, "common"),
                        "-I" + os.path.join(ROOT, "common/simt/include"), src], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        kr.fail("nvcc -MM failed on %s:\n%s" % (src, r.stderr[-2000:]), 1)
    paths = {os.path.realpath(tok if os.path.isabs(tok) else os.path.join(ROOT, tok))
             for tok in r.stdout.replace("\\\n", " ").split(":", 1)[-1].split()}  # what follows "target:"
    return {p for p in paths if not p.startswith(system)}


def dependencies(nvcc, src, target="sm_90"):
    """The repository's files that nvcc reads to compile src for `target`, relative to it: what the
    data's hashes cover."""
    return {os.path.relpath(path, ROOT) for path in files_read(nvcc, src, target) if path.startswith(ROOT + os.sep)}


def sources():
    return sorted(os.path.relpath(g, ROOT) for g in glob.glob(os.path.join(ROOT, SOURCES)))


def arch(src, target="sm_90"):
    """What src's kernels are compiled for when the model asks for `target`: chapter 09's run on
    sm_90a alone (None for another target)."""
    if os.path.relpath(src, ROOT).startswith(SM90A):
        return "sm_90a" if target == "sm_90" else None
    return target


PARTS = ["fixed", "tile", "outer", "producer", "consumers"]
# Chapter 10's score mods as rows name them (harness/problem.h's score_name) and a problem with them.
SCORE_MODS = [("softcap", 30.0, False), ("alibi", 0.0, True), ("softcap+alibi", 30.0, True)]
MAX_LOOPS = 20  # common/model/sass.h's kSassLoops: the inner parts a kernel may have
# ModKinds no kernel applies as a rule: a packed batch (varlen, varlen_window) is served by chapter 10's
# steps e and f, whose Policies read the offsets themselves; steps a to d refuse it, so their rows for it
# would never be used.
NOT_A_RULE = ("varlen", "varlen_window")


def part_text(part):
    return "{%d, {%s}, %d, %d, %d, %d, %d}" % (part[0], ", ".join(str(v) for v in part[1]), *part[2:7])


def row_text(name, r):
    if len(r["inner"]) > MAX_LOOPS:
        kr.fail("%s has %d loops besides its tile loop; common/model/sass.h and this tool take %d: raise both"
                % (name, len(r["inner"]), MAX_LOOPS), 1)
    parts = ", ".join(part_text(r[p]) for p in PARTS)
    mask = sum(1 << j for j in r.get("producer_loops", []))
    return '{"%s", %d, %s, %s, {%s}, %#x},' % (name, r["registers"], "true" if r["lockstep"] else "false", parts,
                                               ", ".join(part_text(p) for p in r["inner"]), mask)


def write(out, rows, deps, version, nvdisasm_version):
    lines = ["// %s: what each kernel issues per instruction the emulator sees, from the sm_90 SASS (sm_90a for"
             " chapter 09)." % os.path.relpath(out, ROOT),
             "// Written by tools/sass_issue.py (its docstring says how) from %s and nvdisasm %s." % (version, nvdisasm_version),
             "// Do not edit: regenerate with tools/sass_issue.py --out %s after changing a source below;" % os.path.relpath(out, ROOT),
             "// CTest sass_data_fresh fails until then. The instructions are the compiler's; the cycles are the model's",
             "// (the compiler's stall counts with the latencies this tool's docstring cites). Nothing here ran on a GPU.",
             "//"]
    listed = [(f, file_hash(os.path.join(ROOT, f))) for f in sorted(deps)]
    lines += ["// source %s %s" % fh for fh in listed]
    lines += ["//", "// {kernel, registers, lockstep, %s, {inner, ...}, producer's loops (bit j: inner j)}: each part {instructions,"
              " {seen: %s}, cycles, cycles from DRAM, FP32, IMAD, release}" % (", ".join(PARTS), ", ".join(k for k, _ in KINDS))]
    lines += [row_text(name, rows[name]) for name in sorted(rows)]
    open(out, "w").write("\n".join(lines) + "\n")
    write_sources(out, listed)


def write_sources(out, listed):
    """The data file's sources and their hashes, [(path, hash)], as a C++ table for
    common/model/sass_fresh.h."""
    lines = ["// %s: the sources %s was written from, and their hashes (tools/sass_issue.py's file_hash)."
             % (os.path.relpath(sources_path(out), ROOT), os.path.relpath(out, ROOT)),
             "// Written with it by tools/sass_issue.py; do not edit."]
    lines += ['{"%s", 0x%sull},' % (f, h) for f, h in listed]
    open(sources_path(out), "w").write("\n".join(lines) + "\n")


def check(path):
    """Exit status: 0 when every source the data file names hashes as it did, 1 when not."""
    if not os.path.exists(path):
        kr.fail("%s does not exist: write it with tools/sass_issue.py --out %s" % (path, path))
    listed = listed_hashes(path)
    kernels = sum(line.startswith('{"') for line in open(path))
    edited = edited_sources(path)
    stale = ["%s %s" % (f, "is new" if f not in listed else "changed") for f in sorted(edited)]
    stale += ["%s is gone" % f for f in sorted(listed) if not os.path.exists(os.path.join(ROOT, f))]
    for s in stale:
        print("STALE " + s)
    print("%s: %d kernels from %d source files; %s" % (os.path.relpath(path, ROOT), kernels, len(listed),
                                                      "stale: regenerate with tools/sass_issue.py --out " + os.path.relpath(path, ROOT)
                                                      if stale else "up to date"))
    if not kernels or not listed:
        print("no kernels or no sources listed")
        return 1
    return 1 if stale else 0


def path_lines(name, instrs, cold, mask_only, masked_tile, diagonal):
    """(lines, by_place): the source lines whose code a kernel's common path steps around
    (issue_profile's `cold`), from kernel_resources' sets, and whether the kernel masks tiles by
    their place. A kernel that tests each tile's place against the diagonal (ch06::crosses_diagonal;
    chapter 06's kernels are lean_loop's, walked so already: chapter 09's step g) masks only the few
    tiles it crosses: the masked tile's code stays off its path, as it does off chapter 05's fastest
    step's."""
    by_place = any(x["chain"] & diagonal for x in instrs)
    return (cold if "lean_loop_kernel" in name else mask_only | masked_tile if by_place else mask_only), by_place


def params_table():
    """kernel_resources.smem_table with AttentionParams' offsets, which the common path's parameters
    need (without them every row would be the common path's); exit 2 without them."""
    smem = kr.smem_table([])
    if "params" not in smem or "mod" not in smem:
        kr.fail("could not read AttentionParams' offsets: a C++ compiler and the CUDA headers are needed "
                "(c++ or g++ on PATH; CUDA_HOME or /usr/local/cuda)")
    return smem


def find_tools(nvcc_given, nvdisasm_given):
    """(nvcc, nvdisasm) as kernel_resources.find_tool finds them; exit 2 when either is missing."""
    nvcc, nvdisasm = kr.find_tool("nvcc", nvcc_given), kr.find_tool("nvdisasm", nvdisasm_given)
    if not nvcc:
        kr.fail("nvcc not found (give --nvcc)")
    if not nvdisasm:
        kr.fail("nvdisasm not found: pip install nvidia-cuda-nvdisasm, or give --nvdisasm")
    return nvcc, nvdisasm


def count_sources(srcs, nvcc, nvdisasm, jobs, target="sm_90", by_source=None):
    """Compiles each source for `target` (arch()) and counts its kernels' SASS: ({row name: row}, {the
    repository's files nvcc read}), a row per kernel and per kind of mask or score mod its path
    depends on (below); `by_source`, when given, gets each source's own rows too."""
    smem = params_table()
    cold, mask_only = kr.cold_lines(), kr.mask_lines()
    masked_tile, diagonal = kr.masked_tile_lines(), kr.diagonal_lines()
    masking, causal = mask_only | masked_tile, kr.causal_lines() | masked_tile
    rows, deps = {}, set()
    with tempfile.TemporaryDirectory() as tmp:
        def one(src):
            where = os.path.join(tmp, re.sub(r"\W", "_", os.path.relpath(src, ROOT)))  # two files may share a name
            os.makedirs(where)
            log, sass = kr.disassemble(nvcc, nvdisasm, src, arch(src, target), where)
            return src, kr.parse_ptxas(log), sass, dependencies(nvcc, src)

        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            results = list(pool.map(one, srcs))
    mangled = sorted({m for _, _, sass, _ in results for m in sass})
    names = kr.demangle(mangled)
    for src, ptxas, sass, dep in results:
        deps |= dep | {os.path.relpath(src, ROOT)}
        for m, instrs in sass.items():
            name = names[m]
            lines, by_place = path_lines(name, instrs, cold, mask_only, masked_tile, diagonal)
            base = kr.params_base(name, arch(src, target))
            params = kr.common_params(smem, base=base)
            data = issue_profile(instrs, lines, params)
            data["registers"] = ptxas.get((m, arch(src, target)), {}).get("registers", 0)
            # A kernel whose path depends on the problem's mask has a row per kind of it besides:
            # "<name> causal=<kind>" and "<name> mask=<kind>" (lean_loop masks every tile of a causal
            # problem), "<name> mask_mod=<kind>" (chapter 10's step b applies the rule on every tile),
            # "<name> score_mod=<mods>" (step d changes every score), and a mask's kind with score
            # mods where both matter. Only a kernel that reads a kind's parameter word (or the 8 bytes
            # around it) can depend on it.
            variants = {name: data}

            def reads(offsets):
                words = {"c[0x0][%#x]" % (int(t[7:-1], 16) & ~k) for t in offsets for k in (0, 3, 7)}
                return any(w in x["args"] for x in instrs for w in words)

            def differs(v):
                return any(v[part] != data[part] for part in PARTS + ["inner"])

            masks, modded = [], reads(params["mods"])
            if reads(params["path"]):
                masks += [(" causal=%s" % k, dict(causal=v)) for k, v in kr.kind_names("Causal")]
                masks += [(" mask=%s" % k, dict(mask=v)) for k, v in kr.kind_names("MaskKind")]
            if modded:
                masks += [(" mask_mod=%s" % k, dict(mod=v)) for k, v in kr.mod_kinds()[1:] if k not in NOT_A_RULE]
            scores = [(" score_mod=" + k, dict(softcap=c, alibi=a)) for k, c, a in SCORE_MODS] if modded else []

            def profile(args):
                # Inside a masked tile the problem's mask is the path, not code to step around where
                # a branch is not decided by the parameters (whether a key is past Lk): with
                # attn_mask, every tile is masked, with its loads and the causal test before them;
                # with is_causal, the tiles the parameters send to the mask (lean_loop's every tile,
                # chapter 09's steps b to f), but not those a kernel sends by their place (above).
                params = kr.common_params(smem, base=base, **args)
                if args.get("mask"):
                    return issue_profile(instrs, lines - masking, params)
                v = issue_profile(instrs, lines, params)
                return issue_profile(instrs, lines - causal, params) if args.get("causal") and differs(v) and not by_place else v

            def loads(v):  # the global loads on the path (attn_mask's)
                return sum(part[1][LD] for part in [v[p] for p in PARTS] + v["inner"])

            found = {}
            for suffix, args in masks + scores:
                v = profile(args)
                # A kernel without attn_mask's code (chapter 06 instantiates one per mode) does not
                # take a mask: its mask rows would be the masked path without the mask.
                if differs(v) and (not args.get("mask") or loads(v) > loads(data)):
                    found[suffix] = args
                    variants[name + suffix] = dict(v, registers=data["registers"])
            for ms, ma in masks:
                for ss, sa in scores:
                    if ms in found and ss in found:
                        variants[name + ms + ss] = dict(profile(dict(ma, **sa)), registers=data["registers"])
            for key, row in variants.items():
                if key in rows and rows[key] != row:
                    kr.fail("two kernels named %s differ (%s)" % (key, src), 1)
                rows[key] = row
                if by_source is not None:
                    by_source.setdefault(src, {})[key] = row
                print("%-100s %s" % (key[:100] if key == name else ("  " + key[len(name):]), row["loops"]))
    return rows, deps


# ---- the build's own rows (--live) ------------------------------------------------------------------
TOOLS = ("tools/sass_issue.py", "tools/kernel_resources.py")


def listed_hashes(path):
    """{source: hash} the data file names."""
    return dict(re.findall(r"^// source (\S+) ([0-9a-f]+)$", open(path).read(), re.M))


def edited_sources(data):
    """{source: its hash now} of the sources edited since `data` was written, and the chapters' new
    .cu files (a file gone is no kernel's any more)."""
    listed = listed_hashes(data)
    now = {f: file_hash(os.path.join(ROOT, f)) for f in listed if os.path.exists(os.path.join(ROOT, f))}
    edited = {f: h for f, h in now.items() if h != listed[f]}
    edited.update({f: file_hash(os.path.join(ROOT, f)) for f in sources() if f not in listed})
    return edited


def c_string(s):
    """s as a C++ string literal."""
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def write_live(out, rows, edited, why):
    """The C++ table common/model/sass.h's find_sass reads first (kSassLive), written only when its
    text changes, touched always (the build's rule ran)."""
    lines = ["// %s: the SASS rows of the kernels edited since common/model/sass_sm90.inc was written, compiled"
             " by the counters build (tools/sass_issue.py --live). Do not edit." % os.path.basename(out),
             '#include "model/sass.h"', "", "namespace attn {", "namespace {"]
    if rows:
        lines += ["const SassKernel kRows[] = {"] + ["    " + row_text(name, rows[name]) for name in sorted(rows)] + ["};"]
    if edited:
        lines += ["const SassSource kEdited[] = {"] + ['    {"%s", 0x%sull},' % (f, h) for f, h in sorted(edited.items())] + ["};"]
    lines += ["}  // namespace", "const SassLive kSassLive = {%s, %d, %s, %d, %s};" % (
        "kRows" if rows else "nullptr", len(rows), "kEdited" if edited else "nullptr", len(edited), c_string(why)),
        "}  // namespace attn"]
    return write_generated(out, "\n".join(lines) + "\n", why)


def write_generated(out, text, why):
    """Writes a table the build compiles only when its text changes, and touches it always (the
    build's rule ran); returns the text."""
    if not os.path.exists(out) or open(out).read() != text:
        tmp = out + ".tmp"
        open(tmp, "w").write(text)
        os.replace(tmp, out)
    else:
        os.utime(out)
    if why:
        # Older than its inputs: the build runs the rule again next time (nvdisasm installed, say),
        # while what includes the file is not rebuilt for nothing (Ninja re-reads the time).
        os.utime(out, (0, 0))
    return text


def live(out, nvcc_given, nvdisasm_given, jobs):
    """--live: the rows of every kernel built from a source edited since the data file was written
    (each edited .cu, and each .cu that includes an edited header), compiled and counted as the data
    file's are; none when nothing was edited. The file names the edited sources and their hashes, so
    that a profile knows which rows are the build's own; when they cannot be compiled (no nvcc or
    nvdisasm, or these tools themselves edited), it says why and holds no rows."""
    edited = edited_sources(DEFAULT)
    written = open(out).read() if os.path.exists(out) else ""
    if written and '""};' in written and edited == dict(re.findall(r'^    \{"(\S+)", 0x([0-9a-f]+)ull\},$', written, re.M)):
        os.utime(out)  # the same edits, compiled: the rows already written hold
        print("%s: up to date (%d edited sources)" % (os.path.relpath(out), len(edited)))
        return
    rows, why = {}, ""
    nvcc, nvdisasm = kr.find_tool("nvcc", nvcc_given), kr.find_tool("nvdisasm", nvdisasm_given)
    if not edited:
        pass
    elif any(f in TOOLS for f in edited):
        why = "%s changed: every row would; regenerate the data with python3 tools/sass_issue.py --out %s" % (
            " and ".join(f for f in TOOLS if f in edited), os.path.relpath(DEFAULT, ROOT))
    elif not nvcc or not nvdisasm:
        why = "the edited kernels' SASS was not compiled: %s" % (
            "nvcc not found" if not nvcc else "nvdisasm not found (pip install nvidia-cuda-nvdisasm, then rebuild)")
    else:
        chapter = set(sources())
        cus = {f for f in edited if f in chapter}
        headers = set(edited) - cus
        try:
            if headers:
                cus |= {f for f in chapter - cus if dependencies(nvcc, os.path.join(ROOT, f)) & headers}
            if cus:  # an edited header that no kernel includes has no rows to give
                rows, _ = count_sources([os.path.join(ROOT, f) for f in sorted(cus)], nvcc, nvdisasm, jobs)
        except SystemExit:  # nvcc rejected an edited file, or the tools could not read it: said above
            rows, why = {}, "the edited kernels' SASS could not be compiled: the build's log says why"
    write_live(out, rows, edited, why)
    print("%s: %d rows from %d edited sources%s" % (os.path.relpath(out), len(rows), len(edited), ("; " + why) if why else ""))


# ---- other GPUs' architectures (--archs) ---------------------------------------------------------------
# Besides the tools, what the rows' names come from: the kinds' spellings (kind_names).
NAMES = ("common/harness/problem.cpp",)


def cache_key(target, versions, files):
    """What a source's rows for `target` depend on: the architecture, nvcc's and nvdisasm's versions,
    these tools, the rows' names (NAMES) and every file nvcc read to compile it (`files`), hashed."""
    text = "\n".join([target] + versions + ["%s %s" % (f, file_hash(os.path.join(ROOT, f)))
                                            for f in sorted(set(files) | set(TOOLS) | set(NAMES))])
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def tool_version(tool):
    """The release line of `tool --version` (nvcc, nvdisasm)."""
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.splitlines()
    return next((l for l in out if "release" in l), os.path.basename(tool))


def make_path(p):
    """p as a Makefile rule (a depfile) spells it: spaces, '#' and '$' escaped."""
    return p.replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")


def write_archs(out, tables, why):
    """The C++ table common/model/sass.h's find_sass reads for a GPU that is not sm_90 (kSassArchs):
    {target: {row name: row text}} (write_generated)."""
    lines = ["// %s: the SASS rows of every chapter's kernels for other architectures than sm_90, compiled"
             " by the counters build (tools/sass_issue.py --archs; FLASHSTEPS_SASS_ARCHS). Do not edit." % os.path.basename(out),
             '#include "model/sass.h"', "", "namespace attn {", "namespace {"]
    entries = []
    for target, rows in sorted(tables.items()):
        if not rows:
            continue
        cc = int(re.match(r"sm_(\d+)", target).group(1))
        lines += ["const SassKernel kSm%d[] = {" % cc] + ["    " + rows[name] for name in sorted(rows)] + ["};"]
        entries.append("{%d, kSm%d, %d}" % (cc, cc, len(rows)))
    if entries:
        lines.append("const SassArchTable kTables[] = {%s};" % ", ".join(entries))
    lines += ["}  // namespace", "const SassArchs kSassArchs = {%s, %d, %s};" % (
        "kTables" if entries else "nullptr", len(entries), c_string(why)), "}  // namespace attn"]
    write_generated(out, "\n".join(lines) + "\n", why)


def arch_tables(out, targets, cache, nvcc_given, nvdisasm_given, jobs, depfile=None):
    """--archs: every chapter's kernels compiled for each of `targets` (sm_80, sm_89, ...: the
    architectures of the GPUs gpus.h names beside the H100's) and counted as the data file's are
    (chapter 09's run on sm_90 alone: none). Each source's rows are kept in `cache` under a hash of
    what they came from (cache_key): a build after an edit compiles the sources the edit reaches,
    those alone, and a build with nothing edited compiles nothing. `depfile`: the files nvcc read, as
    a Makefile rule for `out` (the build runs the rule again when one changes)."""
    nvcc, nvdisasm = kr.find_tool("nvcc", nvcc_given), kr.find_tool("nvdisasm", nvdisasm_given)
    if not nvcc or not nvdisasm:
        why = "%s not found: no SASS for %s" % ("nvcc" if not nvcc else "nvdisasm (pip install nvidia-cuda-nvdisasm, then rebuild)",
                                                ", ".join(targets))
        write_archs(out, {}, why)
        print(why)
        if depfile:
            open(depfile, "w").write("%s:\n" % make_path(out))
        return
    versions = [tool_version(nvcc), tool_version(nvdisasm)]
    pairs = [(f, t) for t in targets for f in sources() if arch(os.path.join(ROOT, f), t)]
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        deps = dict(zip(pairs, pool.map(lambda ft: dependencies(nvcc, os.path.join(ROOT, ft[0]), ft[1]) | {ft[0]}, pairs)))
    tables, failed, compiled = {}, [], 0
    for target in targets:
        rows, todo = {}, []
        for f in [f for f, t in pairs if t == target]:
            key = cache_key(target, versions, deps[(f, target)])
            entry = os.path.join(cache, target, re.sub(r"\W", "_", f) + ".rows")
            held = open(entry).read().split("\n") if os.path.exists(entry) else []
            if held and held[0] == "// " + key:
                rows.update((re.match(r'\{"([^"]+)"', l).group(1), l) for l in held[1:] if l)
            else:
                todo.append((f, key, entry))
        if todo:
            got = {}
            try:
                count_sources([os.path.join(ROOT, f) for f, _, _ in todo], nvcc, nvdisasm, jobs, target, got)
            except SystemExit:  # nvcc rejected a source for this architecture: said above
                failed.append(target)
                continue
            compiled += len(todo)
            os.makedirs(os.path.join(cache, target), exist_ok=True)
            for f, key, entry in todo:
                mine = {name: row_text(name, r) for name, r in got.get(os.path.join(ROOT, f), {}).items()}
                rows.update(mine)
                open(entry + ".tmp", "w").write("\n".join(["// " + key] + [mine[n] for n in sorted(mine)]) + "\n")
                os.replace(entry + ".tmp", entry)
        tables[target] = rows
    why = ("nvcc could not compile the kernels for %s: the build's log says why" % ", ".join(failed)) if failed else ""
    write_archs(out, tables, why)
    if depfile:
        read = sorted({os.path.join(ROOT, d) for fs in deps.values() for d in fs} | {os.path.join(ROOT, f) for f in NAMES})
        open(depfile, "w").write("%s: %s\n" % (make_path(out), " ".join(make_path(p) for p in read)))
    print("%s: %s; %d sources compiled, the rest from %s" % (
        os.path.relpath(out), ", ".join("%s %d rows" % (t, len(r)) for t, r in sorted(tables.items())) or "no rows",
        compiled, os.path.relpath(cache)) + ("; " + why if why else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("\n"):])
    ap.add_argument("--out", help="the data file to write (common/model/sass_sm90.inc)")
    ap.add_argument("--check", nargs="?", const=DEFAULT, metavar="FILE", help="check that FILE (default %(const)s) is up to date")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin)")
    ap.add_argument("--nvdisasm", help="nvdisasm to use (default: on PATH, the CUDA toolkit or the PyPI package)")
    ap.add_argument("--live", metavar="FILE", help="write the rows of the kernels edited since the data file was "
                    "written to this C++ file (the counters build's rule)")
    ap.add_argument("--archs", metavar="FILE", help="write every kernel's rows for the --arch architectures to this "
                    "C++ file (the counters build's rule for FLASHSTEPS_SASS_ARCHS)")
    ap.add_argument("--arch", action="append", default=[], help="with --archs: an architecture, sm_75 to sm_120 "
                    "(repeatable)")
    ap.add_argument("--cache", help="with --archs: the folder of each source's rows, by hash")
    ap.add_argument("--depfile", help="with --archs: also write the files nvcc read, as a Makefile rule for it")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if (a.out is not None) + (a.check is not None) + (a.live is not None) + (a.archs is not None) != 1:
        kr.fail("give one of --out FILE, --check, --live FILE or --archs FILE")
    if a.archs:
        for t in a.arch:
            if not re.fullmatch(r"sm_(75|8[0-9]|1[0-9][0-9])", t):
                kr.fail("--arch %s: give sm_75 to sm_120 but sm_90 (whose rows are common/model/sass_sm90.inc)" % t)
        if not a.arch or not a.cache:
            kr.fail("--archs needs --arch (one or more) and --cache")
        if not os.path.isdir(os.path.dirname(os.path.abspath(a.archs))):
            kr.fail("--archs %s: no such folder" % a.archs)
        arch_tables(a.archs, sorted(set(a.arch)), a.cache, a.nvcc, a.nvdisasm, a.jobs, a.depfile)
        return
    if a.check:
        sys.exit(check(a.check))
    if a.live:
        if not os.path.isdir(os.path.dirname(os.path.abspath(a.live))):
            kr.fail("--live %s: no such folder" % a.live)
        live(a.live, a.nvcc, a.nvdisasm, a.jobs)
        return
    if not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
        kr.fail("--out %s: no such folder" % a.out)
    nvcc, nvdisasm = find_tools(a.nvcc, a.nvdisasm)
    srcs = [os.path.join(ROOT, f) for f in sources()]
    version, nd_version = tool_version(nvcc), tool_version(nvdisasm)
    rows, deps = count_sources(srcs, nvcc, nvdisasm, a.jobs)
    deps |= {"tools/sass_issue.py", "tools/kernel_resources.py"}  # how the data is counted is a source too
    write(a.out, rows, deps, version, nd_version)
    print("wrote %s: %d kernels from %d source files" % (a.out, len(rows), len(deps)))


if __name__ == "__main__":
    main()
