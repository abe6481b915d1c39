#!/usr/bin/env python3
"""sass_chain.py: where one warp's cycles go in a kernel's tile loop, as the model counts them.

The model's latency floor (common/model/model.h) starts from the cycles one warp alone takes to
issue an iteration of the kernel's tile loop: the stalls the compiler encoded in each instruction's
control bits, and the waits for results that come back later (shared memory, global loads, MUFU,
shuffles; a wgmma group's products). tools/sass_issue.py counts them into common/model/sass_sm90.inc
(the tile part's cycles); this tool prints the same count instruction by instruction, as Nsight
Compute's source view prints a kernel's stall samples: the total, what it waited for, the source
lines that take the most cycles, and the longest waits.

  tools/sass_chain.py 09_hopper/persistent.cu 'persistent_kernel<__half, 128>'
  tools/sass_chain.py 05_flash_v2/lean_loop.cu 'lean_loop_kernel<__half, 64' --top 20

SOURCE is a kernel file of the book; KERNEL a part of one kernel's demangled name (the listing says
which kernels matched when it names none or several). The path is the common one (a problem
without is_causal, attn_mask or mods), in the steady state (the loop's second iteration), every
global load hitting L2, as the data file's tile part (notes/performance_model.md, "Chapter 09's
SASS"). It compiles SOURCE as sass_issue.py does (needs nvcc and nvdisasm: pip install
nvidia-cuda-nvdisasm). Exit 2 on bad input or a missing tool: a SOURCE that is not a kernel file of
the book, before any compiling; a KERNEL that names none of its kernels or several, with the list.
"""
import argparse
import collections
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources as kr  # noqa: E402
import sass_issue as si  # noqa: E402


def what(why):
    """The kind of result a wait was for, from the op that sets the scoreboard (block_issue's trace)."""
    if why == "wgmma":
        return "wgmma groups (WARPGROUP.DEPBAR: the products of this warp's part)"
    if why.endswith("(its operands read)"):  # a store's or a copy's registers, read a few cycles after issue
        return "registers read (" + why.split(" ")[0].split(".")[0] + ")"
    if why == "earlier":  # block_issue: a scoreboard its block found set
        return "results asked for before the block (the block before, or the iteration before)"
    if why.startswith(("LDS", "LDSM", "ATOMS")):
        return "shared memory (LDS, LDSM)"
    if why.startswith(si.GLOBAL):
        return "global loads (at L2's latency)"
    if why.startswith("MUFU"):
        return "MUFU (exponentials)"
    if why.startswith(("SHFL", "VOTE")):
        return "shuffles"
    return "other results (" + why.split(" ")[0].split(".")[0] + ")"


def report(name, instrs, trace, top, part="the data file's tile part"):
    """The tool's listing of one kernel's traced tile part (sass_issue.block_issue's entries, each
    counted as often as its last field says), the lines it prints."""
    total = sum(e[1] for e in trace)
    issued = sum(e[4] for e in trace)
    waits = collections.Counter()
    for _, _, w, why, _ in trace:
        if w > 0:
            waits[what(why)] += w
    stalls = total - sum(waits.values()) - issued
    out = ["%s" % name,
           "its tile loop, one warp alone in the steady state (the model's latency floor; %s): "
           "%d instructions, %d cycles" % (part, round(issued), round(total)),
           "  %-62s %6d" % ("issuing (a cycle an instruction)", issued),
           "  %-62s %6d" % ("the stalls the compiler encoded beyond that cycle", round(stalls))]
    for k, w in waits.most_common():
        out.append("  %-62s %6d" % ("waiting for " + k, round(w)))
    lines = collections.Counter()
    for i, n, _, _, _ in trace:
        lines["%s:%d" % instrs[i]["line"] if instrs[i]["line"] else "(no line)"] += n
    out.append("the source lines that take the most cycles (each instruction's own line, inlined code's too):")
    for line, n in lines.most_common(top):
        out.append("  %-40s %6d  %4.1f %%" % (line, round(n), 100 * n / total))
    stalled = collections.Counter()
    for i, n, w, _, times in trace:
        stalled[instrs[i]["op"].split(".")[0]] += n - w - times
    out.append("the stalls the compiler encoded, by instruction (a chain of dependent ones stalls at each):")
    for op, n in stalled.most_common(top):
        if n <= 0:
            break
        out.append("  %-40s %6d" % (op, round(n)))
    # The special-function unit's pace: gpus.h's 16 MUFU results a clock per SM are 4 per scheduler,
    # a warp's instruction every 8 cycles, which ptxas respects by stalling the instructions between
    # two MUFU; what is between them beyond that is waits and other work. Where the trace is one
    # warp's sequence (every entry once: a wgmma part), the MUFU in order of issue.
    at, issued_at = 0, []
    for i, n, w, _, times in trace:
        if instrs[i]["op"].startswith("MUFU"):
            issued_at.append(at + w)
        at += n
    if len(issued_at) > 1 and all(e[4] == 1 for e in trace):
        out.append("MUFU: %d, one every %.1f cycles from the first to the last (at the special-function unit's pace, "
                   "a warp's instruction every 8 cycles per scheduler, they would be 8 apart)" %
                   (len(issued_at), (issued_at[-1] - issued_at[0]) / (len(issued_at) - 1)))
    out.append("the longest waits:")
    for i, n, w, why, times in sorted(trace, key=lambda e: -e[2] / e[4])[:top]:
        if w <= 0:
            break
        x = instrs[i]
        out.append("  %5x  %-44s waits %4d for %s%s" % (x["addr"], (x["op"] + " " + x["args"])[:44], round(w / times), why,
                                                        "" if times == 1 else " (each of %g trips)" % times))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="a kernel file of the book, e.g. 09_hopper/persistent.cu")
    ap.add_argument("kernel", help="part of one kernel's demangled name, e.g. 'persistent_kernel<__half, 128>'")
    ap.add_argument("--top", type=int, default=12, help="source lines and waits listed (default 12)")
    ap.add_argument("--nvcc", help="nvcc to use (default: on PATH or /usr/local/cuda/bin)")
    ap.add_argument("--nvdisasm", help="nvdisasm to use (default: on PATH, the CUDA toolkit or the PyPI package)")
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    rel = os.path.relpath(src, si.ROOT)
    if not os.path.isfile(src) or not src.endswith(".cu") or rel.startswith(".."):
        kr.fail("%s: not a kernel file of the book (a .cu file under %s)" % (a.source, si.ROOT))
    if a.top < 1:
        kr.fail("--top %d: at least 1" % a.top)
    if not a.kernel.strip():
        kr.fail("KERNEL: part of a kernel's name, not empty")
    nvcc, nvdisasm = si.find_tools(a.nvcc, a.nvdisasm)
    target = si.arch(src)
    smem = si.params_table()
    with tempfile.TemporaryDirectory() as tmp:
        sass = kr.disassemble(nvcc, nvdisasm, src, target, tmp)[1]
    names = kr.demangle(sorted(sass))
    found = [m for m in sorted(sass) if a.kernel in names[m]]
    if len(found) != 1:
        listing = "\n  ".join(names[m] for m in sorted(sass))
        kr.fail("%s: %s of %s's kernels match; they are:\n  %s" % (a.kernel, "none" if not found else len(found), rel, listing))
    m = found[0]
    instrs = sass[m]
    lines, _ = si.path_lines(names[m], instrs, kr.cold_lines(), kr.mask_lines(), kr.masked_tile_lines(), kr.diagonal_lines())
    trace = []
    si.issue_profile(instrs, lines, kr.common_params(smem, base=kr.params_base(names[m], target)), trace)
    if not trace:
        kr.fail("%s: no tile loop found (sass_issue.py's issue_profile: the loop with the most HMMA, or one with a "
                "__syncthreads of its own)" % names[m], 1)
    book = not rel.startswith("labs" + os.sep)  # the data file holds the book's kernels' rows, not a lab's
    print("\n".join(report("%s (%s, %s)" % (names[m], rel, target), instrs, trace, a.top,
                            "the data file's tile part" if book else "as the data file would count it")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
