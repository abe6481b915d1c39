#!/usr/bin/env python3
"""test_sass_issue.py: tools/sass_issue.py splits a kernel's SASS into what the model's issue term needs.

  python3 tests/test_sass_issue.py      # exit 0 pass, 1 fail

On a hand-written SASS listing (tests/data/issue_kernel.sass), so it needs neither nvcc nor nvdisasm:
the blocks outside the loops (fixed), the tile loop found by its own BAR.SYNC (its inner loops apart),
the inner loop unrolled by 4 kept and its remainder (the same source line) left out, and a BRA.DIV
slow path after the EXIT that must make no loop. The expected counts are worked out by hand from
the listing, not read from the script. A second kernel nests loops with barriers: the inner one is the
tile loop, the outer one's own blocks the outer part. A third, for sm_90a (tests/data/issue_sm90a.sass),
is warp-specialized as chapter 09's: a consumer tile loop with named barriers and a wgmma group, whose
cycles wait for the group, and a producer loop, neither an mbarrier try-wait's retry nor a BRA.U.ANY
making a loop. Also: --check fails on a data file whose source hash is stale; tools/sass_chain.py's trace
adds up to a part's cycles, and its listing of step i that the notes quote
(results/static-sm90a/chain_persistent.txt) has the data file's totals.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import kernel_resources as kr  # noqa: E402
import sass_chain  # noqa: E402
import sass_issue as si  # noqa: E402


def main():
    check = Checks("sass_issue")
    sass = kr.parse_sass((ROOT / "tests" / "data" / "issue_kernel.sass").read_text())
    instrs = sass.get("_Z5naivev", [])
    check(len(instrs) == 30, f"30 instructions parsed (got {len(instrs)})")
    blocks = kr.basic_blocks(instrs)
    loops = kr.find_loops(blocks)
    # The inner loop, its remainder, the tile loop; not the slow path's BRA back to 0x40, nor 0x1d0.
    check(sorted(len(b) for b in loops.values()) == [1, 1, 4], f"loops of 1, 1 and 4 blocks (got {sorted(len(b) for b in loops.values())})")
    r = si.issue_profile(instrs, set())
    names = [k for k, _ in si.KINDS]

    def kinds(counts):
        return {names[i]: n for i, n in enumerate(counts) if n}

    # Outside the loops: 0x00-0x30 (4), BRA.DIV (1), SHFL (1), STG + EXIT (2); seen: LDG, SHFL, STG.
    check(r["fixed"][0] == 8 and kinds(r["fixed"][1]) == {"ld": 1, "st": 1, "shfl": 1},
          f"fixed: 8 instructions, seen an ld, an st and a shuffle (got {r['fixed'][0]}, {kinds(r['fixed'][1])})")
    # The tile loop's own blocks: BAR + MOV, VIADD + ISETP + BRA.
    check(r["tile"][0] == 5 and kinds(r["tile"][1]) == {"bar": 1},
          f"tile: 5 instructions, its BAR.SYNC seen (got {r['tile'][0]}, {kinds(r['tile'][1])})")
    # The unrolled body: 9 instructions, 4 LDS; the remainder (4 instructions, 1 LDS) left out.
    check(len(r["inner"]) == 1 and r["inner"][0][0] == 9 and kinds(r["inner"][0][1]) == {"lds": 4},
          f"inner: one loop, the unrolled body's 9 instructions, 4 LDS (got {r['inner']})")
    check(r["outer"][0] == 0, f"outer: no loop around the tile loop (got {r['outer'][0]})")
    check(si.row_text("k", dict(r, registers=32)) ==
          '{"k", 32, true, {8, {0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0}, 8, 8, 0, 0, 0}, {5, {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, 5, 5, 0, 1, 0}, '
          '{0, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0, 0}, {0, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0, 0}, '
          '{0, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0, 0}, {{9, {0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0}, 9, 9, 2, 0, 0}}, 0x0},',
          "the data file's row: registers, lockstep (the tile loop waits at __syncthreads), then fixed, tile, outer, the producer's and the consumers', then "
          "each other loop: instructions, seen kinds in KINDS' order, one warp's cycles, global loads from L2 and from "
          "DRAM (one per instruction in a listing without control bits), its FP32 and IMAD instructions (the unrolled "
          "body's 2 FFMA, the tile's IMAD.MOV), the cycles to a stage given back (none here), and the producer's loops "
          "as a bit mask")
    # Control bits (nvdisasm -hex): an LDS that sets scoreboard 0 (stall 1), an FADD that waits on it
    # (stall 4), an HMMA (stall 6): 29 cycles for the shared-memory load, then 4, then 6.
    def ins(op, stall, wbar=7, wait=0):
        return {"op": op, "ctl": {"stall": stall, "wbar": wbar, "rbar": 7, "wait": wait}}
    seq = [ins("LDS", 1, wbar=0), ins("FADD", 4, wait=1), ins("HMMA.16816.F32", 6)]
    got = si.block_cycles(seq, 0, 3)
    check(got == 29 + 4 + 6, f"block_cycles: a wait on the LDS's scoreboard, then the encoded stalls (got {got}, want 39)")
    # The trace (tools/sass_chain.py's listing): each instruction's cycles, its wait and what for,
    # adding up to the block's.
    trace = []
    si.block_issue(seq, 0, 3, trace=trace)
    check(trace == [(0, 1, 0, "", 1), (1, 28 + 4, 28, "LDS", 1), (2, 6, 0, "", 1)] and sum(e[1] for e in trace) == got,
          f"block_issue's trace: the FADD waits 28 cycles for the LDS, then stalls 4; the sum the block's 39 (got {trace})")
    # A global load's wait: L2's hit latency, or DRAM's.
    seq = [ins("LDG.E", 1, wbar=2), ins("FADD", 4, wait=4)]
    got = (si.block_cycles(seq, 0, 2), si.block_cycles(seq, 0, 2, si.DRAM_LATENCY))
    check(got == (272 + 4, 484 + 4), f"block_cycles: an LDG's result from L2 or from DRAM (got {got}, want (276, 488))")
    # Carried from block to block: an LDG guarded in its own block, its first use after the join
    # (nvcc's way with `if (in bounds) x = load`). Alone each block costs its stalls; in mix the use
    # waits for the load's L2 latency less the cycles in between.
    seq = [dict(ins("LDG.E", 1, wbar=2), never=False), dict(ins("IADD3", 3), never=False),
           dict(ins("FADD", 4, wait=4), never=False)]
    blks = [{"start": 0, "end": 2}, {"start": 2, "end": 3}]
    alone = si.block_cycles(seq, 0, 2) + si.block_cycles(seq, 2, 3)
    got = si.mix(seq, blks, {0: 1, 1: 1})[2:4]
    check(alone == 8 and got == (272 + 4, 484 + 4),
          f"mix: the join's FADD waits for the LDG of the block before (got {got} with blocks alone {alone}, want (276, 488), 8)")
    # The same loop's trace, its second block run 4 times a trip, costed in the steady state (the
    # second pass: the LDG asked for in the pass before has arrived): each entry weighted by its
    # block's trips, the sum the cycles mix returns, the instructions counted 2 + 4 (sass_chain's).
    trace, weighted = [], si.mix(seq, blks, {0: 1, 1: 4}, loop=True)
    traced = si.mix(seq, blks, {0: 1, 1: 4}, loop=True, trace=trace)
    listing = sass_chain.report("k", [dict(x, addr=0, args="", line=None) for x in seq], trace, 3)
    check(traced == weighted and sum(e[1] for e in trace) == traced[2] and [e[4] for e in trace] == [1, 1, 4]
          and "6 instructions, %d cycles" % traced[2] in listing[1],
          f"mix's trace in a carried loop: weighted by trips, adding up to its cycles, the listing 6 instructions "
          f"(got {trace}, {traced[2]}, {listing[1]})")
    wg = seq + [dict(ins("WARPGROUP.DEPBAR.LE", 1), never=False, args="gsb0, 0x0")]
    got = si.mix(wg, blks + [{"start": 3, "end": 4}], {0: 1, 1: 1, 2: 1})[2]
    check(got == alone + 1, f"mix: with wgmma (roles' blocks interleave) each block starts clear (got {got}, want {alone + 1})")
    # The tile part (one_warp: the consumers' loop, in a warp's order) carries the tensor core's
    # groups too: a DEPBAR in the block after its HGMMA waits for the group, 128 cycles (wgmma's
    # latency) from its start, then its own cycle; each block clear, 1 + 1.
    hg = [dict(ins("HGMMA.64x128x16.F32", 1), never=False, args="gsb0"),
          dict(ins("WARPGROUP.DEPBAR.LE", 1), never=False, args="gsb0, 0x0")]
    two = [{"start": 0, "end": 1}, {"start": 1, "end": 2}]
    got = (si.mix(hg, two, {0: 1, 1: 1})[2], si.mix(hg, two, {0: 1, 1: 1}, one_warp=True)[2])
    check(got == (2, si.WGMMA_LATENCY + 1),
          f"mix: the tile part's DEPBAR waits for the block before's HGMMA (got {got}, want (2, {si.WGMMA_LATENCY + 1}))")
    hi = 0x042fec00000418ff  # an HMMA's upper word from nvdisasm -hex: stall 6, no scoreboard set, waits on scoreboard 1
    c = kr.control(hi)
    check(c == {"stall": 6, "wbar": 7, "rbar": 7, "wait": 2}, f"control bits of 0x{hi:016x} (got {c})")

    # Loops with barriers nested: the inner one is the tile loop, the outer one's own blocks the
    # outer part (once per trip of it), nothing inner; the blocks outside both, fixed.
    n = si.issue_profile(sass.get("_Z6nestedv", []), set())
    check(n["tile"][0] == 6 and kinds(n["tile"][1]) == {"lds": 1, "bar": 1},
          f"nested: the tile is the inner loop, 6 instructions, an LDS and a BAR.SYNC (got {n['tile'][0]}, {kinds(n['tile'][1])})")
    check(n["outer"][0] == 7 and kinds(n["outer"][1]) == {"ld": 1, "sts": 1, "bar": 1},
          f"nested: the outer loop's own 7 instructions, an LDG, an STS, a BAR.SYNC (got {n['outer'][0]}, {kinds(n['outer'][1])})")
    check(n["inner"] == [] and n["fixed"][0] == 4 and kinds(n["fixed"][1]) == {"st": 1},
          f"nested: no inner loop; fixed, 4 instructions and the STG (got {n['inner']}, {n['fixed'][0]}, {kinds(n['fixed'][1])})")
    check(names == ["cp.async", "ld", "st", "atom", "ldsm", "lds", "sts", "mma", "bar", "shfl", "wgmma", "tma"],
          "KINDS in the order common/model/sass.h reads them")
    # The two latencies the cycles are counted with are those the model takes the line through
    # (sass.h), and the H100 SXM5's of gpus.h: the model's H100 then reads the cycles as counted.
    sass_h = (ROOT / "common" / "model" / "sass.h").read_text()
    m = re.search(r"kSassL2Latency = ([0-9.]+), kSassDramLatency = ([0-9.]+);", sass_h)
    h100 = re.search(r'\.key = "h100",.*?\.l2_latency_clk = ([0-9.]+), \.dram_latency_clk = ([0-9.]+),',
                     (ROOT / "common" / "gpus" / "gpus.h").read_text(), re.S)
    pairs = [tuple(float(x) for x in g.groups()) if g else None for g in (m, h100)]
    check(pairs == [(si.L2_LATENCY, si.DRAM_LATENCY)] * 2,
          f"sass_issue.py's L2_LATENCY, DRAM_LATENCY = sass.h's kSass*Latency = gpus.h's H100 row (got {pairs}, "
          f"{(si.L2_LATENCY, si.DRAM_LATENCY)})")

    # sm_90a (tests/data/issue_sm90a.sass): a consumer tile loop and a producer loop; neither the
    # try-wait's retry nor the BRA.U.ANY around UTMALDG makes a loop.
    ws = kr.parse_sass((ROOT / "tests" / "data" / "issue_sm90a.sass").read_text()).get("_Z8consumerv", [])
    wb = kr.basic_blocks(ws)
    heads = sorted(ws[wb[h]["start"]]["addr"] for h in kr.find_loops(wb))
    check(heads == [0x50, 0x130], f"sm_90a: two loops, the tile loop at 0x50 and the producer's at 0x130 (got {[hex(h) for h in heads]})")
    w = si.issue_profile(ws, set())
    # The tile: 0x50-0x100, its named barrier's BAR.SYNC and BAR.ARV (the emulator counts the warps each
    # release frees, those that arrived too) and two HGMMA. Its cycles: 2 for the try-wait's block;
    # then the HGMMA issued at 2 runs 64 cycles (128 columns at one m16n8k16 per 4 clocks on the
    # sub-partition), the second starts at 66, its result wgmma's latency later, 194, where the DEPBAR
    # waits; 5 more instructions: 2 + 194 + 5 = 201. It gives its stage back with the second of them:
    # released at 2 + 194 + 2 = 198 (the producer's arrival, which announces bytes, gives none back).
    check(w["tile"] == (12, [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0], 201, 201, 0, 0, 198),
          f"sm_90a tile: 12 instructions, 2 barriers, 2 HGMMA, 201 cycles waiting for the wgmma group, its stage "
          f"given back at 198 (got {w['tile']})")
    # The tile part's trace adds up to its cycles, the DEPBAR's wait for the group among them
    # (tools/sass_chain.py lists it; in the steady state, the second pass, as the cycles): it is
    # reached after 5 instructions of a cycle each and waits until 194.
    trace = []
    si.issue_profile(ws, set(), None, trace)
    waits = [(ws[i]["op"], w, why) for i, _, w, why, _ in trace if w]
    check(round(sum(e[1] for e in trace)) == 201 and waits == [("WARPGROUP.DEPBAR.LE", 194 - 5, "wgmma")],
          f"sm_90a tile's trace: 201 cycles, of which the DEPBAR waits 189 for the wgmma group (got "
          f"{sum(e[1] for e in trace)}, {waits})")
    listing = sass_chain.report("consumer", ws, trace, 3)
    check("12 instructions, 201 cycles" in listing[1] and any("waiting for wgmma groups" in x and x.endswith(" 189") for x in listing),
          f"sass_chain's listing: the total and the wait for the wgmma groups (got {listing[:5]})")
    # Two MUFU with an FADD stalling 7 between them: one every 8 cycles, the unit's pace.
    mufu = [{"op": "MUFU.EX2", "args": "R1, R1", "addr": 0, "line": None}, {"op": "FADD", "args": "R2, R2, R1", "addr": 16, "line": None},
            {"op": "MUFU.EX2", "args": "R3, R3", "addr": 32, "line": None}]
    listing = sass_chain.report("k", mufu, [(0, 1, 0, "", 1), (1, 7, 0, "", 1), (2, 1, 0, "", 1)], 3)
    check(any(x.startswith("MUFU: 2, one every 8.0 cycles") for x in listing), f"sass_chain's MUFU pace (got {listing})")
    # results/static-sm90a/chain_persistent.txt, sass_chain.py's listing of step i that the notes
    # quote: its totals are the data file's tile part of the same kernel (regenerate it with the data).
    chain = (ROOT / "results" / "static-sm90a" / "chain_persistent.txt").read_text()
    data = (ROOT / "common" / "model" / "sass_sm90.inc").read_text()
    for d in (128, 64):
        listed = re.search(r"persistent_kernel<__half, %d>.*?\n.*?: (\d+) instructions, (\d+) cycles" % d, chain, re.S)
        row = re.search(r'persistent_kernel<__half, %d>\(.*?\)", \d+, \w+, \{[^{}]*\{[^{}]*\}[^{}]*\}, '
                        r'\{(\d+), \{[^{}]*\}, (\d+),' % d, data)
        got = (listed.groups() if listed else None, row.groups() if row else None)
        check(listed is not None and got[0] == got[1],
              f"chain_persistent.txt at d = {d}: the data file's tile part of step i (instructions, cycles; got {got}): "
              "tools/sass_chain.py again after a change to step i")
    for args, why in ((["no_such.cu", "k"], "not a kernel file"), (["README.md", "k"], "not a kernel file"),
                      (["09_hopper/persistent.cu", "k", "--top", "0"], "at least 1")):
        proc = subprocess.run([sys.executable, str(ROOT / "tools" / "sass_chain.py")] + args, capture_output=True, text=True, cwd=ROOT)
        check(proc.returncode == 2 and why in proc.stderr,
              f"sass_chain.py {' '.join(args)}: exit 2, {why!r} (got {proc.returncode}, {proc.stderr[-200:]!r})")
    check(w["inner"] == [(6, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 6, 6, 0, 0, 0)],
          f"sm_90a: the producer's loop, 6 instructions and a UTMALDG (got {w['inner']})")
    # The block's start (4 instructions, the __syncthreads), every warp's; each role's own fixed
    # blocks (its USETMAXREG and its EXIT), not the other's nor the retry.
    check(w["fixed"][0] == 4 and kinds(w["fixed"][1]) == {"bar": 1},
          f"sm_90a fixed: the start, 4 instructions and the __syncthreads, not the retry (got {w['fixed']})")
    check(w["consumers"][0] == 2 and w["producer"][0] == 2 and not kinds(w["consumers"][1]) and not kinds(w["producer"][1]),
          f"sm_90a: each role its USETMAXREG and EXIT (got consumers {w['consumers']}, producer {w['producer']})")
    none = (0, [0] * len(names), 0, 0, 0, 0, 0)
    check(r["producer"] == none and r["consumers"] == none,
          f"a kernel without USETMAXREG has no role parts (got {r['producer']}, {r['consumers']})")
    check(w["producer_loops"] == [0] and r["producer_loops"] == [],
          f"the loop on the producer's branch is the producer's (got {w['producer_loops']}; {r['producer_loops']} without USETMAXREG)")
    check(w["lockstep"] is False, "sm_90a: named barriers that pass a turn do not make the tile loop lockstep")
    check(r["lockstep"] is True, "a tile loop with __syncthreads is lockstep")
    maps = "k(CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, attn::AttentionParams)"
    check((kr.params_base(maps), kr.params_base("k(attn::AttentionParams)")) == (0x400, 0x210),
          f"AttentionParams after three 128-byte-aligned tensor maps at 0x400, else at 0x210 "
          f"(got {kr.params_base(maps):#x}, {kr.params_base('k(attn::AttentionParams)'):#x})")
    starts = [kr.params_base("k(attn::AttentionParams)", a) for a in ("sm_75", "sm_80", "sm_89", "sm_90a", "sm_100", "sm_120")]
    check(starts == [0x160, 0x160, 0x160, 0x210, 0x380, 0x380],
          f"the parameters' start by architecture: 0x160 to sm_89, 0x210 on sm_90, 0x380 from sm_100 (got {[hex(s) for s in starts]})")
    # sm_80's way out of a loop: `@!P0 CALL.REL.NOINC` to the code after it, then the BRA back. The
    # call is a jump (the loop and what follows are reached); a call of a routine by name is not.
    listing = """
        .text._Z4loopv:
        /*0000*/                   MOV R0, RZ ;
.L_x_1:
        /*0010*/                   LDG.E R2, [R4.64] ;
        /*0020*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0030*/                   ISETP.NE.AND P0, PT, R0, 0x10, PT ;
        /*0040*/              @!P0 CALL.REL.NOINC `(.L_x_2) ;
        /*0050*/                   BRA `(.L_x_1) ;
.L_x_2:
        /*0060*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_rcp_rn_f32_slowpath) ;
        /*0070*/                   STG.E [R4.64], R2 ;
        /*0080*/                   EXIT ;
"""
    li = kr.parse_sass(listing)["_Z4loopv"]
    lb = kr.basic_blocks(li)
    loop_heads = sorted(li[lb[h]["start"]]["addr"] for h in kr.find_loops(lb))
    reached = sorted(li[i]["addr"] for b in kr.reachable(lb) for i in range(lb[b]["start"], lb[b]["end"]))
    check(loop_heads == [0x10] and reached == list(range(0, 0x90, 0x10)),
          f"CALL.REL.NOINC to a label leaves the loop; one to a routine falls through to the STG and EXIT "
          f"(loops at {[hex(h) for h in loop_heads]}, instructions reached {[hex(a) for a in reached]})")

    # --check: a data file whose hash no longer matches its source is stale (exit 1), one that
    # matches is not (exit 0) unless a chapter's .cu is missing from it: the real file lists them all.
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.inc"
        src = "tests/data/issue_kernel.sass"
        good = si.file_hash(str(ROOT / src))
        listed = "".join(f"// source {f} {si.file_hash(str(ROOT / f))}\n" for f in si.sources())
        data.write_text(listed + f"// source {src} {good}\n" + '{"k", 1, {0, {}}, {0, {}}, {0, {}}, {}},\n')
        ok = subprocess.run([sys.executable, str(ROOT / "tools" / "sass_issue.py"), "--check", str(data)], capture_output=True, text=True)
        check(ok.returncode == 0, f"--check passes a data file whose hashes match (exit {ok.returncode}: {ok.stdout.strip()[-200:]})")
        data.write_text(listed + f"// source {src} {'0' * 16}\n" + '{"k", 1, {0, {}}, {0, {}}, {0, {}}, {}},\n')
        stale = subprocess.run([sys.executable, str(ROOT / "tools" / "sass_issue.py"), "--check", str(data)], capture_output=True, text=True)
        check(stale.returncode == 1 and "STALE tests/data/issue_kernel.sass changed" in stale.stdout,
              f"--check fails on a changed source (exit {stale.returncode}: {stale.stdout.strip()[-200:]})")
        data.write_text(f"// source {src} {good}\n" + '{"k", 1, {0, {}}, {0, {}}, {0, {}}, {}},\n')
        missing = subprocess.run([sys.executable, str(ROOT / "tools" / "sass_issue.py"), "--check", str(data)], capture_output=True, text=True)
        check(missing.returncode == 1 and "is new" in missing.stdout, f"--check fails when a chapter's source is not listed (exit {missing.returncode})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
