#!/usr/bin/env python3
"""kernel_resources.py: what the compiler made of chapters 05 and 06, for one GPU architecture.

For every kernel instantiation of 05_flash_v2/*.cu and 06_causal/*.cu compiled for sm_90 (nvcc,
ptxas -v): registers, spill bytes, stack frame, shared memory and blocks per SM. Where nvdisasm
is found (on PATH, or from the PyPI package nvidia-cuda-nvdisasm) also what one iteration of the K/V
tile loop executes, counted by control flow: nvdisasm's listing cut into basic blocks, the tile loop
found by its back edge (the loop with the most HMMA), and the blocks of one iteration's common path
(a whole tile, not the last, of a problem without is_causal or attn_mask) each counted once, an
inner loop (a copy loop) times its trip count. The path is thread 0's: a small evaluator of the
integer SASS follows the branches whose conditions come from threadIdx, compile-time constants and
the kernel parameters causal = mask_kind = none, which gives the copy loops' trip counts and their
unrolled remainders; any other branch (a bound, the last tile, a parameter it does not know) takes
the successor that returns to the loop head through the fewest instructions of the mask code
(source lines, from -lineinfo; mask_lines and cold_lines), and on a tie the longer (the copy of the
next tile, which every tile but the last issues). An inner loop whose trip count it cannot derive is
counted once and shown as `?` in `inner_trips`.
From the counts (HMMA, LDSM, LDGSTS, MUFU, FP32, integer, BAR...) come two ceilings, as fractions of
the 989 TFLOP/s dense fp16/bf16 peak of sm_90, which is one m16n8k16 HMMA per clock per SM:
  issue   4 x HMMA / instructions: 4 schedulers issue one instruction per clock each
  shared  HMMA / shared-memory wavefronts: 128 bytes per clock (ldmatrix.x4 and a warp's
          16-byte cp.async are 4 wavefronts each; bank conflicts not counted; ptxas's never-executed
          `@!PT LDS` placeholders count for issue only)
mma.sync's own rate (about 63-65 % of that peak on Hopper, a second-hand figure) is a third ceiling,
not a factor on these two. They are upper bounds from the instruction stream alone (no latency, no
memory system).

  tools/kernel_resources.py --out results/static-sm90        # write kernels.csv and README.md
  tools/kernel_resources.py --check                          # exit 1 if a kernel at d <= 128 spills
                                                             # or has a stack frame
  tools/kernel_resources.py --check --ptxas-logs build-gpu   # the same from the gpu build's own ptxas
                                                             # reports (<object>.ptxas), compiling nothing,
                                                             # for chapter 07's backward kernels too
Exit 2 on bad input or a missing compiler; the check exits 0 when all is well.
"""
import argparse
import concurrent.futures
import csv
import datetime
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ["05_flash_v2/*.cu", "06_causal/*.cu"]
# Per SM on sm_90 (H100): registers, shared memory, threads, resident blocks.
SM_REGS, SM_SMEM, BLOCK_SMEM_MAX, SM_THREADS, SM_BLOCKS, SMEM_RESERVED = 65536, 228 * 1024, 227 * 1024, 2048, 32, 1024


def fail(msg, code=2):
    print("kernel_resources: " + msg, file=sys.stderr)
    sys.exit(code)


def find_tool(name, given):
    """The tool to run: `given` (a path named: None when there is nothing there, which each caller
    reports, or a build rule takes as the tool missing; refused, exit 2, when something is there that
    is not an executable file, a folder say), or the first found on PATH, in /usr/local/cuda/bin or in
    the PyPI package; None if none is."""
    if given:
        if not os.path.exists(given):
            return None
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            fail("--%s %s: not an executable file (leave --%s out to look for one)" % (name, given, name))
        return given
    path = shutil.which(name)
    if path:
        return path
    for cand in ["/usr/local/cuda/bin/" + name]:
        if os.path.exists(cand):
            return cand
    try:  # the PyPI packages nvidia-cuda-nvdisasm / nvidia-cuda-cuobjdump
        import nvidia  # noqa: F401

        for base in nvidia.__path__:
            for cand in glob.glob(os.path.join(base, "*", "bin", name)):
                return cand
    except ImportError:
        pass
    return None


def compile_one(nvcc, src, arch, outdir):
    cubin = os.path.join(outdir, os.path.basename(src) + ".cubin")
    # The defines the gpu build gives every kernel (simt/launch_error.h needs FLASHSTEPS_GPU under nvcc).
    cmd = [nvcc, "-std=c++20", "-O3", "-DNDEBUG", "-DFLASHSTEPS_GPU=1", "-DSIMT_COUNTERS=0", "-lineinfo", "-cubin",
           "-arch=" + arch, "-Xptxas", "-v",
           "-I" + ROOT, "-I" + os.path.join(ROOT, "common"), "-I" + os.path.join(ROOT, "common/simt/include"),
           src, "-o", cubin]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("nvcc failed on %s:\n%s" % (src, r.stderr[-4000:]), 1)
    return cubin, r.stdout + r.stderr


def disassemble(nvcc, nvdisasm, src, arch, outdir):
    """(ptxas's report, parse_sass of the listing) of src compiled for arch (compile_one), its cubin
    read by `nvdisasm -c -gi -hex` (the control bits too); exit 1 when nvdisasm fails."""
    cubin, log = compile_one(nvcc, src, arch, outdir)
    r = subprocess.run([nvdisasm, "-c", "-gi", "-hex", cubin], capture_output=True, text=True)
    if r.returncode != 0:
        fail("nvdisasm failed on %s: %s" % (cubin, r.stderr[-1000:]), 1)
    return log, parse_sass(r.stdout)


def demangle(names):
    filt = shutil.which("c++filt") or shutil.which("cu++filt")
    if not filt:
        return {n: n for n in names}
    r = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True)
    out = r.stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def parse_ptxas(text):
    """{(mangled, arch): {registers, stack, spill_st, spill_ld, static_smem}} from ptxas -v."""
    kernels, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\S+)' for '(\w+)'", line)
        if m:
            cur = kernels.setdefault((m.group(1), m.group(2)), {"stack": 0, "spill_st": 0, "spill_ld": 0, "static_smem": 0})
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill_st"], cur["spill_ld"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["static_smem"] = int(s.group(1)) if s else 0
    return kernels


def describe(demangled):
    """(kernel, dtype, d, policy) from 'void ch05::lean_loop_kernel<__half, 128, ch05::EveryTile>(...)'."""
    m = re.search(r"(\w+)_kernel<([^,>]+), (\d+)(?:, (.*))?>\(", demangled)
    if not m:
        return None
    dtype = {"__half": "fp16", "__nv_bfloat16": "bf16", "float": "fp32"}.get(m.group(2).strip(), m.group(2))
    policy = (m.group(4) or "").replace("ch05::", "").replace("ch06::", "").replace("(anonymous namespace)::", "")
    policy = re.sub(r"\(ch06::Mode\)|\(Mode\)", "", policy)
    return m.group(1), dtype, int(m.group(3)), policy


def smem_table(steps_needed):
    """(dynamic shared memory, threads per block) per (step, d, element size) from flash_v2.h's smem_bytes
    and block_threads, compiled on the host; under "params", AttentionParams' offsets and `none` values
    of causal and mask_kind; under "mod", the offsets of chapter 10's mod.kind and mod.alibi (a byte
    each) and softcap (fp32)."""
    cxx = shutil.which("c++") or shutil.which("g++")
    cuda_inc = None
    for cand in [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]:
        if cand and os.path.exists(os.path.join(cand, "include", "cuda_runtime.h")):
            cuda_inc = os.path.join(cand, "include")
    if not cxx or not cuda_inc:
        return {}
    lines = ['#include <cstddef>', '#include <cstdio>', '#include "05_flash_v2/flash_v2.h"', "int main() {",
             '  std::printf("params %zu %d %zu %d\\n", offsetof(attn::AttentionParams, causal), static_cast<int>(attn::Causal::none),'
             ' offsetof(attn::AttentionParams, mask_kind), static_cast<int>(attn::MaskKind::none));',
             '  std::printf("mod %zu %zu %zu\\n", offsetof(attn::AttentionParams, mod) + offsetof(attn::MaskMod, kind),'
             ' offsetof(attn::AttentionParams, mod) + offsetof(attn::MaskMod, alibi), offsetof(attn::AttentionParams, softcap));']
    for step, d, elem in steps_needed:
        lines.append('  std::printf("%s %d %d %%ld %%d\\n", ch05::smem_bytes(ch05::Step::%s, %d, %d), ch05::block_threads(ch05::Step::%s, %d));'
                     % (step, d, elem, step, d, elem, step, d))
    lines += ["}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "smem.cpp"), os.path.join(tmp, "smem")
        open(src, "w").write("\n".join(lines) + "\n")
        r = subprocess.run([cxx, "-std=c++20", "-I" + ROOT, "-I" + os.path.join(ROOT, "common"), "-I" + cuda_inc, src, "-o", exe],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("could not compile the shared-memory table:\n" + r.stderr[-2000:], 1)
        out = subprocess.run([exe], capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        if line.startswith(("params ", "mod ")):
            table[line.split()[0]] = [int(v) for v in line.split()[1:]]
            continue
        step, d, elem, b, threads = line.split()
        table[(step, int(d), int(elem))] = (int(b), int(threads))
    return table


def blocks_per_sm(regs, threads, smem):
    warps = (threads + 31) // 32
    regs_per_warp = ((regs * 32 + 255) // 256) * 256
    by_regs = (SM_REGS // (regs_per_warp * warps)) if regs else SM_BLOCKS
    by_smem = SM_SMEM // (smem + SMEM_RESERVED) if smem <= BLOCK_SMEM_MAX else 0
    return min(by_regs, by_smem, SM_THREADS // threads, SM_BLOCKS)


# ---- SASS ---------------------------------------------------------------------------------------
CLASSES = [  # (class, opcode prefixes), first match wins
    ("HMMA", ["HMMA"]), ("LDSM", ["LDSM"]), ("LDGSTS", ["LDGSTS"]), ("MUFU", ["MUFU"]),
    ("BAR", ["BAR", "LDGDEPBAR", "DEPBAR", "WARPSYNC"]), ("SHFL", ["SHFL"]),
    ("FP32", ["FADD", "FMUL", "FFMA", "FMNMX", "FSETP", "FSEL", "FCHK", "FSET", "FSWZADD"]),
    ("convert", ["F2FP", "F2F", "I2F", "F2I", "I2FP", "F2IP"]),
    ("shared", ["LDS", "STS"]), ("global", ["LDG", "STG", "LD.", "ST.", "LDL", "STL", "RED", "ATOM"]),
    ("branch", ["BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "BREAK", "JMP"]),
    ("integer", ["IADD", "IMAD", "LOP", "SHF", "LEA", "ISETP", "IABS", "SEL", "VIADD", "PRMT", "MOV", "IMNMX",
                 "VIMNMX", "SGXT", "POPC", "FLO", "BMSK", "PLOP3", "P2R", "R2P", "S2R", "S2UR", "CS2R", "UIADD", "UMOV",
                 "ULOP", "USHF", "ULEA", "UIMAD", "ISCADD", "IDP", "R2UR", "USEL", "UISETP", "UPRMT", "VOTEU", "VOTE"]),
]


def classify(op):
    for cls, prefixes in CLASSES:
        if any(op.startswith(p) for p in prefixes):
            return cls
    return "other"


def wavefronts(op):
    if op.startswith("LDSM"):
        return 4 if op.endswith(".4") or ".4" in op.split(".")[-1:] else (2 if op.endswith(".2") else 1)
    if op.startswith("LDGSTS"):
        return 4 if ".128" in op else (2 if ".64" in op else 1)
    if op.startswith(("LDS", "STS")):
        return 4 if ".128" in op else (2 if ".64" in op else 1)
    return 0


def function_ranges(path, names):
    """{name: (first, last line)} of the functions `names` in a source file, by brace counting."""
    out, lines = {}, open(path).read().splitlines()
    for name in names:
        for i, l in enumerate(lines):
            if re.search(r"\b%s\s*\(" % re.escape(name), l) and not l.strip().startswith("//") and ";" not in l.split("(")[0]:
                depth, started = 0, False
                for j in range(i, len(lines)):
                    depth += lines[j].count("{") - lines[j].count("}")
                    started = started or "{" in lines[j]
                    if started and depth == 0:
                        out[name] = (i + 1, j + 1)
                        break
                break
    return out


def attn_mask_lines():
    """The source lines of mask_score that only a problem with attn_mask runs (numeric.cuh: its loads
    of the mask, after the test for none)."""
    path = os.path.join(ROOT, "common/kernels/numeric.cuh")
    lines = open(path).read().splitlines()
    rng = function_ranges(path, ["mask_score"]).get("mask_score")
    if not rng:
        return set()
    lo, hi = rng
    start = next((n for n in range(lo, hi + 1) if "MaskKind::none ||" in lines[n - 1]), hi)
    return {("numeric.cuh", n) for n in range(start + 1, hi + 1)}


def causal_lines():
    """The causal test's source lines (numeric.cuh's causal_score)."""
    path = os.path.join(ROOT, "common/kernels/numeric.cuh")
    rng = function_ranges(path, ["causal_score"]).get("causal_score")
    return {("numeric.cuh", n) for n in range(rng[0] + 1, rng[1] + 1)} if rng else set()


def diagonal_lines():
    """Chapter 06's test of a tile's place against the diagonal (causal.h's crosses_diagonal): a
    kernel that runs it masks only the tiles the diagonal crosses."""
    path = os.path.join(ROOT, "06_causal/causal.h")
    rng = function_ranges(path, ["crosses_diagonal"]).get("crosses_diagonal")
    return {("causal.h", n) for n in range(rng[0] + 1, rng[1] + 1)} if rng else set()


def mask_lines():
    """Source lines that a whole K/V tile of a problem without is_causal or attn_mask never executes,
    in every step: the attn_mask part of mask_score and the causal test (numeric.cuh),
    scale_and_mask's -inf for a key past Lk or a row past Lq, and chapter 04's mask_tile. They decide branches only: an
    instruction of theirs that the common path runs anyway (a hoisted or predicated test) is counted."""
    out = attn_mask_lines() | causal_lines()
    fa2 = os.path.join(ROOT, "05_flash_v2/fa2_tile.cuh")
    lines = open(fa2).read().splitlines()
    for lo, hi in function_ranges(fa2, ["scale_and_mask"]).values():
        out |= {("fa2_tile.cuh", n) for n in range(lo, hi + 1) if "= -INFINITY" in lines[n - 1]}
    # Chapter 04's steps c and d mask a tile only where it needs it: mask_tile, whole.
    tiles = os.path.join(ROOT, "04_flash_v1/register_tiles.cuh")
    for lo, hi in function_ranges(tiles, ["mask_tile"]).values():
        out |= {("register_tiles.cuh", n) for n in range(lo, hi + 1)}
    return out


def masked_tile_lines():
    """The fast step's masking of a tile: scale_and_mask, and the call of mask_tile (its arguments,
    (batch, head) by a division, are computed on the masked branch only)."""
    out = set()
    fa2 = os.path.join(ROOT, "05_flash_v2/fa2_tile.cuh")
    for lo, hi in function_ranges(fa2, ["scale_and_mask"]).values():
        out |= {("fa2_tile.cuh", n) for n in range(lo, hi + 1)}
    lean = os.path.join(ROOT, "05_flash_v2/lean_loop.cuh")
    for n, l in enumerate(open(lean).read().splitlines(), 1):
        if "mask_tile<" in l and not l.strip().startswith("//"):
            out.add(("lean_loop.cuh", n))
    return out


def cold_lines():
    """Source lines that a whole, unmasked K/V tile of the fast step never executes: scale_and_mask,
    mask_tile's call and chapter 10's rules (masked tiles only), copy_rows' zero-filling branch (the
    last tile only), and mask_lines()."""
    cold = mask_lines() | masked_tile_lines()
    fa2 = os.path.join(ROOT, "05_flash_v2/fa2_tile.cuh")
    # Chapter 10's rules: mask_tile's branch for a Policy with a mask_mod, and every rule (mask_mod.h).
    # (Not mask_lines': for the kernels that write a block mask or a mask tensor the rule is the work.)
    lines = open(fa2).read().splitlines()
    for lo, hi in function_ranges(fa2, ["mask_tile"]).values():
        n = next((n for n in range(lo, hi + 1) if "Policy::mask_mod(p); })" in lines[n - 1]), None)
        while n is not None and n <= hi and "} else {" not in lines[n - 1]:
            cold.add(("fa2_tile.cuh", n))
            n += 1
    mods = os.path.join(ROOT, "common/kernels/mask_mod.h")
    cold |= {("mask_mod.h", n) for n in range(1, len(open(mods).read().splitlines()) + 1)}
    pipe = os.path.join(ROOT, "05_flash_v2/pipeline.cuh")
    rng = function_ranges(pipe, ["copy_rows"]).get("copy_rows")
    if rng:
        lines = open(pipe).read().splitlines()
        inside = False
        for n in range(rng[0], rng[1] + 1):
            l = lines[n - 1]
            if "if constexpr (kTail)" in l:
                inside = True
            elif inside and "} else {" in l:
                break
            elif inside:
                cold.add(("pipeline.cuh", n))
    return cold


def control(hi):
    """The scheduling the compiler encoded in an instruction's upper 64 bits (sm_70 and later), in the
    layout Jia et al. give for Volta ("Dissecting the NVIDIA Volta GPU Architecture via
    Microbenchmarking", arXiv:1804.06826, section 2.1; bits 105-125 of the 128-bit word): stall
    (cycles before the warp's next instruction may issue), the scoreboard the instruction sets when its
    result arrives (wbar) or when it has read its operands (rbar), 7 for none, and the scoreboards it
    waits on (wait, a mask of six)."""
    return {"stall": (hi >> 41) & 15, "wbar": (hi >> 46) & 7, "rbar": (hi >> 49) & 7, "wait": (hi >> 52) & 63}


def parse_sass(text):
    """{mangled: [instruction]} from `nvdisasm -c -gi` (with -hex, also ctl: control()): each a dict of addr, pred (the guard, '' when
    none), op, args, labels (the .L_x labels just before it), chain (every (file, line) of its source
    line and the lines it is inlined at), line (its own, the innermost: None before any) and never (guarded by @!PT: ptxas's placeholders, which take
    an issue slot but move no data)."""
    funcs, cur, chain, pending_chain, labels = {}, None, [], [], []
    for line in text.splitlines():
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            chain, pending_chain, labels = [], [], []
            continue
        if cur is None:
            continue
        m = re.match(r"\s*//## File \"([^\"]+)\", line (\d+)", line)
        if m:
            pending_chain.append((os.path.basename(m.group(1)), int(m.group(2))))
            for f, n in re.findall(r"inlined at \"([^\"]+)\", line (\d+)", line):
                pending_chain.append((os.path.basename(f), int(n)))
            continue
        m = re.match(r"(\.L_x_\d+):", line.strip())
        if m:
            labels.append(m.group(1))
            continue
        m = re.match(r"\s*/\* 0x([0-9a-f]{16}) \*/\s*$", line)
        if m and cur and "ctl" not in cur[-1]:  # nvdisasm -hex: the instruction's upper 64 bits
            cur[-1]["ctl"] = control(int(m.group(1), 16))
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", line)
        if m:
            if pending_chain:
                chain, pending_chain = pending_chain, []
            pred = (m.group(2) or "").strip()
            targets = re.search(r"BRANCH_TARGETS ([^\"*]+)", line)  # an indirect branch's (a switch's) targets
            cur.append({"addr": int(m.group(1), 16), "pred": pred, "op": m.group(3),
                        "args": re.sub(r"\(\*.*\*\)", "", m.group(4)).strip(),
                        "labels": labels, "chain": set(chain), "line": chain[0] if chain else None, "never": pred == "@!PT",
                        "targets": [t.strip() for t in targets.group(1).split(",")] if targets else []})
            labels = []
    return funcs


# ---- control flow -----------------------------------------------------------------------------------
ENDS_BLOCK = ("BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "KILL")


def ends_block(x):
    """Whether x ends a basic block: a branch or an exit, or a CALL.REL.NOINC to a label of the kernel,
    which the sm_75 to sm_89 compiler leaves some loops by (`@!P0 CALL.REL.NOINC` to the code after
    the loop, then the loop's `BRA` back): a jump that keeps no return address. A call of a routine
    (the division's slow path) is no jump: its target is a function's name, not a label."""
    return x["op"].startswith(ENDS_BLOCK) or (x["op"].startswith("CALL.REL.NOINC") and re.search(r"`\(\.L_x_\d+\)", x["args"]))


def basic_blocks(instrs):
    """[{start, end, succ}]: instructions [start, end) and the successor blocks. A guarded branch or
    EXIT may fall through; @!PT never branches. CALL falls through (the called slow paths, such as
    the division's, are not followed); an indirect branch (BRX, JMX) goes to the BRANCH_TARGETS that
    nvdisasm lists after it (a switch), or nowhere known; a CALL.REL.NOINC to a label jumps (ends_block)."""
    lead = {0} if instrs else set()
    for i, x in enumerate(instrs):
        if x["labels"]:
            lead.add(i)
        if ends_block(x) and not x["never"] and i + 1 < len(instrs):
            lead.add(i + 1)
    starts = sorted(lead)
    first = {s: b for b, s in enumerate(starts)}
    label_block = {lab: first[i] for i, x in enumerate(instrs) for lab in x["labels"]}
    out = []
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else len(instrs)
        last, nxt = instrs[e - 1], ([b + 1] if b + 1 < len(starts) else [])
        always = last["pred"] in ("", "@PT")
        target = re.search(r"`\((\.L_x_\d+)\)", last["args"])
        retry = any(instrs[i]["op"].startswith("SYNCS.PHASECHK") and last["pred"] == "@!" + instrs[i]["args"].split(",")[0].strip()
                    for i in range(s, e - 1))
        if last["never"] or not ends_block(last) or last["op"].startswith(("BRA.DIV", "BRA.U.ANY")) or retry:
            # BRA.DIV leaves for a warp collective's slow path only when the warp has diverged; BRA.U.ANY
            # closes a loop that runs a uniform instruction (UTMALDG) once per distinct value among the
            # lanes: once, for the uniform values the kernels give it; the branch after an mbarrier's
            # try-wait leaves for the retry (a spin, out of line) only if the wait timed out before the
            # phase completed: the try-wait itself suspends the warp until then, or for a time limit.
            succ = nxt
        elif last["targets"] and all(t in label_block for t in last["targets"]):
            succ = list(dict.fromkeys(label_block[t] for t in last["targets"])) + ([] if always else nxt)
        elif last["op"].startswith(("BRA", "CALL")) and target and target.group(1) in label_block:
            succ = [label_block[target.group(1)]] + ([] if always else [n for n in nxt if n != label_block[target.group(1)]])
        else:
            succ = [] if always else nxt
        out.append({"start": s, "end": e, "succ": succ})
    return out


def reachable(blocks, start=0):
    """The blocks some path from the entry (or from block `start`) reaches (not ptxas's final `BRA`
    to itself, nor a warp collective's slow path after the EXIT, which only a BRA.DIV leads to)."""
    reached, stack = set(), [start] if blocks else []
    while stack:
        b = stack.pop()
        if b not in reached:
            reached.add(b)
            stack.extend(blocks[b]["succ"])
    return reached


def find_loops(blocks):
    """{header: set of blocks}: the natural loop of every back edge (an edge to a block at the same or
    a lower address) that the entry reaches, back edges to one header merged."""
    preds = {b: [] for b in range(len(blocks))}
    latches = {}
    reached = reachable(blocks)
    for b, x in enumerate(blocks):
        if b not in reached:
            continue
        for s in x["succ"]:
            preds[s].append(b)
            if s <= b:
                latches.setdefault(s, []).append(b)
    loops = {}
    for h, ls in latches.items():
        body, stack = {h}, list(ls)
        while stack:
            n = stack.pop()
            if n not in body:
                body.add(n)
                stack.extend(preds[n])
        loops[h] = body
    return loops


# Integer SASS evaluated for one thread (thread 0 of block 0), enough to follow the loops and branches
# whose conditions come from threadIdx and compile-time constants: a copy loop's trip count, its
# unrolled remainder. A value the evaluator does not know (a kernel parameter, a load, an opcode it
# does not model) is None, and so is whatever is computed from it.
M32 = 0xFFFFFFFF


def _s32(v):
    return v - (1 << 32) if v & 0x80000000 else v


def _operands(args):
    return [a.strip().replace(".reuse", "") for a in args.split(",")] if args else []


def _reg_index(name):
    m = re.fullmatch(r"(U?R)(\d+)", name)
    return (m.group(1), int(m.group(2))) if m else None


def _value(state, tok):
    neg, inv = tok.startswith("-"), tok.startswith("~")
    tok = tok.lstrip("-~")
    if tok in ("RZ", "URZ"):
        v = 0
    elif re.fullmatch(r"0x[0-9a-f]+|\d+", tok):
        v = int(tok, 0)
    elif _reg_index(tok):
        v = state.get(tok)
    elif re.fullmatch(r"c\[0x0\]\[0x[0-9a-f]+\]", tok):
        v = _const(state, tok)
    else:
        return None
    if v is None:
        return None
    return (-v) & M32 if neg else (~v) & M32 if inv else v & M32


def _const(state, tok, op=""):
    """A kernel parameter's value, c[0x0][offset]: the 4-byte words `state` knows, a byte or a half of
    one for LDC.U8 / .U16 (an enum of one byte, chapter 10's mod.kind)."""
    m = re.fullmatch(r"c\[0x0\]\[(0x[0-9a-f]+)\]", tok)
    if not m:
        return None
    off = int(m.group(1), 16)
    word = state.get("c[0x0][%#x]" % (off & ~3))
    if word is None:
        return None
    bits = 8 if ".U8" in op or ".S8" in op else 16 if ".U16" in op or ".S16" in op else 32
    v = (word >> 8 * (off & 3)) & ((1 << bits) - 1) if bits < 32 else (word if off % 4 == 0 else None)
    if v is not None and bits < 32 and ".S" in op and v >> (bits - 1):
        v = (v - (1 << bits)) & M32
    return v


def _float(state, tok):
    """An operand of an fp32 instruction as a number: a decimal immediate, or the bits of a hex
    immediate, a known register or parameter; with its - and |.| modifiers."""
    neg = tok.startswith("-")
    tok = tok.lstrip("-")
    absolute = tok.startswith("|") and tok.endswith("|")
    tok = tok.strip("|")
    if re.fullmatch(r"\d+(\.\d*)?(e[-+]?\d+)?|\+?INF", tok):
        x = float(tok.replace("INF", "inf"))
    else:
        v = _value(state, tok)
        if v is None:
            return None
        x = struct.unpack("<f", struct.pack("<I", v & M32))[0]
    x = abs(x) if absolute else x
    return -x if neg else x


def _compare(test, a, b):
    return {"LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b, "EQ": a == b, "NE": a != b}[test]


def _set_pair(state, op, ops, cmp, c):
    """A compare's two predicates (ISETP, FSETP): the result and its negation, each combined with c."""
    both = {"AND": lambda x: x and c, "OR": lambda x: x or c, "XOR": lambda x: x != c}[op.split(".")[-1]]
    if ops[0] not in ("PT", "UPT"):
        state[ops[0]] = both(cmp)
    if ops[1] not in ("PT", "UPT"):
        state[ops[1]] = both(not cmp)


def _pred(state, tok):
    neg = tok.startswith("!")
    tok = tok.lstrip("!")
    v = True if tok in ("PT", "UPT") else state.get(tok)
    return None if v is None else (not v if neg else v)


def _clobber(state, dest, width=4):
    r = _reg_index(dest)
    if r:
        for k in range(width):
            state.pop("%s%d" % (r[0], r[1] + k), None)
    elif re.fullmatch(r"U?P\d", dest):
        state.pop(dest, None)


SPECIAL = {"SR_TID.X": 0, "SR_TID.Y": 0, "SR_TID.Z": 0, "SR_LANEID": 0, "SR_CTAID.X": 0, "SR_CTAID.Y": 0, "SR_CTAID.Z": 0}


def execute(state, ins):
    """Apply one instruction to `state` ({register or predicate: value}; absent = unknown)."""
    ops, op = _operands(ins["args"]), ins["op"]
    if not ops or ops[0].startswith("[") or re.fullmatch(r"S?B\d+|SB\d+", ops[0]):
        return
    guard = _pred(state, ins["pred"].lstrip("@")) if ins["pred"] else True
    if guard is False:
        return
    dest, base = ops[0], op.split(".")[0]
    if state.get("jump", (None,))[0] == dest:
        del state["jump"]
    state.pop("from mods " + dest, None)
    val = None
    try:
        table = re.fullmatch(r"c\[0x2\]\[(U?R\d+)(?:\+0x[0-9a-f]+)?\]", ops[1]) if base == "LDC" and len(ops) > 1 else None
        if table:
            # A switch's jump table (constant bank 2), indexed by 4 x the case: BRX then goes to
            # the case's entry of the BRANCH_TARGETS nvdisasm lists (in the table's order).
            i = _value(state, table.group(1))
            _clobber(state, dest)
            if i is not None and i % 4 == 0:
                state["jump"] = (dest, i // 4)
            return
        if base in ("MOV", "UMOV"):
            val = _value(state, ops[1])
        elif base in ("LDC", "ULDC") and re.fullmatch(r"c\[0x0\]\[0x[0-9a-f]+\]", ops[1]):
            if ".64" in op:
                hi = "c[0x0][%#x]" % (int(ops[1][8:-1], 16) + 4)
                r = _reg_index(dest)
                _clobber(state, dest, 2)
                for k, tok in enumerate((ops[1], hi)):
                    if r and state.get(tok) is not None:
                        state["%s%d" % (r[0], r[1] + k)] = state[tok]
                return
            val = _const(state, ops[1], op)
        elif base in ("S2R", "S2UR"):
            val = SPECIAL.get(ops[1])
        elif base in ("IADD3", "UIADD3") and ".X" not in op:
            carry = [o for o in ops[1:] if re.fullmatch(r"U?P\d|U?PT", o)]
            for c in carry:
                _clobber(state, c)
            a, b, c = (_value(state, o) for o in ops[1 + len(carry):4 + len(carry)])
            val = None if None in (a, b, c) else (a + b + c) & M32
        elif base == "VIADD":
            a, b = _value(state, ops[1]), _value(state, ops[2])
            val = None if None in (a, b) else (a + b) & M32
        elif base in ("IMAD", "UIMAD") and not any(s in op for s in (".WIDE", ".HI", ".X")):
            a, b, c = (_value(state, o) for o in ops[1:4])
            val = None if None in (a, b, c) else (a * b + c) & M32
        elif base in ("LEA", "ULEA") and ".X" not in op:
            if ".HI" in op:
                a, b, c, sh = (_value(state, o) for o in ops[1:5])
                val = None if None in (a, b, c, sh) else ((((c << 32) | a) >> (32 - sh)) + b) & M32
            else:
                a, b, sh = (_value(state, o) for o in ops[-3:])
                if len(ops) > 4:
                    _clobber(state, ops[1])
                val = None if None in (a, b, sh) else ((a << sh) + b) & M32
        elif base in ("SHF", "USHF"):
            lo, sh, hi = (_value(state, o) for o in ops[1:4])
            if None not in (lo, sh, hi):
                if ".R.S32.HI" in op and lo == 0:
                    val = (_s32(hi) >> sh) & M32
                elif ".R.U32.HI" in op and lo == 0:
                    val = hi >> sh
                elif ".L.U32" in op and ".HI" not in op:
                    val = (lo << sh) & M32
        elif base in ("LOP3", "ULOP3"):
            if re.fullmatch(r"U?P\d|U?PT", dest):  # LOP3.LUT P0, RZ, a, b, c, lut, !PT
                a, b, c, lut = (_value(state, o) for o in ops[2:6])
            else:
                a, b, c, lut = (_value(state, o) for o in ops[1:5])
            if None not in (a, b, c, lut):
                val = 0
                for i in range(8):
                    if lut >> i & 1:
                        val |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
                val &= M32
                if re.fullmatch(r"U?P\d|U?PT", dest):
                    if dest not in ("PT", "UPT"):
                        state[dest] = val != 0
                    _clobber(state, ops[1])
                    return
        elif base == "FSETP":  # a test of chapter 10's softcap (the other floats stay unknown)
            a, b, c = _float(state, ops[2]), _float(state, ops[3]), _pred(state, ops[4])
            for p in ops[:2]:
                _clobber(state, p)
            mods = [o.strip("-|") for o in ops[2:4]]
            if None in (a, b, c) or not any("from mods " + o in state or o in state.get("mods", ()) for o in mods):
                return
            # The unordered tests (NEU, GEU...) differ on NaN only, which no parameter here is.
            _set_pair(state, op, ops, _compare(op.split(".")[1].rstrip("U"), a, b), c)
            return
        elif base in ("ISETP", "UISETP") and ".EX" not in op:
            a, b, c = _value(state, ops[2]), _value(state, ops[3]), _pred(state, ops[4])
            for p in ops[:2]:
                _clobber(state, p)
            if c is not None and (a is None or b is None):
                # The combining predicate alone may decide both results: AND with false, OR with true.
                known = {"AND": False, "OR": True}.get(op.split(".")[-1])
                if known is not None and c == known:
                    for p in ops[:2]:
                        if p not in ("PT", "UPT"):
                            state[p] = known
                return
            if None in (a, b, c):
                return
            if ".U32" not in op:
                a, b = _s32(a), _s32(b)
            _set_pair(state, op, ops, _compare(op.split(".")[1], a, b), c)
            return
        elif base in ("SEL", "USEL"):
            a, b, c = _value(state, ops[1]), _value(state, ops[2]), _pred(state, ops[3])
            val = None if c is None else (a if c else b)
        elif op == "PRMT":  # byte permute: selector nibble k picks byte k of {b, a}, bit 3 its sign
            a, sel, b = _value(state, ops[1]), _value(state, ops[2]), _value(state, ops[3])
            if None not in (a, sel, b):
                pool, val = a | b << 32, 0
                for k in range(4):
                    n = sel >> 4 * k & 0xF
                    byte = pool >> 8 * (n & 7) & 0xFF
                    val |= (0xFF if n & 8 and byte & 0x80 else 0 if n & 8 else byte) << 8 * k
        elif base == "VIADDMNMX":  # min or max (the predicate) of a + b and c
            a, b, c, pm = _value(state, ops[1]), _value(state, ops[2]), _value(state, ops[3]), _pred(state, ops[4])
            if None not in (a, b, c, pm):
                x, y = ((a + b) & M32, c) if ".U32" in op else (_s32((a + b) & M32), _s32(c))
                val = (min(x, y) if pm else max(x, y)) & M32
        elif base in ("VIMNMX", "IMNMX", "UIMNMX"):
            a, b, c = _value(state, ops[1]), _value(state, ops[2]), _pred(state, ops[3])
            if None not in (a, b, c):
                x, y = (a, b) if ".U32" in op else (_s32(a), _s32(b))
                val = (min(x, y) if c else max(x, y)) & M32
    except (IndexError, KeyError, ValueError):
        val = None
    if base in ("LDC", "ULDC") and val is not None and guard and ops[1] in state.get("mods", ()):
        state["from mods " + dest] = True  # common_path keeps it at a loop's head
    if guard is None or val is None:
        _clobber(state, dest, dest_width(op))
        for o in ops[1:2]:
            if re.fullmatch(r"U?P\d", o) and base in ("LOP3", "ULOP3", "PLOP3", "ISETP", "UISETP", "FSETP", "DSETP", "HSETP2"):
                _clobber(state, o)
        return
    state[dest] = val


def dest_width(op):
    """Registers an instruction writes from its first operand on, erring high (a value forgotten only
    costs a branch decided by the rule)."""
    if op.startswith("HMMA") or ".128" in op or op.endswith(".X4") or ".X4." in op:
        return 4
    if any(s in op for s in (".WIDE", ".64", ".X2")):
        return 2
    return 1


def jump_target(state, block_end, label_block):
    """The block an indirect branch (BRX) goes to when the evaluator knows its jump table's index, else None."""
    j = state.get("jump")
    if not block_end["op"].startswith("BRX") or not j or not block_end["targets"]:
        return None
    if block_end["args"].split()[0] != j[0] or j[1] >= len(block_end["targets"]):
        return None
    return label_block.get(block_end["targets"][j[1]])


def branch_taken(state, block_end):
    """Whether the branch ending a block is taken: True, False, or None (unknown)."""
    p = block_end["pred"]
    if not p or p == "@PT":
        return True
    return _pred(state, p.lstrip("@"))


def common_path(instrs, blocks, loops, head, body, cold, params=None, limit=200000, order=None):
    """One iteration of the loop (head, body) as it runs on the common path: {block: times}, plus the
    inner loops' trip counts {header: trips or None}; and, if `order` is a list, the blocks appended
    to it in the order walked, each as often as it runs. A branch whose condition the evaluator knows is
    followed; otherwise the successor that leads back to `head` through the fewest cold (mask)
    instructions, and on a tie the one with the most instructions (the copy of the next K/V tile,
    which every tile but the last issues). Returns None when the walk does not come back to head."""
    # Longest path to the back edge with the fewest cold instructions, on the body without its back
    # edges (an inner loop's body counted once): the rule for branches the evaluator cannot decide.
    inner = {h: loops[h] & body for h in loops if h in body and h != head}
    best = {}
    for b in sorted(body, reverse=True):
        x = blocks[b]
        size = x["end"] - x["start"]
        n_cold = sum(1 for i in range(x["start"], x["end"]) if instrs[i]["chain"] & cold)
        # A block with a global load of the data itself (not the mask's) is on the common path, however
        # many of the mask's tests nvcc hoisted beside it: the out-of-bounds side skips that load.
        if any(instrs[i]["op"].startswith(("LDG", "LD.")) and not instrs[i]["never"]
               and not (instrs[i]["chain"] & cold) for i in range(x["start"], x["end"])):
            n_cold = 0
        options = [(0, 0) if s == head else best.get(s) for s in x["succ"] if s in body and (s == head or s > b)]
        options = [o for o in options if o is not None]
        if options:
            c, n = min(options, key=lambda o: (o[0], -o[1]))
            best[b] = (c + n_cold, n + size)
    label_block = {lab: n for n, blk in enumerate(blocks) for lab in instrs[blk["start"]]["labels"]}
    state = dict(params or {})
    # The state at the loop head: the function from its entry to the head along the same rule, then
    # whatever the loop writes forgotten (its value at the head depends on the iteration).
    b, steps = 0, 0
    reach = {head}
    for x in sorted(range(len(blocks)), reverse=True):
        if any(s in reach for s in blocks[x]["succ"] if s > x or s == head):
            reach.add(x)
    while b != head and steps < limit:
        x = blocks[b]
        for i in range(x["start"], x["end"]):
            execute(state, instrs[i])
            steps += 1
        succ = [s for s in x["succ"] if s in reach and (s > b or s == head)]
        if not succ:
            state = dict(params or {})
            break
        t = branch_taken(state, instrs[x["end"] - 1]) if len(x["succ"]) == 2 else None
        j = jump_target(state, instrs[x["end"] - 1], label_block)
        b = (j if j in succ else
             x["succ"][0] if t is True and x["succ"][0] in succ else (x["succ"][1] if t is False and x["succ"][1] in succ else succ[0]))
    # A register loaded with one of chapter 10's mods before the loop keeps it, unless the loop
    # writes that very register (the erring-high clobber below would lose it: a warp-uniform kind).
    kept = {k[len("from mods "):] for k in state if k.startswith("from mods ")}
    kept = {r: state[r] for r in kept if state.get(r) is not None}
    for blk in body:
        for i in range(blocks[blk]["start"], blocks[blk]["end"]):
            ops = _operands(instrs[i]["args"])
            if ops:
                r = _reg_index(ops[0])
                for w in range(dest_width(instrs[i]["op"]) if r else 0):
                    kept.pop("%s%d" % (r[0], r[1] + w), None)
                _clobber(state, ops[0])
                if instrs[i]["op"].startswith(("IADD3", "LEA", "LOP3", "ISETP", "UISETP", "PLOP3", "FSETP")):
                    _clobber(state, ops[1], 1)
    state.update(kept)
    times, trips, b, steps = {}, {h: 0 for h in inner}, head, 0
    undecided = set()
    while True:
        times[b] = times.get(b, 0) + 1
        if order is not None:
            order.append(b)
        if b in trips:
            trips[b] += 1
        x = blocks[b]
        for i in range(x["start"], x["end"]):
            execute(state, instrs[i])
        steps += x["end"] - x["start"]
        if steps > limit:
            return None
        succ = x["succ"]
        t = branch_taken(state, instrs[x["end"] - 1]) if len(succ) == 2 else (True if len(succ) == 1 else None)
        j = jump_target(state, instrs[x["end"] - 1], label_block)
        if j is not None and j in body:
            nxt = j
        elif t is None or (len(succ) == 2 and succ[0 if t else 1] not in body and succ[1 if t else 0] in body):
            # Unknown, or known to leave the loop (the last tile): the rule picks, and a loop whose
            # back edge the rule had to take or leave has no derived trip count.
            options = [(s, (0, 0) if s == head else best.get(s)) for s in succ if s in body and (s == head or s > b)]
            options = [o for o in options if o[1] is not None]
            if not options:
                return None
            nxt = min(options, key=lambda o: (o[1][0], -o[1][1]))[0]
            undecided |= {h for h in inner if h in succ and b in inner[h]}
        else:
            nxt = succ[0] if t else succ[1]
        if nxt == head:
            break
        if nxt not in body:
            return None
        b = nxt
    return times, {h: (None if h in undecided else n) for h, n in trips.items()}


def hgmma_n(x):
    """N of an HGMMA.64xNx16, sm_90a's wgmma (parse_sass's op stops at the shape's lower-case x: the
    rest is in args)."""
    return int(re.match(r"HGMMA\.64x(\d+)x16", x["op"] + x["args"]).group(1))


def tile_loop_head(instrs, blocks, loops):
    """The header of the K/V tile loop: the loop with the most HMMA or HGMMA (of two with as many, the
    smaller), or None for a kernel without mma.sync or wgmma in a loop. With wgmma, of the loops
    that hold no other loop with HGMMA: a loop around the tile loop (chapter 09's step i walks Q tiles
    around it) holds more HGMMA, its first tile's and last tile's beside the loop's, but runs once
    per Q tile (mma.sync kernels keep the rule as it was: a K/V tile loop may hold a loop of its
    products)."""
    def count(body, ops):
        return sum(1 for b in body for i in range(blocks[b]["start"], blocks[b]["end"]) if instrs[i]["op"].startswith(ops))

    def hmma(body):
        return count(body, ("HMMA", "HGMMA"))

    candidates = loops.items()
    if any(count(body, "HGMMA") for body in loops.values()):
        candidates = [(h, body) for h, body in loops.items()
                      if not any(g != h and g in body and count(loops[g], "HGMMA") for g in loops)]
    ranked = sorted(candidates, key=lambda hb: (-hmma(hb[1]), len(hb[1])))
    return ranked[0][0] if ranked and hmma(ranked[0][1]) else None


def enum_kinds(enum):
    """The kinds of one of params.h's enums (ModKind, Causal, MaskKind), [(identifier, value)], none
    first (0)."""
    text = open(os.path.join(ROOT, "common/kernels/params.h")).read()
    m = re.search(r"enum class %s\s*:\s*\w+\s*\{([^}]*)\}" % enum, text)
    if not m:
        fail("common/kernels/params.h: enum class %s not found" % enum, 1)
    return [(n.strip(), v) for v, n in enumerate(m.group(1).split(",")) if n.strip()]


def mod_kinds():
    """Chapter 10's mask_mod kinds, [(name, value)], from params.h's enum ModKind (none is 0)."""
    return enum_kinds("ModKind")


def kind_names(enum):
    """What the harness calls each kind of an enum (problem.cpp's causal_name, mask_name: the
    command line's and a profile's spelling), [(name, value)] without none."""
    text = open(os.path.join(ROOT, "common/harness/problem.cpp")).read()
    spelled = dict(re.findall(r"case %s::(\w+): return \"([^\"]+)\";" % enum, text))
    kinds = enum_kinds(enum)
    if any(k not in spelled for k, _ in kinds):
        fail("common/harness/problem.cpp does not name every %s" % enum, 1)
    return [(spelled[k], v) for k, v in kinds[1:]]


PARAMS = 0x210  # where kernel parameters start in the constant bank on sm_90 (params_start)


def params_start(arch):
    """Where kernel parameters start in the constant bank: 0x160 up to sm_89, 0x210 on sm_90(a), 0x380
    on sm_100 and sm_120 (nvdisasm of a kernel taking (int, int*), compiled by nvcc 13.0 for each)."""
    n = int(re.match(r"sm_(\d+)", arch).group(1))
    return 0x160 if n < 90 else PARAMS if n < 100 else 0x380


def params_base(kernel, arch="sm_90"):
    """Where the kernel's attn::AttentionParams starts, by its demangled name: at params_start(arch), or
    after the CUtensorMaps chapter 09's kernels take first (cuda.h: 128 bytes each, alignas(128),
    which the constant bank's addresses keep: on sm_90a the first at 0x280)."""
    start = params_start(arch)
    maps = kernel.count("CUtensorMap")
    return (start + 127) // 128 * 128 + 128 * maps if maps else start


def common_params(smem, mod=0, softcap=0.0, alibi=False, causal=0, mask=0, base=PARAMS):
    """The kernel parameters of the common path's problem as the SASS reads them, 4-byte words by
    offset, from smem_table's "params" and "mod" entries (the AttentionParams from c[0x0][base] on,
    params_base): is_causal and attn_mask of the given kinds (params.h's values; none by default),
    chapter 10's mask_mod of kind `mod` (none by default) and score mods."""
    p = smem.get("params")
    out = {"c[0x0][%#x]" % (base + p[0]): p[1] + causal, "c[0x0][%#x]" % (base + p[2]): p[3] + mask} if p else {}
    out["path"] = set(out)  # is_causal's and attn_mask's words, as LDC names them
    if "mod" in smem:
        kind, flag, cap = smem["mod"]
        words = {}
        for off, byte in ((kind, mod), (flag, int(alibi))):
            words[off & ~3] = words.get(off & ~3, 0) | byte << 8 * (off & 3)
        words[cap] = struct.unpack("<I", struct.pack("<f", softcap))[0]
        out.update({"c[0x0][%#x]" % (base + off): v for off, v in words.items()})
        out["mods"] = {"c[0x0][%#x]" % (base + off) for off in (kind, flag, cap)}  # as LDC names them
    return out


def tile_loop(instrs, cold, params=None):
    """The loop with the most HMMA (the K/V tile loop): its instruction mix on the common path of one
    iteration (`hot`) and over every block once (`all`), and its inner loops' trip counts."""
    if not instrs:
        return None
    blocks = basic_blocks(instrs)
    loops = find_loops(blocks)
    head = tile_loop_head(instrs, blocks, loops)
    if head is None:
        return None
    body = loops[head]
    walk = common_path(instrs, blocks, loops, head, body, cold, params)

    def mix(weights):
        counts = {"total": 0, "wavefronts": 0}
        for b, n in weights.items():
            for i in range(blocks[b]["start"], blocks[b]["end"]):
                x = instrs[i]
                c = classify(x["op"])
                counts[c] = counts.get(c, 0) + n
                counts["total"] += n
                counts["wavefronts"] += 0 if x["never"] else n * wavefronts(x["op"])
        return counts

    out = {"all": mix({b: 1 for b in body}), "hot": None, "inner": []}
    if walk:
        times, trips = walk
        out["hot"] = mix(times)
        for h in sorted(trips):
            size = sum(blocks[b]["end"] - blocks[b]["start"] for b in loops[h] & body)
            out["inner"].append((trips[h], size))
    else:
        out["inner"] = [(None, 0) for h in loops if h in body and h != head]
    return out


def inner_trips(loop):
    """'trips x instructions' per inner loop; '?' where the trip count was not derived."""
    return " ".join("%sx%d" % ("?" if t is None else t, n) for t, n in loop["inner"])


def ceilings(m):
    h = m.get("HMMA", 0)
    if not h:
        return None, None
    return min(1.0, 4.0 * h / m["total"]), (min(1.0, h / m["wavefronts"]) if m["wavefronts"] else 1.0)


# ---- main -------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("\n"):])
    ap.add_argument("--out", help="folder to write kernels.csv and README.md into")
    ap.add_argument("--check", action="store_true", help="fail when a kernel at d <= --max-d spills or has a stack frame")
    ap.add_argument("--max-d", type=int, default=128, help="head dims the check covers (default 128)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin)")
    ap.add_argument("--nvdisasm", help="nvdisasm to use (default: on PATH, the CUDA toolkit or the PyPI package)")
    ap.add_argument("--no-sass", action="store_true", help="skip the instruction mix even where nvdisasm is found")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ptxas-logs", metavar="BUILD", help="check the ptxas reports a gpu build left (every arch it built)")
    a = ap.parse_args()
    if not a.out and not a.check:
        fail("nothing to do: give --out FOLDER, --check, or both")
    if a.ptxas_logs:
        if a.out:
            fail("--ptxas-logs checks a build; --out compiles for itself: give one of them")
        sys.exit(check_logs(a.ptxas_logs, a.max_d))
    if not re.fullmatch(r"sm_\d+a?", a.arch):
        fail("--arch %s: give an architecture such as sm_90" % a.arch)
    nvcc = find_tool("nvcc", a.nvcc)
    if not nvcc:
        fail("nvcc not found (give --nvcc)")
    nvdisasm = None if a.no_sass else find_tool("nvdisasm", a.nvdisasm)
    if a.nvdisasm and not nvdisasm:
        fail("--nvdisasm %s does not exist" % a.nvdisasm)

    sources = sorted(f for pat in SOURCES for f in glob.glob(os.path.join(ROOT, pat)))
    version_lines = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    version = next((l for l in version_lines if "release" in l), version_lines[-1] if version_lines else "nvcc")
    rows, sass = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
            results = list(pool.map(lambda s: (s,) + compile_one(nvcc, s, a.arch, tmp), sources))
        for src, cubin, log in results:
            kernels = parse_ptxas(log)
            if nvdisasm:
                r = subprocess.run([nvdisasm, "-c", "-gi", cubin], capture_output=True, text=True)
                if r.returncode == 0:
                    sass.update(parse_sass(r.stdout))
            for (mangled, _), k in kernels.items():
                rows.append(dict(k, mangled=mangled, source=os.path.relpath(src, ROOT)))
    names = demangle([r["mangled"] for r in rows])
    cold, mask_only = cold_lines(), mask_lines()
    steps = {"split_k", "split_q", "tensor_cores", "cp_async", "swizzle", "ldmatrix_x4", "rows_32", "lean_loop"}
    for r in rows:
        r["kernel"], r["dtype"], r["d"], r["policy"] = describe(names[r["mangled"]]) or (names[r["mangled"]], "", 0, "")
    smem = smem_table(sorted({(r["kernel"], r["d"], 4 if r["dtype"] == "fp32" else 2) for r in rows if r["kernel"] in steps}))
    params = common_params(smem, base=params_start(a.arch))  # lean_loop's AttentionParams: the first parameter
    smem.pop("params", None), smem.pop("mod", None)
    for r in rows:
        elem = 4 if r["dtype"] == "fp32" else 2
        dyn, r["threads"] = smem.get((r["kernel"], r["d"], elem), (0, 128))
        r["smem"] = r["static_smem"] + dyn
        r["blocks_per_sm"] = blocks_per_sm(r.get("registers", 0), r["threads"], r["smem"]) if (r["kernel"], r["d"], elem) in smem else ""
        loop = tile_loop(sass[r["mangled"]], cold if r["kernel"] == "lean_loop" else mask_only, params) if r["mangled"] in sass else None
        r["loop"] = loop
    rows.sort(key=lambda r: (r["source"], r["kernel"], r["policy"], r["dtype"], r["d"]))

    if a.out:
        write_out(a.out, rows, version, a.arch, nvdisasm)
    if a.check:
        bad = [r for r in rows if r["d"] <= a.max_d and (r["stack"] or r["spill_st"] or r["spill_ld"])]
        for r in bad:
            print("FAIL %s %s %s d=%d: %d bytes stack frame, %d/%d bytes spill stores/loads" %
                  (r["kernel"], r["policy"], r["dtype"], r["d"], r["stack"], r["spill_st"], r["spill_ld"]))
        checked = sum(1 for r in rows if r["d"] <= a.max_d)
        print("%d kernel instantiations at d <= %d checked for %s: %d with spills or a stack frame" % (checked, a.max_d, a.arch, len(bad)))
        if not checked:
            fail("no kernel found to check", 1)
        sys.exit(1 if bad else 0)


# The chapters whose ptxas reports --ptxas-logs reads up to a smaller head dim than --max-d, each
# with that head dim and why. It reads every chapter that writes them (flashsteps_ptxas_report in
# its CMakeLists.txt), the others up to --max-d.
READ_UP_TO = {
    "10_masks": (96, "its lean_loop policies at d = 128 spill 8 to 16 bytes on sm_90 (results/README.md)"),
}


def reporting_chapters():
    """The chapter folders whose CMakeLists.txt calls flashsteps_ptxas_report."""
    return sorted(os.path.basename(os.path.dirname(f)) for f in glob.glob(os.path.join(ROOT, "*", "CMakeLists.txt"))
                  if "flashsteps_ptxas_report(" in open(f).read())


def check_logs(build, max_d):
    if not os.path.isdir(build):
        fail("--ptxas-logs %s: no such build folder" % build)
    chapters = reporting_chapters()
    for c, (d, why) in sorted(READ_UP_TO.items()):
        if d < max_d:
            print("%s's reports read up to d = %d only (%s)" % (c, d, why))
    # Each chapter's reports with the largest head dim read in them.
    logs = {f: min(max_d, READ_UP_TO.get(c, (max_d, ""))[0]) for c in chapters
            for f in glob.glob(os.path.join(build, "**", c + "*", "**", "*.ptxas"), recursive=True)}
    if not logs:
        fail("no ptxas reports under %s: is it a gpu build of chapters %s (cmake/ptxas_log.sh)?" %
             (build, ", ".join(chapters)), 1)
    kernels, up_to = {}, {}
    for f, d in sorted(logs.items()):
        for key, k in parse_ptxas(open(f).read()).items():
            kernels[key] = k
            up_to[key] = min(d, up_to.get(key, d))
    names = demangle(sorted({m for m, _ in kernels}))
    bad, checked = 0, 0
    for (mangled, arch), k in sorted(kernels.items()):
        what = describe(names[mangled])
        if not what or what[2] > up_to[(mangled, arch)]:
            continue
        checked += 1
        if k["stack"] or k["spill_st"] or k["spill_ld"]:
            bad += 1
            print("FAIL %s %s %s d=%d %s: %d bytes stack frame, %d/%d bytes spill stores/loads" %
                  (what[0], what[3], what[1], what[2], arch, k["stack"], k["spill_st"], k["spill_ld"]))
    print("%d kernel instantiations at d <= %d checked in %d ptxas reports: %d with spills or a stack frame" %
          (checked, max_d, len(logs), bad))
    if not checked:
        fail("the reports name no kernel of chapters %s" % ", ".join(chapters), 1)
    return 1 if bad else 0


def commit_of_tree():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    c = r.stdout.strip() or "unknown"
    d = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "05_flash_v2", "06_causal", "common/kernels", "common/simt/include"],
                       capture_output=True, text=True).stdout.strip()
    return c + ("-dirty" if d else "")


def write_out(out, rows, version, arch, nvdisasm):
    os.makedirs(out, exist_ok=True)
    cols = ["source", "kernel", "policy", "dtype", "d", "registers", "spill_st", "spill_ld", "stack", "smem", "threads", "blocks_per_sm",
            "loop_instructions", "loop_hmma", "loop_ldsm", "loop_ldgsts", "loop_mufu", "loop_fp32", "loop_convert", "loop_integer",
            "loop_bar", "loop_shfl", "loop_other", "loop_wavefronts", "instructions_per_hmma", "issue_ceiling", "shared_ceiling",
            "loop_all_paths_instructions", "inner_loops", "inner_trips"]
    with open(os.path.join(out, "kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            loop = r["loop"]
            hot = (loop["hot"] if loop else None) or {}
            issue, shared = ceilings(hot) if hot else (None, None)
            other = sum(v for k, v in hot.items() if k in ("shared", "global", "branch", "other"))
            w.writerow([r["source"], r["kernel"], r["policy"], r["dtype"], r["d"], r.get("registers", ""), r["spill_st"], r["spill_ld"],
                        r["stack"], r["smem"], r["threads"], r["blocks_per_sm"]] +
                       ([hot["total"], hot.get("HMMA", 0), hot.get("LDSM", 0), hot.get("LDGSTS", 0), hot.get("MUFU", 0),
                         hot.get("FP32", 0), hot.get("convert", 0), hot.get("integer", 0), hot.get("BAR", 0), hot.get("SHFL", 0),
                         other, hot["wavefronts"],
                         "%.2f" % (hot["total"] / hot["HMMA"]) if hot.get("HMMA") else "",
                         "%.3f" % issue if issue is not None else "", "%.3f" % shared if shared is not None else ""]
                        if hot else [""] * 15) +
                       ([loop["all"]["total"], len(loop["inner"]), inner_trips(loop)] if loop else [""] * 3))
    fp16 = [r for r in rows if r["dtype"] == "fp16" and r["d"] in (64, 128)]
    lines = ["# What the compiler made of chapters 05 and 06 (%s)" % arch, "",
             "Written by `tools/kernel_resources.py --out results/static-sm90` at commit %s on %s." % (commit_of_tree(), datetime.date.today()),
             "Compiler: %s (ptxas -v)%s." % (version, "; instruction mix from %s" % os.path.basename(nvdisasm) + " (" +
                                               next((l for l in subprocess.run([nvdisasm, "--version"], capture_output=True, text=True).stdout.splitlines()
                                                            if "release" in l), "version unknown") + ")"
                                               if nvdisasm else "; no nvdisasm: no instruction mix"),
             "A compiler report, not a measurement: nothing here ran on a GPU.", "",
             "`kernels.csv` has every instantiation (fp16, bf16, and fp32 for the steps that take it; every head dim). The",
             "loop columns count, per warp, what one",
             "iteration of the K/V tile loop (the loop with the most HMMA, found by its back edge in nvdisasm's basic",
             "blocks) executes on the common path: a whole K/V tile, not the last, of a problem without is_causal or",
             "attn_mask. Each basic block on that path counts once, an inner loop (the copy loops of steps c to g) times",
             "its trip count; ptxas's never-executed `@!PT` placeholders count as instructions (they take issue slots).",
             "The path is the one thread 0 takes: branches whose conditions come from threadIdx, compile-time constants",
             "and `causal` = `mask_kind` = none are evaluated (this gives the copy loops' trip counts and their unrolled",
             "remainders); any other branch takes the successor that returns to the loop head through the fewest",
             "instructions of the mask code (attn_mask, the causal test, the -inf of keys past Lk; for `lean_loop` all of",
             "`scale_and_mask` and the last tile's zero-filling copy), and on a tie the longer one (the copy of the next",
             "tile). `inner_trips`: trips x instructions of each inner loop, `?` where no trip count could be derived",
             "(the loop is then counted once). `loop_all_paths_instructions`: every block of the tile loop once.",
             "Three ceilings, as fractions of the 989 TFLOP/s dense fp16/bf16 peak, which is one m16n8k16 HMMA per clock",
             "per SM: issue = 4 x HMMA / instructions (4 schedulers, one instruction per clock each); shared = HMMA /",
             "shared-memory wavefronts (128 bytes per clock; ldmatrix.x4 and a warp's 16-byte cp.async: 4 each; bank",
             "conflicts not counted; `@!PT LDS` moves nothing); and mma.sync's own rate, 63 to 67 % of the",
             "peak on Hopper in published microbenchmarks (`common/gpus/gpus.h`, [mma]; not from this report). Each",
             "bounds the loop alone: the least of the",
             "three applies, none is a discount on another.", "",
             "fp16 at d = 64 and 128:", "",
             "| kernel | policy | d | registers | spills (st/ld B) | stack B | smem KiB | blocks/SM | instr/HMMA | issue | shared |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in fp16:
        loop = r["loop"]
        hot = (loop["hot"] if loop else None) or {}
        issue, shared = ceilings(hot) if hot else (None, None)
        lines.append("| %s | %s | %d | %s | %d/%d | %d | %.1f | %s | %s | %s | %s |" % (
            r["kernel"], r["policy"] or "-", r["d"], r.get("registers", ""), r["spill_st"], r["spill_ld"], r["stack"], r["smem"] / 1024,
            r["blocks_per_sm"], "%.2f" % (hot["total"] / hot["HMMA"]) if hot.get("HMMA") else "-",
            "%.0f %%" % (100 * issue) if issue is not None else "-", "%.0f %%" % (100 * shared) if shared is not None else "-"))
    open(os.path.join(out, "README.md"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
