#!/usr/bin/env python3
"""test_capi.py: the book's C interface (libflashsteps_capi.so, gpu backend) as
tools/bench_torch_sdpa.py --chapters loads it, through ctypes.

  python3 tests/test_capi.py LIB FLASHSTEPS_BINARY     # exit 0 pass, 1 fail

Checks, without needing a GPU: the library lists the same variants as `flashsteps run --list`, one
best variant per chapter; its answers about a problem (unsupported, workspace bytes, modelled bytes)
are those of the registry; a run without a usable GPU fails with a message instead of crashing; and
the benchmark script refuses a missing library or an unknown variant with exit code 2. Chapter 10
through the `mods` words (tools/bench_torch_masks.py): the tables and visibility the library gives,
its refusals, and the benchmark's Python mask_mods, pair by pair, against the library's rule.
"""
import ctypes
import re
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bench_torch_sdpa as bench  # noqa: E402

failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def main():
    lib, binary = sys.argv[1], sys.argv[2]
    c = bench.Chapters(lib)

    listed = subprocess.run([binary, "run", "--list"], capture_output=True, text=True, check=True).stdout
    names = re.findall(r"^  (\S+) ", listed, re.M)
    expect(sorted(n for _, n, _ in c.variants) == sorted(names), f"the library lists the {len(names)} variants of --list")
    best = c.select("best")
    chapters = sorted({ch for ch, _, _ in c.variants})
    expect(sorted(ch for ch, _ in best) == chapters, "one best variant per chapter")

    p = c.problem(1, 2, 128, 96, 64, "fp16", False, 0.125)
    expect(c.unsupported("naive", p) == "", "naive runs fp16 d = 64")
    expect("fp32" in c.unsupported("pipelined", c.problem(1, 2, 128, 96, 64, "fp32", False, 0.125)),
           "pipelined refuses fp32 and says so")
    expect(c.unsupported("no_such_variant", p) == "unknown variant", "an unknown name is reported, not a crash")
    # naive keeps S and P in fp32: 2 * B * H * Lq * Lk * 4 bytes (01_naive_attention/variants.cpp).
    expect(c.workspace_bytes("naive", p) == 2 * 1 * 2 * 128 * 96 * 4, "naive's workspace is its two N x N buffers")
    expect(c.workspace_bytes("pipelined", p) == 0, "pipelined needs no workspace")
    expect(c.hbm_bytes("pipelined", p) >= 2 * 2 * (128 + 96) * 64, "modelled bytes are at least Q, K, V, O once")

    # --list marks each chapter's best with "(best)"; chapter 01's as the registry has it, not a name fixed here.
    best01 = re.findall(r"^  (\S+) .*\(best\)$", listed.split("\n\n02_")[0], re.M)
    expect(len(best01) == 1 and c.select("best:01") == [("01_naive_attention", best01[0])],
           f"best:01 is chapter 01's best variant ({best01})")
    expect({ch for ch, _ in c.select("all:05,06")} == {"05_flash_v2", "06_causal"}, "all:05,06 is chapters 05 and 06")
    try:
        c.select("bogus")
        expect(False, "--variants bogus is refused")
    except ValueError as e:
        expect("bogus" in str(e), "--variants bogus is refused, naming it")

    if not has_gpu():
        try:
            c.run("pipelined", p, None, None, None, None, None)
            expect(False, "a run without a GPU fails")
        except RuntimeError as e:
            expect(len(str(e)) > 0, f"a run without a GPU fails with a message ({e})")
        # With pointers that pass every check (never touched: the machine's GPU is asked for first),
        # the message is a sentence about the machine, not the first CUDA call's error name.
        fake = ctypes.c_void_p(256)
        for what, call in (("fs_run", lambda: c.run("pipelined", p, fake, fake, fake, fake, None)),
                           ("fs_synchronize", c.synchronize)):
            try:
                call()
                expect(False, f"{what} without a GPU fails")
            except RuntimeError as e:
                expect("on this machine" in str(e) and "cudaError" not in str(e),
                       f"{what} without a GPU says so in a sentence ({e})")

    script = ROOT / "tools" / "bench_torch_sdpa.py"
    r = subprocess.run([sys.executable, str(script), "--chapters", "/nonexistent/lib.so"], capture_output=True, text=True)
    expect(r.returncode == 2 and "cannot load" in r.stderr, "a missing library: exit 2 with a message")
    r = subprocess.run([sys.executable, str(script), "--chapters", lib, "--variants", "bogus"], capture_output=True,
                       text=True)
    expect(r.returncode == 2 and "bogus" in r.stderr, "an unknown --variants name: exit 2 naming it")

    # Chapter 10 through the mods words (tools/bench_torch_masks.py): the library reads them, answers
    # for them, and its rule (fs_visible) is the one the benchmark's Python mask_mods write for FlexAttention.
    import bench_torch_masks as masks  # noqa: E402
    cases = [(0, 130, 130, "mask_mod=sliding_window window=7"), (0, 130, 130, "mask_mod=prefix_lm prefix=20"),
             (0, 150, 150, "mask_mod=document seed=3"), (0, 70, 150, "mask_mod=document documents=1,63,86"),
             (0, 130, 90, "mask_mod=document_causal documents=40,1,89"),
             (0, 200, 140, "mask_mod=random_blocks seed=5"),
             (0, 200, 140, "mask_mod=blocks block_size=64,48 kv_num_blocks=1,0,2,1 kv_indices=2,0,1,0 "
                           "full_kv_num_blocks=1,1,0,0 full_kv_indices=0,2"),
             (0, 70, 150, "mask_mod=blocks block_size=128,128 kv_num_blocks=1 kv_indices=1"),
             (0, 40, 70, "mask_mod=window window=5,2"), (0, 70, 40, "mask_mod=window window=-1,0"),
             (0, 70, 40, "mask_mod=window window=3,-1"), (1, 50, 80, "none"), (2, 80, 50, "softcap=30 alibi"),
             (1, 62, 54, "mask_mod=varlen seqlens=5,0,40,17 seqlens_k=9,3,40,2"),
             (2, 62, 54, "mask_mod=varlen seqlens=5,0,40,17 seqlens_k=9,3,40,2 kv_heads=1"),
             (0, 62, 54, "mask_mod=varlen_window window=4,2 seqlens=5,0,40,17 seqlens_k=9,3,40,2 softcap=5")]
    for causal, Lq, Lk, mods in cases:
        prob = c.problem(1, 2, Lq, Lk, 64, "fp16", False, 0.125, mods, causal_kind=causal)
        table = c.mod_table(prob)
        seen = c.visible(prob)
        r = masks.rule(mods, causal, Lq, Lk, table, lambda xs: xs)
        wrong = [(i, j) for i in range(Lq) for j in range(Lk)
                 if bool(seen[i * Lk + j]) != (True if r is None else bool(r(0, 0, i, j)))]
        expect(not wrong and 0 < sum(seen) < Lq * Lk + (r is None), f"the benchmark's mask_mod is the library's rule: "
               f"causal {causal}, {Lq}x{Lk}, {mods} ({len(wrong)} pairs differ{', first ' + str(wrong[0]) if wrong else ''})")
    # The reference's score mods: each row's diagonal (Problem::diagonal_offset) and ALiBi's slopes
    # (params.h's alibi_slope), by hand.
    table = [0, 5, 5, 45, 62, 0, 9, 12, 52, 54]
    expect(masks.diagonals("mask_mod=varlen seqlens=5,0,40,17 seqlens_k=9,3,40,2", 62, 54, table)
           == [4] * 5 + [7] * 40 + [-8] * 17 and masks.diagonals("alibi", 80, 50, []) == [-30] * 80,
           "each row's diagonal: its sequence's bottom-right one, or Lk - Lq")
    expect(masks.alibi_slopes(8) == [2.0 ** -(h + 1) for h in range(8)]
           and masks.alibi_slopes(12)[8:] == [2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5, 2.0 ** -3.5],
           "ALiBi's slopes: 2^-8(h+1)/n, then every other slope of 2n's sequence")
    expect(masks.slopes_of("alibi_slopes=0.5,-1", 2) == [0.5, -1.0] and masks.slopes_of("alibi", 2) == masks.alibi_slopes(2)
           and masks.slopes_of("softcap=3", 2) is None, "the benchmark's slopes: alibi_slopes= as given, else the paper's")
    slopes = c.problem(2, 2, 70, 150, 64, "fp16", False, 0.125, "mask_mod=document documents=1,63,86 alibi_slopes=0.5,-0.25")
    expect(c.mod_table(slopes) == [0] + [1] * 63 + [2] * 86 + list(struct.unpack("4i", struct.pack("4f", 0.5, -0.25, 0.5, -0.25))),
           "given ALiBi slopes ride after the rule's table, one per (batch, head)")
    expect("one per head" in (c.unsupported("score_mod", c.problem(1, 2, 70, 70, 64, "fp16", False, 0.125, "alibi_slopes=0.5"))
                              or ""), "a slope count that is not H is refused, saying so")
    expect(c.lib.fs_mod_table(None, None, 0) == -1 and "NULL" in c.lib.fs_last_error().decode()
           and c.lib.fs_unsupported(None, None) is None, "a NULL problem or variant is refused, not dereferenced")
    doc = c.problem(1, 2, 150, 150, 64, "fp16", False, 0.125, "mask_mod=document seed=3")
    expect(len(c.mod_table(doc)) == 150, "a document's table: one id per position")
    given = c.problem(1, 2, 70, 150, 64, "fp16", False, 0.125, "mask_mod=document documents=1,63,86")
    expect(c.mod_table(given) == [0] + [1] * 63 + [2] * 86, "given documents' table: their lengths' ids, in order")
    packed = c.problem(1, 4, 62, 54, 64, "fp16", False, 0.125, "mask_mod=varlen_window window=4,2 seqlens=5,0,40,17 "
                       "seqlens_k=9,3,40,2 kv_heads=2")
    expect(c.mod_table(packed) == [0, 5, 5, 45, 62, 0, 9, 12, 52, 54, 4, 2],
           "a packed batch's table: cu_seqlens_q, cu_seqlens_k, the window's sides")
    expect(c.unsupported("window", packed) == "" and "varlen_window" in c.unsupported("varlen", packed),
           "step f runs a packed window; step e refuses it, naming it")
    expect(c.unsupported("mask_tensor", packed) != "", "step a refuses a packed batch and says why")
    expect(c.workspace_bytes("block_mask", c.problem(1, 2, 130, 130, 64, "fp16", False, 0.125,
                                                     "mask_mod=sliding_window window=7")) > 0,
           "the block mask step's workspace holds its lists")
    wrong_sum = c.problem(1, 2, 60, 54, 64, "fp16", False, 0.125, "mask_mod=varlen seqlens=5,0,40,17 seqlens_k=9,3,40,2")
    expect("add up to Lq = 62" in c.unsupported("varlen", wrong_sum), "a packed batch whose sums are not Lq, Lk is refused")
    for bad, why in (("mask_mod=circle", "unknown mask_mod"), ("softcap=-1", "softcap"), ("kv_heads=1", "packed")):
        prob = c.problem(1, 2, 64, 64, 64, "fp16", False, 0.125, bad)
        expect(why in c.unsupported("varlen", prob) and c.workspace_bytes("varlen", prob) == -1
               and c.hbm_bytes("varlen", prob) == -1, f"mods {bad!r} refused with a message, -1 for the sizes")
        try:
            c.mod_table(prob)
            expect(False, f"mod_table refuses {bad!r}")
        except ValueError as e:
            expect(why in str(e), f"mod_table refuses {bad!r}: {e}")
    if not has_gpu():
        try:
            c.run("window", packed, None, None, None, None, None, None)
            expect(False, "a packed run without pointers fails")
        except RuntimeError as e:
            expect("must not be NULL" in str(e), f"a packed run without pointers fails with a message ({e})")
    mscript = ROOT / "tools" / "bench_torch_masks.py"
    r = subprocess.run([sys.executable, str(mscript), "--chapters", "/nonexistent/lib.so"], capture_output=True, text=True)
    expect(r.returncode == 2 and "cannot load" in r.stderr, "bench_torch_masks: a missing library: exit 2")
    for given, says in (("", "needs the library's file name"), ("libm.so.6", "cannot load")):  # libm: not the book's
        r = subprocess.run([sys.executable, str(mscript), "--chapters", given], capture_output=True, text=True)
        expect(r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr,
               f"bench_torch_masks --chapters {given!r}: exit 2, \"{says}\" (got {r.returncode}: {r.stderr.strip()[-160:]})")
    r = subprocess.run([sys.executable, str(mscript), "--chapters", lib, "--variants", "bogus"], capture_output=True,
                       text=True)
    expect(r.returncode == 2 and "bogus" in r.stderr, "bench_torch_masks: an unknown variant: exit 2 naming it")
    problems = masks.problems("small") + masks.problems("gpu")
    for B, H, N, d, causal, mods in problems:
        prob = c.problem(B, H, N, N, d, "fp16", False, 1 / d ** 0.5, mods, causal_kind=causal)
        runs = [n for ch, n, _ in c.variants if ch.startswith("10_") and c.unsupported(n, prob) == ""]
        expect(len(runs) >= 1, f"the benchmark's problem {mods} (N = {N}, d = {d}) runs on chapter 10's {runs}")

    # Decoding (chapter 08): the same through fs_decode_*, and tools/bench_torch_decode.py's refusals.
    sys.path.insert(0, str(ROOT / "tools"))
    import bench_torch_decode as dec  # noqa: E402
    dl = dec.Decoding(lib)
    listed = subprocess.run([binary, "decode", "--list"], capture_output=True, text=True, check=True).stdout
    dnames = re.findall(r"^  (\S+) ", listed, re.M)
    expect([n for n, _ in dl.variants] == dnames, f"the library lists the {len(dnames)} decoding variants of decode --list")
    dbest = re.findall(r"^  (\S+) .*\(best\)$", listed, re.M)
    expect(dl.select("best") == dbest and len(dbest) == 1, f"one best decoding variant ({dbest})")
    dp = dl.problem(1, 8, 2, 1, 64, "fp16", True, 16, 4, False, 0, 0.125, [40])
    expect(dl.unsupported(dbest[0], dp) == "", "the best decoding variant runs a paged fp16 problem")
    expect("unpaged" in dl.unsupported("decode_kernel", dp), "decode_kernel refuses a paged cache and says so")
    expect(dl.unsupported("no_such_variant", dp) == "unknown variant", "an unknown decoding name is reported")
    expect(dl.splits("split_kv", dp) >= 1 and dl.splits("decode_kernel", dp) == 1, "split counts answered")
    bad = dl.problem(1, 8, 3, 1, 64, "fp16", True, 16, 4, False, 0, 0.125, [40])
    expect("multiple of the KV heads" in dl.unsupported(dbest[0], bad), "Hq not a multiple of Hkv is refused")
    no_lens = dl.problem(1, 8, 2, 1, 64, "fp16", True, 16, 4, False, 0, 0.125, [40])
    no_lens.seqlens_host = None
    expect("seqlens_host" in dl.unsupported(dbest[0], no_lens) and dl.splits(dbest[0], no_lens) == -1
           and dl.workspace_bytes(dbest[0], no_lens) == -1, "a problem without its lengths is refused, not guessed")
    expect(dl.lib.fs_decode_unsupported(None, None) is None and dl.lib.fs_decode_splits(b"split_kv", None) == -1
           and "NULL" in dl.lib.fs_last_error().decode() and dl.lib.fs_decode_workspace_bytes(b"split_kv", None) == -1
           and dl.lib.fs_decode_run(None, ctypes.byref(dp), *[None] * 9) == 1
           and "unknown decoding variant (NULL)" in dl.lib.fs_last_error().decode(),
           "a NULL decoding problem or variant is refused, not dereferenced")
    zero_page = dl.problem(1, 8, 2, 1, 64, "fp16", True, 0, 4, False, 0, 0.125, [40])
    expect("page_size" in dl.unsupported(dbest[0], zero_page), "a page size of 0 is refused")
    if not has_gpu():
        try:
            dl.run(dbest[0], dp, None, None, None, None, None, None, None, None, None)
            expect(False, "a decoding run without a GPU fails")
        except RuntimeError as e:
            expect(len(str(e)) > 0, f"a decoding run without a GPU fails with a message ({e})")
    dscript = ROOT / "tools" / "bench_torch_decode.py"
    r = subprocess.run([sys.executable, str(dscript), "--chapters", "/nonexistent/lib.so"], capture_output=True, text=True)
    expect(r.returncode == 2 and "cannot load" in r.stderr, "bench_torch_decode: a missing library: exit 2")
    r = subprocess.run([sys.executable, str(dscript), "--chapters", lib, "--variants", "bogus"], capture_output=True,
                       text=True)
    expect(r.returncode == 2 and "bogus" in r.stderr, "bench_torch_decode: an unknown variant: exit 2 naming it")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
