#!/usr/bin/env python3
"""hopper_resources.py: what ptxas made of chapter 09's kernels for sm_90a, until kernel_resources.py
(sm_90, chapters 05 and 06) reads sm_90a's SASS too.

For each kernel of 09_hopper/*.cu: registers, stack frame and spills (ptxas -v); the tile loop's
instructions counted by control flow, with its issue and shared-memory ceilings and the highest
register it names (tile_loop_ceilings: past ptxas's count at launch where setmaxnreg.inc gave the
consumers more); and the Hopper instructions of its SASS (nvdisasm: HGMMA by shape, WARPGROUP.ARRIVE
and DEPBAR, UTMALDG (TMA), USETMAXREG, SYNCS (mbarrier), BAR.SYNC and BAR.ARV, named barriers
included), counted statically: each instruction once where it appears in the code. A compiler
report: nothing runs on a GPU.

  tools/hopper_resources.py                               # print the table
  tools/hopper_resources.py --out results/static-sm90a    # write 09_hopper_ptxas.txt there
  tools/hopper_resources.py --check                       # exit 1 if a kernel spills, has a stack frame, or
                                                          # runs no softmax under a P V it waits for in place
  tools/hopper_resources.py --check --ptxas-logs build-gpu   # the same from the gpu build's own ptxas
                                                          # reports (<object>.ptxas), compiling nothing

Exit 2 without nvcc or nvdisasm (nvdisasm: on PATH, in the toolkit, or the PyPI package
nvidia-cuda-nvdisasm, as kernel_resources.py finds it).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402  (find_tool, ROOT, commit_of_tree)

FLAGS = ["-DFLASHSTEPS_GPU=1", "-DSIMT_COUNTERS=0", "-I.", "-Icommon", "-Icommon/simt/include", "-O2", "-DNDEBUG",
         "-std=c++20", "-arch=sm_90a", "-cubin", "-Xptxas", "-v"]


def report(nvcc, nvdisasm, src, tmp):
    cubin = os.path.join(tmp, os.path.basename(src) + ".cubin")
    keep = os.path.join(tmp, os.path.basename(src) + ".keep")  # nvcc's intermediate files: the PTX's .maxntid
    os.makedirs(keep, exist_ok=True)
    r = subprocess.run([nvcc] + FLAGS + ["-keep", "-keep-dir", keep, os.path.relpath(src, kr.ROOT), "-o", cubin],
                       cwd=kr.ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        kr.fail("nvcc failed on %s:\n%s" % (src, r.stderr[-3000:]))
    sass = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout
    funcs = kr.parse_sass(sass)
    kbc, warpgroup = hopper_constants(("kBc", "kThreads"))
    threads = max_threads(keep)
    counts, maxnreg, cur = {}, {}, None
    for line in sass.splitlines():
        m = re.match(r"\s*\.section\s+\.text\.([^,]+),", line)
        if m:
            cur = m.group(1)
            counts[cur] = {}
            continue
        if cur is None:
            continue
        for op in re.findall(r"\b(HGMMA\.[0-9x]+\.F32(?:\.BF16)?|WARPGROUP\.\w+|BAR\.(?:SYNC|ARV)|UTMALDG\.\w+|SYNCS\.\w+|USETMAXREG[.\w]*)\b", line):
            counts[cur][op] = counts[cur].get(op, 0) + 1
        m = re.search(r"\bUSETMAXREG\.(DEALLOC|TRY_ALLOC)\S*\s+(?:\w+\s*,\s*)?(0x[0-9a-f]+|\d+)", line)
        if m:  # the registers a warpgroup gives back to (DEALLOC) or takes from (TRY_ALLOC) the block's pool
            maxnreg.setdefault(cur, {})[m.group(1)] = int(m.group(2), 0)
    # Whether the file calls wgmma_wait_in_place (a call, not a comment's mention): once per file.
    in_place = re.search(r"\bwgmma_wait_in_place<", re.sub(r"//[^\n]*", "", open(src).read())) is not None
    rows = []
    for entry in re.split(r"ptxas info\s+: Compiling entry function '", r.stdout + r.stderr)[1:]:
        name = entry.split("'")[0]
        regs = int(re.search(r"Used (\d+) registers", entry).group(1))
        frame, st, ld = map(int, re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                                           entry).groups())
        dem = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
        m = re.search(r"(\w+)_kernel<(__half|__nv_bfloat16), (\d+)", dem)
        kernel, dtype, d = (m.group(1), "fp16" if m.group(2) == "__half" else "bf16", int(m.group(3))) if m else (dem, "-", 0)
        sass_counts = counts.get(name, {})
        role = roles(threads.get(name), maxnreg.get(name), warpgroup, name)
        loop = tile_loop_ceilings(funcs.get(name, []), d, any(k.startswith("UTMALDG") for k in sass_counts),
                                  4 * role["consumers"] if role else 4, kbc)
        rows.append({"file": os.path.basename(src), "in_place": in_place,
                     "kernel": kernel, "dtype": dtype, "d": d, "registers": regs,
                     "frame": frame, "spill": "%d/%d" % (st, ld), "sass": sass_counts, "loop": loop, "roles": role,
                     "serialized": SERIALIZED in r.stdout + r.stderr})  # the file's, whichever kernel it names
    return rows


def hopper_constants(names):
    """Constants of 09_hopper/hopper.h (the tiles and the warpgroups the analysis assumes)."""
    text = open(os.path.join(kr.ROOT, "09_hopper", "hopper.h")).read()
    return tuple(int(re.search(r"\b%s = (\d+)" % n, text).group(1)) for n in names)


def max_threads(keep):
    """Each entry's launch bound, the threads of its block: `.maxntid` in the PTX nvcc kept
    (__launch_bounds__'s first argument)."""
    threads = {}
    for ptx in glob.glob(os.path.join(keep, "*.ptx")):
        for m in re.finditer(r"\.entry\s+(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*((?:\.\w+[^\n{]*\s*)*)", open(ptx).read()):
            n = re.search(r"\.maxntid\s+(\d+)", m.group(2))
            if n:
                threads[m.group(1)] = int(n.group(1))
    return threads


def roles(threads, maxnreg, warpgroup, name):
    """A warp-specialized kernel's roles, read from what it is, not from its name: the block's warpgroups
    from its launch bound (the first the producer, the others consumers) and their registers from its
    setmaxnreg (USETMAXREG's immediates: DEALLOC the producer's, TRY_ALLOC a consumer's). None for a
    kernel without setmaxnreg."""
    if not maxnreg:
        return None
    if threads is None or threads % warpgroup or set(maxnreg) != {"DEALLOC", "TRY_ALLOC"}:
        kr.fail("%s: setmaxnreg without a launch bound of whole warpgroups, or without both of its directions "
                "(threads %s, %s)" % (name, threads, maxnreg))
    return {"threads": threads, "warpgroup": warpgroup, "consumers": threads // warpgroup - 1,
            "producer_regs": maxnreg["DEALLOC"], "consumer_regs": maxnreg["TRY_ALLOC"]}


# ptxas's note when it must wait for wgmma to finish one by one because the code touches a register
# an in-flight wgmma reads or writes (its accumulator, A's fragments): correct, but the overlap is gone.
SERIALIZED = "wgmma.mma_async instructions are serialized"


def budget_short(row):
    """For a kernel with setmaxnreg: the registers its warpgroups ask for beyond the pool its launch
    count gives the block (threads x registers), else 0. A consumer's setmaxnreg.inc waits until the
    pool has them: a launch count below the budget would hang on a GPU (the emulator checks only that
    the budget fits the SM)."""
    r = row["roles"]
    if r is None:
        return 0
    need = r["warpgroup"] * (r["producer_regs"] + r["consumers"] * r["consumer_regs"])
    return max(0, need - r["threads"] * row["registers"])


def tile_loop_ceilings(instrs, d, tma, consumer_warps, kbc):
    """The loop with the most HGMMA (a consumer's K/V tile loop), of two with as many the smaller, one
    iteration per warp along the longest path (kr.common_path with no cold lines: where the evaluator
    cannot decide a branch, the side with more instructions; for step g the masked tile's). Issue
    ceiling: 4 x HMMA-eq / instructions (4 schedulers, one instruction per clock each). Shared ceiling:
    HMMA-eq / (shared bytes / 128 per clock): an HGMMA's operands from shared memory (A and B from
    descriptors, or B alone when A is in registers) split over the warpgroup's 4 warps, LDS/STS
    wavefronts, and with TMA the K and V tiles written once per block and tile, split over its
    consumer warps."""
    blocks = kr.basic_blocks(instrs)  # an mbarrier wait's out-of-line retry is not followed: no loop of it
    loops = kr.find_loops(blocks)
    head = kr.tile_loop_head(instrs, blocks, loops)
    if head is None:
        return None
    body = loops[head]
    walk = kr.common_path(instrs, blocks, loops, head, body, set())
    if walk is None:
        return None
    loop = [instrs[i] for b, n in walk[0].items() for _ in range(n) for i in range(blocks[b]["start"], blocks[b]["end"])]
    hg = [x for x in loop if x["op"].startswith("HGMMA")]
    if len(hg) != d // 16 + kbc // 16:  # one S chain (k-steps over d) and one P V chain (over Bc)
        kr.fail("the tile loop found holds %d HGMMA, not the %d of one S and one P V chain" % (len(hg), d // 16 + kbc // 16))
    top = max(int(r) for x in loop for r in re.findall(r"\bR(\d+)\b", x["args"]))
    # One warp's HGMMA.64xNx16 is its quarter of the warpgroup's 64 x N x 16 product: N / 8 m16n8k16
    # HMMA of work, one of which per clock per SM is the 989 TFLOP/s peak.
    work = sum(kr.hgmma_n(x) // 8 for x in hg)
    shared = 0.0
    for x in hg:
        a_in_regs = a_from_registers(x)
        shared += ((0 if a_in_regs else 64 * 16 * 2) + kr.hgmma_n(x) * 16 * 2) / 4.0
    shared += 128 * sum(0 if x["never"] else kr.wavefronts(x["op"]) for x in loop)
    if tma:
        shared += 2 * kbc * d * 2 / consumer_warps
    return {"instrs": len(loop), "hgmma": len(hg), "per_hgmma": len(loop) / len(hg), "work": work, "top_reg": top,
            "issue": min(1.0, 4.0 * work / len(loop)), "shared": min(1.0, work / (shared / 128)),
            "under_pv": exponentials_under_pv(loop)}


def a_from_registers(x):
    """Whether an HGMMA takes its A operand from registers (wgmma_rs: P V), not from a descriptor."""
    return re.match(r"\S*\s+R\d+, R\d+,", x["args"]) is not None


def exponentials_under_pv(loop):
    """The MUFU.EX2 a warp issues between the loop's first P V HGMMA (A from registers) and the wait
    that retires it (the next WARPGROUP.DEPBAR.LE gsb0, 0x0): the softmax that runs under the
    products. 0 where the softmax comes before P V is issued or after its wait (steps b to e, and
    steps f and g with a wait ptxas hoisted); the tile's exponentials where the wait stays after the
    softmax (wgmma_wait_in_place). None without a P V from registers."""
    start = next((n for n, x in enumerate(loop) if x["op"].startswith("HGMMA") and a_from_registers(x)), None)
    if start is None:
        return None
    end = next((n for n in range(start, len(loop)) if loop[n]["op"].startswith("WARPGROUP.DEPBAR")
                and re.search(r"gsb0,\s*0x0", loop[n]["args"])), len(loop))
    return sum(1 for x in loop[start:end] if x["op"].startswith("MUFU.EX2") and not x["never"])


def check_logs(build):
    """The gpu build's ptxas reports of chapter 09 (cmake/ptxas_log.sh): 1 if a kernel spills or has a
    stack frame, else 0."""
    if not os.path.isdir(build):
        kr.fail("--ptxas-logs %s: no such build folder" % build)
    logs = sorted(glob.glob(os.path.join(build, "**", "09_hopper*", "**", "*.ptxas"), recursive=True))
    if not logs:
        kr.fail("no ptxas reports of chapter 09 under %s: is it a gpu build (cmake/ptxas_log.sh)?" % build, 1)
    kernels, serialized = {}, []
    for f in logs:
        text = open(f).read()
        kernels.update(kr.parse_ptxas(text))
        serialized += [f for line in text.splitlines() if SERIALIZED in line]
    names = kr.demangle(sorted({m for m, _ in kernels}))
    bad = 0
    for (mangled, arch), k in sorted(kernels.items()):
        if k["stack"] or k["spill_st"] or k["spill_ld"]:
            bad += 1
            print("FAIL %s %s: %d bytes stack frame, %d/%d bytes spill stores/loads" %
                  (names[mangled], arch, k["stack"], k["spill_st"], k["spill_ld"]))
    for f in sorted(set(serialized)):
        bad += 1
        print("FAIL %s: ptxas serialized wgmma (\"%s\"): a register of an in-flight wgmma is touched" % (f, SERIALIZED))
    print("%d kernels of chapter 09 checked in %d ptxas reports: %d problems (spills, a stack frame, serialized wgmma)" %
          (len(kernels), len(logs), bad))
    if not kernels:
        kr.fail("the reports name no kernel", 1)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder to write 09_hopper_ptxas.txt into")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a kernel spills, has a stack frame or serialized wgmma, or (compiling) launches "
                         "with fewer registers than its setmaxnreg budget or runs no softmax under a P V it waits for "
                         "with wgmma_wait_in_place")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin)")
    ap.add_argument("--nvdisasm", help="nvdisasm to use")
    ap.add_argument("--ptxas-logs", metavar="BUILD", help="with --check: check the ptxas reports a gpu build left")
    a = ap.parse_args()
    if a.ptxas_logs:
        if not a.check or a.out:
            kr.fail("--ptxas-logs goes with --check alone")
        sys.exit(check_logs(a.ptxas_logs))
    nvcc = kr.find_tool("nvcc", a.nvcc)
    nvdisasm = kr.find_tool("nvdisasm", a.nvdisasm)
    if not nvcc or not nvdisasm:
        kr.fail("needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm)")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted(glob.glob(os.path.join(kr.ROOT, "09_hopper", "*.cu"))):
            rows += report(nvcc, nvdisasm, src, tmp)
    rows.sort(key=lambda r: (r["file"], r["kernel"], r["d"], r["dtype"]))
    lines = ["# ptxas -v and the SASS of chapter 09's kernels, sm_90a (a compiler report: nothing here ran on a GPU)",
             "# the sources of commit %s, %s:" % (kr.commit_of_tree(), version),
             "#   nvcc " + " ".join(FLAGS) + " 09_hopper/<file>.cu   (tools/hopper_resources.py)",
             "# SASS: HGMMA by shape, WARPGROUP.ARRIVE/DEPBAR, UTMALDG, SYNCS, USETMAXREG, BAR.SYNC and BAR.ARV in nvdisasm's listing, each counted once",
             "# where it appears (static counts; the tile loop's body runs once per K/V tile).",
             "# The tile loop (the loop with the most HGMMA: a consumer's), one iteration per warp counted by",
             "# control flow along its longest path (tile_loop_ceilings): its instructions, its HGMMA, the",
             "# instructions per HGMMA, and the issue and shared-memory ceilings as % of the 989 TFLOP/s peak",
             "# (upper bounds from the instruction stream alone: no latency, no memory system).",
             "# 'loop top R': the highest register the loop names (R0 counts as the first).",
             "# 'EX2 under PV': the loop's MUFU.EX2 between its P V's first HGMMA and the wait that retires it,",
             "# the softmax run under the products (exponentials_under_pv; '-' without a P V from registers).",
             "%-10s %-8s %-5s %4s %9s %7s %13s %10s %11s %6s %9s %7s %8s %12s  %s" % (
                 "file", "kernel", "dtype", "d", "registers", "stack B", "spill st/ld B", "loop top R", "loop instr",
                 "HGMMA", "per HGMMA", "issue %", "shared %", "EX2 under PV", "SASS")]
    for r in rows:
        sass = ", ".join("%s x%d" % (k, v) for k, v in sorted(r["sass"].items()))
        lp = r["loop"] or {}
        under = "-" if lp.get("under_pv") is None else str(lp["under_pv"])
        loop = ("%10s %11d %6d %9.1f %7.0f %8.0f %12s" % ("R%d" % lp["top_reg"], lp["instrs"], lp["hgmma"], lp["per_hgmma"],
                                                           100 * lp["issue"], 100 * lp["shared"], under)
                if lp else "%10s %11s %6s %9s %7s %8s %12s" % (("-",) * 7))
        lines.append("%-10s %-8s %-5s %4d %9d %7d %13s %s  %s" % (r["file"], r["kernel"], r["dtype"], r["d"],
                                                                 r["registers"], r["frame"], r["spill"], loop, sass))
    text = "\n".join(lines) + "\n"
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "09_hopper_ptxas.txt"), "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if a.check:
        # A kernel that asks for its P V wait in place (wgmma_wait_in_place) must run the tile's
        # exponentials under its P V: at least kBc / 2, a thread's share of a 64 x kBc tile of S.
        kbc = hopper_constants(("kBc",))[0]

        def hoisted(r):
            return r["in_place"] and (r["loop"] or {}).get("under_pv") is not None and r["loop"]["under_pv"] < kbc // 2

        bad = [r for r in rows if r["frame"] or r["spill"] != "0/0" or r["serialized"] or budget_short(r) or hoisted(r)]
        for r in bad:
            print("hopper_resources: %s %s %s d=%d: spills %s B, stack frame %d B, wgmma serialized: %s, "
                  "setmaxnreg budget short by %d registers, P V wait above the softmax: %s" % (
                      r["file"], r["kernel"], r["dtype"], r["d"], r["spill"], r["frame"], r["serialized"],
                      budget_short(r), hoisted(r)), file=sys.stderr)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
