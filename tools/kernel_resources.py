#!/usr/bin/env python3
"""kernel_resources.py: what the compiler made of chapters 05 and 06, for one GPU architecture.

For every kernel instantiation of 05_flash_v2/*.cu and 06_causal/*.cu compiled for sm_90 (nvcc,
ptxas -v): registers, spill bytes, stack frame, shared memory and blocks per SM. Where nvdisasm
is found (on PATH, or from the PyPI package nvidia-cuda-nvdisasm) also the tile loop's
instruction mix (HMMA, LDSM, LDGSTS, MUFU, FP32, integer, BAR...) and the two ceilings it sets,
as a fraction of the SM's mma.sync m16n8k16 peak of one HMMA per clock:
  issue   4 x HMMA / instructions: 4 schedulers issue one instruction per clock each
  shared  HMMA / shared-memory wavefronts: 128 bytes per clock (ldmatrix.x4 and a warp's
          16-byte cp.async are 4 wavefronts each; bank conflicts not counted; ptxas's never-executed
          `@!PT LDS` placeholders count for issue only)
These are upper bounds from the instruction stream alone (no latency, no memory system).

  tools/kernel_resources.py --out results/static-sm90        # write kernels.csv and README.md
  tools/kernel_resources.py --check                          # exit 1 if a kernel at d <= 128 spills
                                                             # or has a stack frame
  tools/kernel_resources.py --check --ptxas-logs build-gpu   # the same from the gpu build's own ptxas
                                                             # reports (<object>.ptxas), compiling nothing
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
    if given:
        return given if os.path.exists(given) else None
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
    cmd = [nvcc, "-std=c++20", "-O3", "-DNDEBUG", "-lineinfo", "-cubin", "-arch=" + arch, "-Xptxas", "-v",
           "-I" + ROOT, "-I" + os.path.join(ROOT, "common"), "-I" + os.path.join(ROOT, "common/simt/include"),
           src, "-o", cubin]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("nvcc failed on %s:\n%s" % (src, r.stderr[-4000:]), 1)
    return cubin, r.stdout + r.stderr


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
    and block_threads, compiled on the host."""
    cxx = shutil.which("c++") or shutil.which("g++")
    cuda_inc = None
    for cand in [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]:
        if cand and os.path.exists(os.path.join(cand, "include", "cuda_runtime.h")):
            cuda_inc = os.path.join(cand, "include")
    if not cxx or not cuda_inc:
        return {}
    lines = ['#include <cstdio>', '#include "05_flash_v2/flash_v2.h"', "int main() {"]
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
    """The attn_mask part of mask_score (numeric.cuh): no problem without an attn_mask runs it."""
    path = os.path.join(ROOT, "common/kernels/numeric.cuh")
    rng = function_ranges(path, ["mask_score"]).get("mask_score")
    if not rng:
        return set()
    lines = open(path).read().splitlines()
    start = next((n for n in range(rng[0], rng[1] + 1) if "MaskKind::none ||" in lines[n - 1]), rng[1])
    return {("numeric.cuh", n) for n in range(start + 1, rng[1] + 1)}


def cold_lines():
    """Source lines that a whole, unmasked K/V tile of the fast step never executes: scale_and_mask
    (masked tiles only) and copy_rows' zero-filling branch (the last tile only)."""
    cold = attn_mask_lines()
    fa2 = os.path.join(ROOT, "05_flash_v2/fa2_tile.cuh")
    for lo, hi in function_ranges(fa2, ["scale_and_mask"]).values():
        cold |= {("fa2_tile.cuh", n) for n in range(lo, hi + 1)}
    # The call of scale_and_mask in the fast step: its arguments ((batch, head) by a division) are
    # computed on the masked branch only.
    lean = os.path.join(ROOT, "05_flash_v2/lean_loop.cuh")
    for n, l in enumerate(open(lean).read().splitlines(), 1):
        if "scale_and_mask<" in l and not l.strip().startswith("//"):
            cold.add(("lean_loop.cuh", n))
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


def parse_sass(text):
    """{mangled: [(address, opcode, target label or None, label at this point, source chain, never)]}:
    `never` for an instruction guarded by @!PT (ptxas's placeholders): it takes an issue slot but moves
    no data."""
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
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", line)
        if m:
            if pending_chain:
                chain, pending_chain = pending_chain, []
            target = re.search(r"`\((\.L_x_\d+)\)", m.group(4))
            cur.append((int(m.group(1), 16), m.group(3), target.group(1) if target and m.group(3).startswith("BRA") else None,
                        labels, set(chain), (m.group(2) or "").strip() == "@!PT"))
            labels = []
    return funcs


def tile_loop(instrs, cold):
    """The loop with the most HMMA (the K/V tile loop) and its instruction mix, all paths and hot path."""
    where = {}
    for i, ins in enumerate(instrs):
        for lab in ins[3]:
            where[lab] = i
    best = None
    for i, ins in enumerate(instrs):
        t = ins[2]
        if t and t in where and where[t] <= i:
            lo = where[t]
            h = sum(1 for x in instrs[lo:i + 1] if x[1].startswith("HMMA"))
            if best is None or h > best[2]:
                best = (lo, i, h)
    if not best or best[2] == 0:
        return None
    lo, hi, _ = best
    body = instrs[lo:hi + 1]
    inner_loops = sum(1 for j, x in enumerate(body) if x[2] and x[2] in where and lo <= where[x[2]] < lo + j and x is not body[-1])

    def mix(seq):
        counts = {}
        for x in seq:
            c = classify(x[1])
            counts[c] = counts.get(c, 0) + 1
        counts["total"] = len(seq)
        counts["wavefronts"] = sum(wavefronts(x[1]) for x in seq if not x[5])
        return counts

    hot = [x for x in body if not (x[4] & cold)]
    return {"all": mix(body), "hot": mix(hot), "inner_loops": inner_loops}


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
    cold, mask_only = cold_lines(), attn_mask_lines()
    steps = {"split_k", "split_q", "tensor_cores", "cp_async", "swizzle", "ldmatrix_x4", "rows_32", "lean_loop"}
    for r in rows:
        r["kernel"], r["dtype"], r["d"], r["policy"] = describe(names[r["mangled"]]) or (names[r["mangled"]], "", 0, "")
    smem = smem_table(sorted({(r["kernel"], r["d"], 4 if r["dtype"] == "fp32" else 2) for r in rows if r["kernel"] in steps}))
    for r in rows:
        elem = 4 if r["dtype"] == "fp32" else 2
        dyn, r["threads"] = smem.get((r["kernel"], r["d"], elem), (0, 128))
        r["smem"] = r["static_smem"] + dyn
        r["blocks_per_sm"] = blocks_per_sm(r.get("registers", 0), r["threads"], r["smem"]) if (r["kernel"], r["d"], elem) in smem else ""
        loop = tile_loop(sass[r["mangled"]], cold if r["kernel"] == "lean_loop" else mask_only) if r["mangled"] in sass else None
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


def check_logs(build, max_d):
    if not os.path.isdir(build):
        fail("--ptxas-logs %s: no such build folder" % build)
    logs = sorted({f for pat in ("05_flash_v2", "06_causal")
                   for f in glob.glob(os.path.join(build, "**", pat + "*", "**", "*.ptxas"), recursive=True)})
    if not logs:
        fail("no ptxas reports under %s: is it a gpu build of chapters 05 and 06 (cmake/ptxas_log.sh)?" % build, 1)
    kernels = {}
    for f in logs:
        kernels.update(parse_ptxas(open(f).read()))
    names = demangle(sorted({m for m, _ in kernels}))
    bad, checked = 0, 0
    for (mangled, arch), k in sorted(kernels.items()):
        what = describe(names[mangled])
        if not what or what[2] > max_d:
            continue
        checked += 1
        if k["stack"] or k["spill_st"] or k["spill_ld"]:
            bad += 1
            print("FAIL %s %s %s d=%d %s: %d bytes stack frame, %d/%d bytes spill stores/loads" %
                  (what[0], what[3], what[1], what[2], arch, k["stack"], k["spill_st"], k["spill_ld"]))
    print("%d kernel instantiations at d <= %d checked in %d ptxas reports: %d with spills or a stack frame" %
          (checked, max_d, len(logs), bad))
    if not checked:
        fail("the reports name no kernel of chapters 05 and 06", 1)
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
            "loop_all_paths_instructions", "inner_loops"]
    with open(os.path.join(out, "kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            loop = r["loop"]
            hot = loop["hot"] if loop else {}
            issue, shared = ceilings(hot) if loop else (None, None)
            other = sum(v for k, v in hot.items() if k in ("shared", "global", "branch", "other"))
            w.writerow([r["source"], r["kernel"], r["policy"], r["dtype"], r["d"], r.get("registers", ""), r["spill_st"], r["spill_ld"],
                        r["stack"], r["smem"], r["threads"], r["blocks_per_sm"]] +
                       ([hot["total"], hot.get("HMMA", 0), hot.get("LDSM", 0), hot.get("LDGSTS", 0), hot.get("MUFU", 0),
                         hot.get("FP32", 0), hot.get("convert", 0), hot.get("integer", 0), hot.get("BAR", 0), hot.get("SHFL", 0),
                         other, hot["wavefronts"],
                         "%.2f" % (hot["total"] / hot["HMMA"]) if hot.get("HMMA") else "",
                         "%.3f" % issue if issue is not None else "", "%.3f" % shared if shared is not None else "",
                         loop["all"]["total"], loop["inner_loops"]] if loop else [""] * 17))
    fp16 = [r for r in rows if r["dtype"] == "fp16" and r["d"] in (64, 128)]
    lines = ["# What the compiler made of chapters 05 and 06 (%s)" % arch, "",
             "Written by `tools/kernel_resources.py --out results/static-sm90` at commit %s on %s." % (commit_of_tree(), datetime.date.today()),
             "Compiler: %s (ptxas -v)%s." % (version, "; instruction mix from %s" % os.path.basename(nvdisasm) + " (" +
                                               next((l for l in subprocess.run([nvdisasm, "--version"], capture_output=True, text=True).stdout.splitlines()
                                                            if "release" in l), "version unknown") + ")"
                                               if nvdisasm else "; no nvdisasm: no instruction mix"),
             "A compiler report, not a measurement: nothing here ran on a GPU.", "",
             "`kernels.csv` has every instantiation (fp16, bf16; every head dim). The loop columns count the SASS of the",
             "K/V tile loop (the loop with the most HMMA) per warp and tile, on the path of a problem without attn_mask (the",
             "attn_mask code of `mask_score` excluded); for `lean_loop` the path of a whole, unmasked tile (`scale_and_mask`",
             "and the last tile's zero-filling copy excluded too). `loop_all_paths_instructions` counts every path.",
             "Loops nested in the tile loop (`inner_loops`: the copy loops of steps c to g) are counted once, not per trip.",
             "Ceilings, as fractions of one HMMA per clock per SM: issue = 4 x HMMA / instructions; shared = HMMA /",
             "shared-memory wavefronts (ldmatrix.x4 and a warp's 16-byte cp.async: 4 each; bank conflicts not counted; the",
             "never-executed `@!PT LDS` that ptxas places near cp.async count for issue only).", "",
             "fp16 at d = 64 and 128:", "",
             "| kernel | policy | d | registers | spills (st/ld B) | stack B | smem KiB | blocks/SM | instr/HMMA | issue | shared |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in fp16:
        loop = r["loop"]
        hot = loop["hot"] if loop else {}
        issue, shared = ceilings(hot) if loop else (None, None)
        lines.append("| %s | %s | %d | %s | %d/%d | %d | %.1f | %s | %s | %s | %s |" % (
            r["kernel"], r["policy"] or "-", r["d"], r.get("registers", ""), r["spill_st"], r["spill_ld"], r["stack"], r["smem"] / 1024,
            r["blocks_per_sm"], "%.2f" % (hot["total"] / hot["HMMA"]) if hot.get("HMMA") else "-",
            "%.0f %%" % (100 * issue) if issue is not None else "-", "%.0f %%" % (100 * shared) if shared is not None else "-"))
    open(os.path.join(out, "README.md"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
