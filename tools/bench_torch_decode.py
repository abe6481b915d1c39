#!/usr/bin/env python3
"""bench_torch_decode.py: chapter 08's decoding variants beside PyTorch, in one process, on the same
tensors: scaled_dot_product_attention with enable_gqa on the cache gathered into [B, Hkv, L, d]
(what PyTorch users run), and flash_attn_with_kvcache on the paged cache when flash-attn is
installed. Each variant's output is checked against SDPA's and its cache after the append against
the expected one; times are CUDA events around each call (the L2 flushed before each), medians of
--reps, in rounds (one repetition of every contender per round).

  python3 tools/bench_torch_decode.py --chapters build-gpu/lib/libflashsteps_capi.so \\
      --batches 1,8,64 --contexts 1024,8192,32768,131072 --csv results/<device>/decode.csv

page_size is empty for a contender that reads an unpaged layout. GB/s is the cache read once (K and
V of every key attended, 2 x B x L x Hkv x d x bytes) over the median time, beside the device's copy
bandwidth measured in the same run. At most 128 new tokens (chapter 08's limit: longer is a prefill).
--csv appends to a new or empty file, or to one this script wrote (its header first). Exit 2 on bad
input (the arguments are checked before torch is imported; a library that does not load, an unknown
variant, no GPU), 1 when an output is wrong.
"""
import argparse
import csv
import ctypes
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or through runpy
from results_csv import check_csv  # noqa: E402

FIELDS = ["device", "driver", "cuda", "torch", "commit", "contender", "dtype", "B", "Hq", "Hkv", "d", "context",
          "new_tokens", "page_size", "splits", "median_ms", "gb_s", "copy_gb_s", "max_err", "status"]


class Decoding:
    """The decoding variants through common/harness/capi.h (ctypes): no torch needed to load it."""

    class Problem(ctypes.Structure):
        _fields_ = [("B", ctypes.c_int), ("Hq", ctypes.c_int), ("Hkv", ctypes.c_int), ("Lq", ctypes.c_int),
                    ("d", ctypes.c_int), ("dtype", ctypes.c_int), ("paged", ctypes.c_int), ("page_size", ctypes.c_int),
                    ("max_pages", ctypes.c_int), ("causal", ctypes.c_int), ("splits", ctypes.c_int),
                    ("append", ctypes.c_int), ("scale", ctypes.c_float), ("seqlens_host", ctypes.POINTER(ctypes.c_int))]

    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        P, c, i, vp = ctypes.POINTER(self.Problem), ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p
        for name, res, argtypes in (("fs_decode_variant_count", i, []), ("fs_decode_variant_name", c, [i]),
                                    ("fs_decode_variant_best", i, [i]), ("fs_decode_unsupported", c, [c, P]),
                                    ("fs_decode_workspace_bytes", ctypes.c_double, [c, P]),
                                    ("fs_decode_splits", i, [c, P]),
                                    ("fs_decode_run", i, [c, P] + [vp] * 9), ("fs_synchronize", i, []),
                                    ("fs_last_error", c, []), ("fs_commit", c, [])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, argtypes
        self.lib = lib
        self.variants = [(lib.fs_decode_variant_name(k).decode(), bool(lib.fs_decode_variant_best(k)))
                         for k in range(lib.fs_decode_variant_count())]
        self.commit = lib.fs_commit().decode()

    def select(self, spec):
        names = [n for n, _ in self.variants] if spec == "all" else [n for n, b in self.variants if b] \
            if spec == "best" else [n.strip() for n in spec.split(",") if n.strip()]
        unknown = [n for n in names if n not in dict(self.variants)]
        if unknown or not names:
            raise ValueError(f"unknown decoding variant(s) {', '.join(unknown) or '(none)'}; known: "
                             f"{', '.join(n for n, _ in self.variants)}")
        return names

    def problem(self, B, Hq, Hkv, Lq, d, dtype, paged, page_size, max_pages, causal, splits, scale, lens):
        host_lens = (ctypes.c_int * B)(*lens)
        prob = self.Problem(B, Hq, Hkv, Lq, d, {"fp16": 1, "bf16": 2}[dtype], int(paged), page_size, max_pages,
                            int(causal), splits, 1, scale, host_lens)
        prob.host_lens = host_lens  # the lengths live as long as the problem that points to them
        return prob

    def unsupported(self, name, prob):
        why = self.lib.fs_decode_unsupported(name.encode(), ctypes.byref(prob))
        return "unknown variant" if why is None else why.decode()

    def workspace_bytes(self, name, prob):
        return int(self.lib.fs_decode_workspace_bytes(name.encode(), ctypes.byref(prob)))

    def splits(self, name, prob):
        return self.lib.fs_decode_splits(name.encode(), ctypes.byref(prob))

    def run(self, name, prob, q, k_cache, v_cache, k_new, v_new, o, table, lens, workspace):
        if self.lib.fs_decode_run(name.encode(), ctypes.byref(prob), q, k_cache, v_cache, k_new, v_new, o, table, lens,
                                  workspace) != 0:
            raise RuntimeError(self.lib.fs_last_error().decode())


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


# Chapter 08 decodes at most this many new tokens per sequence (DecodeProblem::validate in
# common/harness/decode/decode.cpp): longer is a prefill.
MAX_NEW_TOKENS = 128


def ints(text, what):
    items = text.split(",")
    if any(not x.strip() for x in items):
        fail(f"{what} {text!r}: an empty item; give comma-separated whole numbers, each at least 1")
    try:
        values = [int(x) for x in items]
    except ValueError:
        fail(f"{what}: a comma-separated list of whole numbers, not {text!r}")
    if min(values) < 1:
        fail(f"{what}: at least one value, each at least 1")
    return values


def check_args(a):
    """Every rule the arguments alone decide, before torch or the library is loaded (exit 2)."""
    if not a.chapters:
        fail("--chapters needs the library's file name (build-gpu/lib/libflashsteps_capi.so)")
    lists = ints(a.batches, "--batches"), ints(a.contexts, "--contexts")
    if a.heads < 1 or a.kv_heads < 1 or a.heads % a.kv_heads:
        fail(f"--heads {a.heads} must be a multiple of --kv-heads {a.kv_heads}, both at least 1")
    for option, value in (("--head-dim", a.head_dim), ("--page-size", a.page_size), ("--new-tokens", a.new_tokens),
                          ("--reps", a.reps)):
        if value < 1:
            fail(f"{option} {value}: it must be at least 1")
    if a.new_tokens > MAX_NEW_TOKENS:
        fail(f"--new-tokens {a.new_tokens}: chapter 08 decodes at most {MAX_NEW_TOKENS} new tokens per sequence "
             "(longer is a prefill)")
    why = check_csv(a.csv, ",".join(FIELDS), "the header this script writes (device,driver,...,status)")
    if why:
        fail(why)
    return lists


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chapters", required=True, help="libflashsteps_capi.so (a gpu build's lib/)")
    ap.add_argument("--variants", default="all", help="all, best, or names (comma-separated)")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--contexts", default="1024,8192,32768,131072", help="keys per sequence, the new tokens included")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=1)
    ap.add_argument("--page-size", type=int, default=16)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--csv", help="append rows to this CSV file")
    a = ap.parse_args()
    batches, contexts = check_args(a)
    # torch (and flash-attn) before the book's library: the library links the system's CUDA (libcublas,
    # libcudart), and `import torch` after it segfaults in torch/__init__.py (an H200, CUDA 13.0).
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        torch = None
    flash_attn_with_kvcache = None
    if torch is not None:
        try:
            from flash_attn import flash_attn_with_kvcache
        except ImportError:
            pass
    try:
        lib = Decoding(a.chapters)
    except (OSError, AttributeError) as e:  # AttributeError: a library without the book's functions
        fail(f"cannot load {a.chapters} as the book's C interface: {e}")
    try:
        names = lib.select(a.variants)
    except ValueError as e:
        fail(str(e))
    if torch is None:
        fail("needs torch")
    if not torch.cuda.is_available():
        fail("needs a GPU (torch.cuda.is_available() is False)")

    dev = torch.device("cuda")
    dt = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    props = torch.cuda.get_device_properties(dev)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        driver = "unknown"
    flush = torch.empty(2 * max(props.L2_cache_size, 1 << 20), dtype=torch.uint8, device=dev)

    def timed(fns, reps):
        """Median ms of each fn, in rounds: one repetition of each per round, the L2 flushed before each."""
        times = [[] for _ in fns]
        for _ in range(reps + 1):
            for k, fn in enumerate(fns):
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                times[k].append(start.elapsed_time(end))
        return [statistics.median(t[1:]) for t in times]  # the first round warms up

    src = torch.empty(1 << 28, dtype=torch.uint8, device=dev)  # 256 MiB, beyond the L2
    dst = torch.empty_like(src)
    copy_ms = timed([lambda: dst.copy_(src)], 10)[0]
    copy_gbs = 2 * src.numel() / (copy_ms * 1e6)
    print(f"device: {props.name}, driver {driver}, CUDA {torch.version.cuda}, torch {torch.__version__}; "
          f"copy bandwidth {copy_gbs:.0f} GB/s (read + written); library at {lib.commit}")
    Hq, Hkv, d, Lq, page = a.heads, a.kv_heads, a.head_dim, a.new_tokens, a.page_size
    causal = Lq > 1
    scale = d ** -0.5

    def run_problem(B, ctx):
        """One (batch, context): every contender timed, its rows; the tensors die with the call."""
        rows, wrong = [], False
        if ctx <= Lq:
            print(f"B={B} context {ctx}: skipped, no longer than the {Lq} new tokens")
            return [], False
        L0 = ctx - Lq  # keys in the cache before the append
        max_pages = (ctx + page - 1) // page
        # Pool-sized tensors alive at once: the pool, the expected pool, the unpaged copy and the
        # reference's K, V (8), flash-attn's two copies (4), and each variant's K, V (2 each).
        need = (12 + 2 * len(names)) * B * max_pages * page * Hkv * d * 2
        if need > 0.8 * torch.cuda.mem_get_info()[0]:
            print(f"B={B} context {ctx}: skipped, needs {need / 2**30:.1f} GiB")
            return [], False
        torch.manual_seed(B * 100003 + ctx)
        q = torch.randn(B, Lq, Hq, d, device=dev, dtype=dt)
        k_new, v_new = (torch.randn(B, Lq, Hkv, d, device=dev, dtype=dt) for _ in range(2))
        pages = B * max_pages
        k_pool, v_pool = (torch.randn(pages, page, Hkv, d, device=dev, dtype=dt) for _ in range(2))
        table = torch.randperm(pages, device=dev, dtype=torch.int32).view(B, max_pages)
        lens = torch.full((B,), L0, device=dev, dtype=torch.int32)
        # The expected cache: the new tokens at positions L0 ... L0 + Lq - 1 of each sequence.
        k_exp, v_exp = k_pool.clone(), v_pool.clone()
        for t in range(Lq):
            pos = L0 + t
            rows_at = table[:, pos // page].long()
            k_exp[rows_at, pos % page] = k_new[:, t]
            v_exp[rows_at, pos % page] = v_new[:, t]
        # Unpaged: [B, capacity, Hkv, d], the table the identity.
        k_flat = k_exp[table.long()].reshape(B, max_pages * page, Hkv, d)
        v_flat = v_exp[table.long()].reshape(B, max_pages * page, Hkv, d)
        K = k_flat[:, :ctx].permute(0, 2, 1, 3).contiguous()  # [B, Hkv, L, d]
        V = v_flat[:, :ctx].permute(0, 2, 1, 3).contiguous()
        Q = q.permute(0, 2, 1, 3).contiguous()
        # Causal aligned bottom-right (torch.nn.attention.bias.causal_lower_right's), as a boolean mask.
        mask = torch.ones(Lq, ctx, dtype=torch.bool, device=dev).tril(ctx - Lq) if causal else None

        def sdpa():
            return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, scale=scale, enable_gqa=True)

        ref = sdpa().permute(0, 2, 1, 3).float()  # [B, Lq, Hq, d]
        cache_bytes = 2 * B * ctx * Hkv * d * q.element_size()
        contenders = [("sdpa_enable_gqa", sdpa, None, "ok", False)]  # (label, call, error, status, paged)
        if flash_attn_with_kvcache is not None:
            # Paged as ours when its version takes this page size (FlashAttention-2: multiples of
            # 256), else its unpaged cache [B, capacity, Hkv, d]: labelled which.
            for label, fk, fv, fa_table in (("flash_attn_with_kvcache", k_pool.clone(), v_pool.clone(), table),
                                            ("flash_attn_with_kvcache_unpaged", k_flat.clone(), v_flat.clone(),
                                             None)):
                def fa(fk=fk, fv=fv, fa_table=fa_table):
                    return flash_attn_with_kvcache(q, fk, fv, k=k_new, v=v_new, cache_seqlens=lens,
                                                   block_table=fa_table, softmax_scale=scale, causal=causal)
                try:
                    err = (fa().float() - ref).abs().max().item()
                    contenders.append((label, fa, err, "ok", fa_table is not None))
                    break
                except Exception as e:  # a page size its version refuses, say
                    print(f"  {label}: {e}")
        identity = torch.arange(B, device=dev, dtype=torch.int32).view(B, 1)
        for name in names:
            # The paged layout for the variants that read it; the unpaged one for those that say so.
            why_paged = lib.unsupported(name, lib.problem(B, Hq, Hkv, Lq, d, a.dtype, True, page, max_pages, causal,
                                                          0, scale, [L0] * B))
            if why_paged and "unpaged" not in why_paged:
                print(f"  {name}: skipped: {why_paged}")
                continue
            is_paged = why_paged == ""
            if is_paged:
                kc, vc, tb, ps, mp = k_pool.clone(), v_pool.clone(), table, page, max_pages
            else:
                kc = k_flat.clone()
                vc = v_flat.clone()
                kc[:, L0:ctx], vc[:, L0:ctx] = float("nan"), float("nan")  # the append must write them
                tb, ps, mp = identity, max_pages * page, 1
            prob = lib.problem(B, Hq, Hkv, Lq, d, a.dtype, is_paged, ps, mp, causal, 0, scale, [L0] * B)
            why = lib.unsupported(name, prob)
            if why:
                print(f"  {name}: skipped: {why}")
                continue
            work = torch.empty(max(lib.workspace_bytes(name, prob), 1), dtype=torch.uint8, device=dev)
            o = torch.empty_like(q)

            def ours(name=name, prob=prob, kc=kc, vc=vc, tb=tb, o=o, work=work):
                lib.run(name, prob, q.data_ptr(), kc.data_ptr(), vc.data_ptr(), k_new.data_ptr(), v_new.data_ptr(),
                        o.data_ptr(), tb.data_ptr(), lens.data_ptr(), work.data_ptr())
            ours()
            if lib.lib.fs_synchronize() != 0:
                fail(f"{name}: {lib.lib.fs_last_error().decode()}")
            err = (o.float() - ref).abs().max().item()
            if is_paged:
                cache_ok = torch.equal(kc, k_exp) and torch.equal(vc, v_exp)
            else:
                cache_ok = torch.equal(kc[:, :ctx], k_flat[:, :ctx]) and torch.equal(vc[:, :ctx], v_flat[:, :ctx])
            status = "ok" if err <= 2e-2 * max(1.0, ref.abs().max().item()) and cache_ok else "WRONG"
            wrong = wrong or status != "ok"
            contenders.append((f"{name} ({lib.splits(name, prob)} splits{'' if is_paged else ', unpaged'})", ours, err,
                               status, is_paged))
        times = timed([c[1] for c in contenders], a.reps)
        print(f"B={B} Hq={Hq} Hkv={Hkv} d={d} context {ctx} new {Lq} page {page} {a.dtype}: the cache is "
              f"{cache_bytes / 1e6:.1f} MB")
        for (label, _, err, status, paged), ms in zip(contenders, times):
            gbs = cache_bytes / (ms * 1e6)
            print(f"  {label:36s} {ms:9.4f} ms {gbs:8.0f} GB/s ({100 * gbs / copy_gbs:5.1f} % of copy)"
                  f"{'' if err is None else f'  max err {err:.2e}'} {status}")
            splits = label.split("(")[1].split()[0] if " splits" in label else ""
            rows.append([props.name, driver, torch.version.cuda, torch.__version__, lib.commit, label.split()[0],
                         a.dtype, B, Hq, Hkv, d, ctx, Lq, page if paged else "", splits, f"{ms:.5f}", f"{gbs:.1f}", f"{copy_gbs:.1f}",
                         "" if err is None else f"{err:.3e}", status])
        return rows, wrong

    rows, wrong = [], False
    for B in batches:
        for ctx in contexts:
            r, w = run_problem(B, ctx)
            rows += r
            wrong = wrong or w
            torch.cuda.empty_cache()
    if a.csv:
        new = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
        with open(a.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(FIELDS)
            w.writerows(rows)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
