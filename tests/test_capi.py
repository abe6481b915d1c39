#!/usr/bin/env python3
"""test_capi.py: the book's C interface (libflashsteps_capi.so, gpu backend) as
tools/bench_torch_sdpa.py --chapters loads it, through ctypes.

  python3 tests/test_capi.py LIB FLASHSTEPS_BINARY     # exit 0 pass, 1 fail

Checks, without needing a GPU: the library lists the same variants as `flashsteps run --list`, one
best variant per chapter; its answers about a problem (unsupported, workspace bytes, modelled bytes)
are those of the registry; a run without a usable GPU fails with a message instead of crashing; and
the benchmark script refuses a missing library or an unknown variant with exit code 2.
"""
import re
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

    script = ROOT / "tools" / "bench_torch_sdpa.py"
    r = subprocess.run([sys.executable, str(script), "--chapters", "/nonexistent/lib.so"], capture_output=True, text=True)
    expect(r.returncode == 2 and "cannot load" in r.stderr, "a missing library: exit 2 with a message")
    r = subprocess.run([sys.executable, str(script), "--chapters", lib, "--variants", "bogus"], capture_output=True,
                       text=True)
    expect(r.returncode == 2 and "bogus" in r.stderr, "an unknown --variants name: exit 2 naming it")

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
