#!/usr/bin/env python3
"""bench_torch_masks.py: chapter 10's masks and score mods on the GPU, beside PyTorch's FlexAttention,
SDPA with the mask as a tensor, and FlashAttention-2's varlen kernel, in one process, in the project's CSV.

Each problem is one of chapter 10's (the results CSV's `mods` words: a mask_mod, a score_mod, a packed
batch). For each, in the same timed rounds (tools/bench_torch_sdpa.py's timing and L2 flush):
  - the book's chapter 10 steps that run it (every stage timed, the mask, list or map they build
    included, as the tour times them);
  - flex_attention: torch.compile(flex_attention) with the rule as a mask_mod and the score mods as a
    score_mod, its BlockMask built once beforehand (as a model reuses it in every layer), and
    flex_attention+block_mask: create_block_mask in every call (as the book's block_mask step does);
  - sdpa_efficient_mask, sdpa_cudnn_mask: scaled_dot_product_attention with the pattern as a bool
    attn_mask [Lq, Lk] (chapter 10's step a, PyTorch's way), where no score mod is asked;
  - varlen_attn: torch.nn.attention.varlen.varlen_attn (FlashAttention-2's varlen forward) on a packed
    batch, with window_size and enable_gqa where this PyTorch's signature has them (the flash_attn
    package itself is not installed on the project's GPU machines, and is not timed here).
The rule is the library's: the fp32 reference masks with fs_visible (common/harness/capi.h), and each
Python mask_mod handed to FlexAttention is checked against it before anything is timed. SDPA gives NaN
for a row that sees no key, FlexAttention and the book 0: a NaN there passes, as in notes/10.

  tools/bench_torch_masks.py --chapters build-gpu/lib/libflashsteps_capi.so --csv out.csv
  tools/bench_torch_masks.py --chapters LIB --problems small --variants window,varlen
"""
import argparse
import bisect
import inspect
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or through runpy
from bench_torch_sdpa import (ELEM_BYTES, REFERENCE_CHUNK_BYTES, Bench, Chapters, check_timing_args,  # noqa: E402
                              default_commit, driver_version, first_line, release, short_n, subset)
from results_csv import measured_row, open_csv  # noqa: E402

# The packing chapter 10's model runs (results/model-h100/varlen_packed.txt): eight sequences, 17648 tokens.
PACKING = "64,200,512,1000,1536,2048,4096,8192"


def problems(which):
    """(B, H, N, d, causal, mods) tuples: causal 0 none, 1 top-left (the C enum). "gpu": the FA3 paper's
    N = 8k, d = 128 shape (B*N = 16k tokens, H = 16) under each of chapter 10's patterns and score mods,
    and packed batches of PACKING's lengths (N: their sum); "small": the same at N = 1k, d = 64."""
    B, H, N, d, packing = (2, 16, 8192, 128, PACKING) if which == "gpu" else (2, 4, 1024, 64, "64,100,300,560")
    total = sum(int(n) for n in packing.split(","))
    # The first ones first: a session's budget may end the list (each FlexAttention problem compiles).
    return [
        (B, H, N, d, 0, f"mask_mod=window window={N // 8},0"),
        (1, H, total, d, 1, f"mask_mod=varlen seqlens={packing}"),
        (B, H, N, d, 0, "mask_mod=document seed=1"),
        # packed training's mask, FlexAttention's document_causal_mask: 8 documents, each causal
        (B, H, N, d, 0, "mask_mod=document_causal documents=" + ",".join([str(N // 8)] * 8)),
        (1, H, total, d, 0, f"mask_mod=varlen_window window={N // 8},0 seqlens={packing}"),
        (B, H, N, d, 0, f"mask_mod=window window={N // 8},0 softcap=50"),  # Gemma 2's local layers
        (B, H, N, d, 1, "alibi"),
        (B, H, N, d, 0, "softcap=50"),
        (B, H, N, d, 0, f"mask_mod=prefix_lm prefix={N // 4}"),
        (B, H, N, d, 0, "mask_mod=random_blocks seed=1"),
        (1, H, total, d, 1, f"mask_mod=varlen seqlens={packing} kv_heads={H // 4}"),
        (1, H, total, d, 1, f"mask_mod=varlen seqlens={packing} softcap=50"),
    ]


def words(mods):
    """The mods words as a dict (results/README.md): key -> value, "" for a flag (alibi)."""
    out = {}
    for w in mods.split():
        key, _, value = w.partition("=")
        out[key] = value
    return out


def mask_args(mods):
    """The mask_mod's kind and ints: (kind, [args]) from the words; kind "none" without one."""
    w = words(mods)
    kind = w.get("mask_mod", "none")
    if kind in ("window", "varlen_window"):
        return kind, [int(x) for x in w["window"].split(",")]
    if kind == "sliding_window":
        return kind, [int(w["window"])]
    if kind == "prefix_lm":
        return kind, [int(w["prefix"])]
    if kind == "random_blocks":  # Problem::mask_mod: the seed's hash, as the kernels take it
        return kind, [(int(w.get("seed", 1)) * 0x9E3779B97F4A7C15 % 2**64) >> 33]
    return kind, []


def rule(mods, causal, Lq, Lk, table, lookup):
    """FlexAttention's mask_mod(b, h, q_idx, kv_idx) for the problem, written from params.h's and
    mask_mod.h's definitions, or None when every key is visible. Only operators that Python ints and
    torch tensors share (& | == <= etc.), so the same function is checked on ints against the library
    (tests/test_capi.py) and handed to FlexAttention with tensors. lookup(list) makes an indexable table
    (a tensor on the GPU, the list itself on the host); table: fs_mod_table's ints."""
    kind, args = mask_args(mods)
    M32 = 0xFFFFFFFF

    def window(left, right, delta):  # delta: kv - (q's diagonal)
        ok = None
        if left >= 0:
            ok = delta >= -left
        if right >= 0:
            ok = (delta <= right) if ok is None else (ok & (delta <= right))
        return ok

    if kind == "none":
        if causal == 0:
            return None
        offset = 0 if causal == 1 else Lk - Lq
        return lambda b, h, q, kv: kv <= q + offset
    if kind == "sliding_window":
        W = args[0]
        return lambda b, h, q, kv: (kv <= q) & (q - kv <= W)
    if kind == "prefix_lm":
        P = args[0]
        return lambda b, h, q, kv: (kv < P) | (kv <= q)
    if kind == "document":
        doc = lookup(table)
        return lambda b, h, q, kv: doc[q] == doc[kv]
    if kind == "document_causal":  # FlexAttention's document_causal_mask
        doc = lookup(table)
        return lambda b, h, q, kv: (doc[q] == doc[kv]) & (kv <= q)
    if kind == "random_blocks":  # the hash on 32-bit words, once per 64 x 64 block, into a table
        seed, cols = args[0], (Lk + 63) // 64

        def visible(bq, bk):
            x = seed ^ ((bq * 0x9E3779B1) & M32) ^ ((bk * 0x85EBCA77) & M32)
            x ^= x >> 16
            x = (x * 0x7FEB352D) & M32
            x ^= x >> 15
            x = (x * 0x846CA68B) & M32
            x ^= x >> 16
            return x & 1
        bits = lookup([visible(bq, bk) for bq in range((Lq + 63) // 64) for bk in range(cols)])
        return lambda b, h, q, kv: bits[(q // 64) * cols + kv // 64] == 1
    if kind == "blocks":  # FlexAttention's BlockMask from its lists (noop_mask): the listed blocks' pairs
        bq, bkv, listed = block_lists(mods)
        cols = (Lk + bkv - 1) // bkv
        bits = [0] * (((Lq + bq - 1) // bq) * cols)
        for r, c in listed:
            bits[r * cols + c] = 1
        bits = lookup(bits)
        return lambda b, h, q, kv: bits[(q // bq) * cols + kv // bkv] == 1
    if kind == "window":
        left, right = args
        offset = Lk - Lq
        if left < 0 and right < 0:
            return None
        return lambda b, h, q, kv: window(left, right, kv - q - offset)
    # A packed batch: each position's sequence, then that sequence's keys, its diagonal and is_causal
    # or the window in it.
    cu_q, cu_k = packing(mods, table)
    n = len(cu_q) - 1
    sq, sk = lookup(sequences(cu_q, Lq)), lookup(sequences(cu_k, Lk))
    bottom = lookup([cu_k[s + 1] - cu_q[s + 1] for s in range(n)])  # the sequence's bottom-right diagonal
    top = lookup([cu_k[s] - cu_q[s] for s in range(n)])
    left, right = args if kind == "varlen_window" else (-1, -1)

    def varlen(b, h, q, kv):
        s = sq[q]
        ok = s == sk[kv]
        w = window(left, right, kv - q - bottom[s])
        if w is not None:
            ok = ok & w
        if causal:
            ok = ok & (kv <= q + (top[s] if causal == 1 else bottom[s]))
        return ok
    return varlen


def packing(mods, table):
    """A packed batch's cu_seqlens_q and cu_seqlens_k, from fs_mod_table's ints (a window's sides and
    given ALiBi slopes after them): n + 1 offsets each, n the sequences of seqlens=."""
    n = len(words(mods)["seqlens"].split(","))
    return table[:n + 1], table[n + 1:2 * n + 2]


def block_lists(mods):
    """A given block mask's (block_q, block_kv, [(Q block, K/V block) listed]) from its words: each Q
    block's entries of kv_indices (and full_kv_indices), end to end, kv_num_blocks (full_...) of them."""
    w = words(mods)
    bq, bkv = (int(x) for x in w["block_size"].split(","))
    listed = []
    for counts, indices in (("kv_num_blocks", "kv_indices"), ("full_kv_num_blocks", "full_kv_indices")):
        if counts not in w:
            continue
        n = [int(x) for x in w[counts].split(",") if x]
        at = iter(int(x) for x in w[indices].split(",") if x)
        listed += [(r, next(at)) for r, k in enumerate(n) for _ in range(k)]
    return bq, bkv, listed


def sequences(cu, length):
    """Each position's sequence: the last whose start is at or before it (empty sequences share their
    start with the next), as mask_mod.h's Varlen bisects cu."""
    return [bisect.bisect_right(cu, i, 0, len(cu) - 1) - 1 for i in range(length)]


def alibi_slopes(H):
    """params.h's alibi_slope(h, H) for every head (Press et al.'s geometric sequences)."""
    n = 1
    while 2 * n <= H:
        n *= 2
    return [2.0 ** (-8.0 * (h + 1) / n) if h < n else 2.0 ** (-4.0 * (2 * (h - n) + 1) / n) for h in range(H)]


def slopes_of(mods, H):
    """ALiBi's slopes of the mods words, one per head: alibi_slopes= as given (H of them: the benchmark's
    reference and score_mod index them by head), else params.h's for alibi, else None."""
    w = words(mods)
    if "alibi_slopes" in w:
        given = [float(x) for x in w["alibi_slopes"].split(",")]
        if len(given) != H:
            raise ValueError(f"alibi_slopes= gives {len(given)} slopes; the benchmark takes one per head, {H}")
        return given
    return alibi_slopes(H) if "alibi" in w else None


def diagonals(mods, Lq, Lk, table):
    """Each query's diagonal offset (Problem::diagonal_offset): Lk - Lq, or in a packed batch its sequence's."""
    kind, _ = mask_args(mods)
    if kind not in ("varlen", "varlen_window"):
        return [Lk - Lq] * Lq
    cu_q, cu_k = packing(mods, table)
    return [cu_k[s + 1] - cu_q[s + 1] for s in sequences(cu_q, Lq)]


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time chapter 10's steps beside FlexAttention, SDPA with a bool attn_mask and FlashAttention-2's "
                    "varlen kernel on chapter 10's masks and score mods, in one process; rows in the project's CSV.",
        epilog="Needs PyTorch with CUDA, a GPU and the book's C interface; exits 2 without them. Exit code 1 if any "
               "output failed the check against the fp32 reference.")
    ap.add_argument("--chapters", metavar="LIB", required=True,
                    help="the book's C interface (build-gpu/lib/libflashsteps_capi.so)")
    ap.add_argument("--problems", choices=["gpu", "small"], default="gpu",
                    help="gpu: N = 8k, d = 128, H = 16 (B*N = 16k) and packed batches (default); small: N = 1k, d = 64")
    ap.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16")
    ap.add_argument("--variants", default="all",
                    help="chapter 10's steps: all (default) or a comma-separated list of names")
    ap.add_argument("--baselines", default="flex,sdpa,varlen",
                    help="comma-separated subset of flex, sdpa, varlen (default all); none for none")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions, at least 20 (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--budget", type=float, default=0, help="seconds: no new problem is started after this long")
    ap.add_argument("--csv", metavar="FILE", help="append the rows to FILE (header if new); default stdout")
    args = ap.parse_args(argv)
    check_timing_args(ap, args)
    if not args.chapters:
        ap.error("--chapters needs the library's file name (build-gpu/lib/libflashsteps_capi.so)")
    known = ("flex", "sdpa", "varlen")
    args.baselines = subset(args.baselines)
    bad = [b for b in args.baselines if b not in known]
    if bad:
        ap.error(f"--baselines: unknown {', '.join(bad)}; choose from {', '.join(known)}")
    return args


class Masks:
    """Everything that needs torch: inputs, the reference and each baseline's callable for one problem."""

    def __init__(self, torch, bench):
        self.torch, self.bench = torch, bench
        try:
            import torch._dynamo
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            # Every problem's mask_mod and score_mod is a new closure: a recompilation each. Past Dynamo's
            # limit (8 by default) flex_attention would fall back to its unfused eager form, and be timed so.
            for limit in ("cache_size_limit", "recompile_limit"):
                if hasattr(torch._dynamo.config, limit):
                    setattr(torch._dynamo.config, limit, 64)
            self.flex = torch.compile(flex_attention, dynamic=False)
            self.create_block_mask = create_block_mask
        except ImportError:
            self.flex = None
        try:
            from torch.nn.attention.varlen import varlen_attn
            self.varlen = varlen_attn
            self.varlen_params = set(inspect.signature(varlen_attn).parameters)
        except ImportError:
            self.varlen = None

    def reference(self, q, k, v, visible, scale, softcap, slopes, diag):
        """fp32 attention with the library's visibility [Lq, Lk] and the score mods (params.h), a few heads
        at a time; rows that see no key give 0."""
        torch = self.torch
        B, H, Lq, d = q.shape
        Hkv, Lk = k.shape[1], k.shape[2]
        out = torch.empty(B, H, Lq, d, dtype=torch.float32, device="cuda")
        rows = torch.arange(Lq, device="cuda")[:, None]
        cols = torch.arange(Lk, device="cuda")[None, :]
        chunk = max(1, REFERENCE_CHUNK_BYTES // (Lq * Lk * 4 * 3))
        for b in range(B):
            for h0 in range(0, H, chunk):
                hs = range(h0, min(H, h0 + chunk))
                qs = q[b, h0:hs.stop].float()
                ks = torch.stack([k[b, h // (H // Hkv)] for h in hs]).float()
                vs = torch.stack([v[b, h // (H // Hkv)] for h in hs]).float()
                s = qs @ ks.transpose(1, 2) * scale
                if softcap:
                    s = softcap * torch.tanh(s / softcap)
                if slopes is not None:
                    dist = (rows + diag[:, None] - cols).abs().float()
                    s = s - torch.tensor([slopes[h] for h in hs], device="cuda")[:, None, None] * dist
                s = s.masked_fill(~visible, -math.inf)
                p = torch.softmax(s, dim=-1).nan_to_num(0.0)  # a row that sees no key: 0
                out[b, h0:hs.stop] = p @ vs
        return out

    def flex_calls(self, q, k, v, mask_mod, score_mod, scale, gqa):
        """(prebuilt, rebuilt): flex_attention with its BlockMask built once, and building it every call."""
        torch = self.torch
        B, H, Lq, _ = q.shape
        Lk = k.shape[2]

        def build():
            if mask_mod is None:
                return None
            return self.create_block_mask(mask_mod, None, None, Lq, Lk, device="cuda")
        kwargs = {"score_mod": score_mod, "scale": scale}
        if gqa:
            kwargs["enable_gqa"] = True
        block_mask = build()
        torch.cuda.synchronize()
        return (lambda: self.flex(q, k, v, block_mask=block_mask, **kwargs),
                lambda: self.flex(q, k, v, block_mask=build(), **kwargs))

    def varlen_call(self, q, k, v, cu, causal, sides, scale):
        """varlen_attn on the packed batch in its [T, H, d] layout (a copy, made here); the call returns
        the output in the book's [1, H, T, d] (cu: packing()'s offsets). Raises RuntimeError for what this
        PyTorch cannot express; what it expresses wrongly the check against the reference finds."""
        torch = self.torch
        H, Hkv = q.shape[1], k.shape[1]
        q_lens, k_lens = ([c[s + 1] - c[s] for s in range(len(c) - 1)] for c in cu)
        cu_q, cu_k = (torch.tensor(c, dtype=torch.int32, device="cuda") for c in cu)
        max_q, max_k = max(q_lens), max(k_lens)
        kw = {}
        window = tuple(sides) if sides is not None else ((-1, 0) if causal else (-1, -1))
        if causal == 1 and q_lens != k_lens:
            raise RuntimeError("FlashAttention aligns is_causal bottom-right: top-left differs where a sequence has Lq != Lk")
        if "window_size" in self.varlen_params:
            kw["window_size"] = window
        elif window != (-1, -1) and not (window == (-1, 0) and "is_causal" in self.varlen_params):
            raise RuntimeError(f"this PyTorch's varlen_attn takes no window_size (window {window})")
        elif window == (-1, 0):
            kw["is_causal"] = True
        if Hkv != H and "enable_gqa" in self.varlen_params:
            kw["enable_gqa"] = True  # without it (PyTorch < 2.12) FlashAttention-2 takes the K/V heads as given
        if "scale" in self.varlen_params:
            kw["scale"] = scale
        elif abs(scale - 1 / math.sqrt(q.shape[-1])) > 1e-7:
            raise RuntimeError("this PyTorch's varlen_attn takes no scale")
        qt, kt, vt = (x[0].transpose(0, 1).contiguous() for x in (q, k, v))
        return lambda: self.varlen(qt, kt, vt, cu_q, cu_k, max_q, max_k, **kw), \
            lambda o: o.transpose(0, 1)[None]


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # torch before the book's library (bench_torch_sdpa.py says why).
    try:
        import torch
    except ImportError:
        torch = None
    try:
        chapters = Chapters(args.chapters)
        ours = [n for c, n, _ in chapters.variants if c.startswith("10_")]
        if args.variants != "all":
            wanted = [n.strip() for n in args.variants.split(",") if n.strip()]
            unknown = [n for n in wanted if n not in ours]
            if unknown or not wanted:
                raise ValueError(f"unknown chapter 10 variant(s) {', '.join(unknown) or '(none given)'}; "
                                 f"known: {', '.join(ours)}")
            ours = wanted
    except (OSError, AttributeError) as e:  # AttributeError: a library without the book's functions
        print(f"bench_torch_masks: cannot load the book's C interface {args.chapters}: {e} "
              "(build it with the gpu backend: build-gpu/lib/libflashsteps_capi.so)", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"bench_torch_masks: --variants: {e}", file=sys.stderr)
        return 2
    if torch is None or not torch.cuda.is_available():
        print("bench_torch_masks: needs PyTorch with CUDA and a GPU (the baselines are GPU kernels)", file=sys.stderr)
        return 2
    bench = Bench(torch, args.reps, args.warmup)
    masks = Masks(torch, bench)
    commit = chapters.commit
    if commit != default_commit():
        print(f"bench_torch_masks: the library was built from {commit}, the tree is at {default_commit()}; "
              "the rows carry the library's", file=sys.stderr)
    device = torch.cuda.get_device_name(0).replace('"', '""')
    fixed = f'"{device}",{driver_version()},{torch.version.cuda or "none"},{commit}'
    out = open_csv(args.csv)
    print(f"bench_torch_masks: {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}; FlexAttention "
          f"{'yes' if masks.flex else 'no'}, varlen_attn {'yes' if masks.varlen else 'no'}", file=sys.stderr)
    start, failed = time.monotonic(), 0
    tdtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16

    def measure(B, H, N, d, causal, mods, label):
        """Checks and times every implementation of one problem and writes its rows; returns the failures.
        Its tensors are this call's locals: they go when it returns."""
        failed = 0
        scale = 1.0 / math.sqrt(d)
        prob = chapters.problem(B, H, N, N, d, args.dtype, causal, scale, mods)
        try:
            table = chapters.mod_table(prob)
            visible_host = chapters.visible(prob)
        except ValueError as e:
            print(f"skip {label}: the library refuses the problem: {e}", file=sys.stderr)
            return 1
        w = words(mods)
        Hkv = int(w.get("kv_heads", H))
        softcap = float(w.get("softcap", 0))
        try:
            slopes = slopes_of(mods, H)
        except ValueError as e:
            print(f"skip {label}: {e}", file=sys.stderr)
            return 1
        impls, held = [], []
        try:
            g = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(B, H, N, d, generator=g, device="cuda", dtype=tdtype)
            k, v = (torch.randn(B, Hkv, N, d, generator=g, device="cuda", dtype=tdtype) for _ in range(2))
            visible = torch.frombuffer(visible_host, dtype=torch.uint8).view(N, N).to("cuda").bool()
            diag = torch.tensor(diagonals(mods, N, N, table), device="cuda")
            ref = masks.reference(q, k, v, visible, scale, softcap, slopes, diag)
            empty_rows = ~visible.any(dim=1)
            pairs = int(visible.sum())
        except RuntimeError as e:
            print(f"FAIL {label}: no inputs or reference ({first_line(e)})", file=sys.stderr)
            return 1

        def add(chapter, name, call, result=lambda o: o, nan_rows_ok=False, extra=0):
            """Runs the callable once, checks its output, and keeps it for the timed rounds."""
            try:
                o = result(call())
                torch.cuda.synchronize()
                if nan_rows_ok:  # SDPA: NaN in a row that sees no key
                    o = torch.where(empty_rows[None, None, :, None], torch.zeros_like(o), o)
                max_err, ok = bench.check(o, ref, args.dtype)
                impls.append((chapter, name, call, extra, max_err, ok))
            except torch.cuda.OutOfMemoryError:
                print(f"skip {chapter}/{name} {label}: out of memory", file=sys.stderr)
            except RuntimeError as e:
                print(f"skip {chapter}/{name} {label}: {first_line(e)}", file=sys.stderr)
            release()

        dev_table = torch.tensor(table or [0], dtype=torch.int32, device="cuda")
        for name in ours:
            why = chapters.unsupported(name, prob)
            if why:
                print(f"skip 10_masks/{name} {label}: {why}", file=sys.stderr)
                continue
            ws_bytes = chapters.workspace_bytes(name, prob)
            ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
            o = torch.full_like(q, math.nan)
            ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), ws.data_ptr() if ws_bytes else None,
                    dev_table.data_ptr() if table else None)
            held.append((ws, o))

            def ours_call(name=name, ptrs=ptrs, o=o):
                chapters.run(name, prob, *ptrs)
                return o
            add("10_masks", name, ours_call, extra=ws_bytes)

        mask_mod = rule(mods, causal, N, N, table, lambda xs: torch.tensor(xs, device="cuda"))
        flex = "flex" in args.baselines and masks.flex is not None
        if flex and mask_mod is not None:
            # The Python rule must be the library's before FlexAttention is timed with it.
            from torch.nn.attention.flex_attention import create_mask
            try:
                same = bool((create_mask(mask_mod, 1, 1, N, N, device="cuda")[0, 0] == visible).all())
            except RuntimeError as e:  # out of memory (torch.cuda.OutOfMemoryError is one), a vmap error
                print(f"skip torch/flex_attention {label}: its mask could not be checked ({first_line(e)})",
                      file=sys.stderr)
                same, flex = True, False
            if not same:
                print(f"FAIL {label}: the Python mask_mod differs from the library's rule (fs_visible)", file=sys.stderr)
                failed += 1
                flex = False
        if flex:
            diag_t, slopes_t = diag, torch.tensor(slopes or [0.0], device="cuda")

            def score_mod(score, b, h, qi, kv):
                if softcap:
                    score = softcap * torch.tanh(score / softcap)
                if slopes is not None:
                    score = score - slopes_t[h] * (qi + diag_t[qi] - kv).abs()
                return score
            try:
                prebuilt, rebuilt = masks.flex_calls(q, k, v, mask_mod, score_mod if softcap or slopes else None, scale,
                                                     Hkv != H)
                add("torch", "flex_attention", prebuilt)
                if mask_mod is not None:
                    add("torch", "flex_attention+block_mask", rebuilt)
            except RuntimeError as e:
                print(f"skip torch/flex_attention {label}: {first_line(e)}", file=sys.stderr)
        packed = w.get("mask_mod") in ("varlen", "varlen_window")
        if "sdpa" in args.baselines and not softcap and slopes is None and not packed and Hkv == H:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            attn_mask = visible[None, None]
            for backend in ("efficient", "cudnn"):
                enum = getattr(SDPBackend, {"efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION"}[backend], None)
                if enum is None:
                    continue

                def sdpa(enum=enum):
                    with sdpa_kernel(enum):
                        return bench.sdpa(q, k, v, attn_mask=attn_mask, scale=scale)
                # extra: the bool mask's bytes, as passed (a backend may convert it to an additive one)
                add("torch", f"sdpa_{backend}_mask", sdpa, nan_rows_ok=True, extra=N * N)
        if "varlen" in args.baselines and masks.varlen and packed:
            try:
                if softcap or slopes is not None:
                    raise RuntimeError("varlen_attn takes no softcap or ALiBi")
                sides = [int(x) for x in w["window"].split(",")] if "window" in w else None
                call, back = masks.varlen_call(q, k, v, packing(mods, table), causal, sides, scale)
                add("torch", "varlen_attn", call, result=back)
            except RuntimeError as e:
                print(f"skip torch/varlen_attn {label}: {first_line(e)}", file=sys.stderr)

        try:
            times = bench.time_rounds([i[2] for i in impls]) if impls else []
            chapters.synchronize()  # a kernel that failed while timed: its rows would be wrong
        except RuntimeError as e:
            print(f"FAIL {label}: the timed rounds failed, no rows ({first_line(e)})", file=sys.stderr)
            return failed + 1
        flops = 4.0 * B * H * d * pairs
        moved = ELEM_BYTES[args.dtype] * (2.0 * B * H * N * d + 2.0 * B * Hkv * N * d)
        causal_name = {0: "none", 1: "top-left", 2: "bottom-right"}[causal]
        for (chapter, name, _, extra, max_err, ok), (median_ms, min_ms) in zip(impls, times):
            tflops, gbps = flops / (median_ms * 1e9), moved / (median_ms * 1e6)
            out.write(measured_row(fixed, chapter, name, args.dtype, B, H, N, N, d, causal, median_ms, min_ms, tflops,
                                   gbps, extra, max_err, ok, causal_name=causal_name, mods=mods))
            failed += not ok
            print(f"{chapter + '/' + name:36} {label}: {median_ms:.4f} ms, {tflops:.1f} TFLOP/s, max error {max_err:.2e} "
                  f"{'pass' if ok else 'FAIL'}", file=sys.stderr)
        out.flush()
        return failed

    for B, H, N, d, causal, mods in problems(args.problems):
        label = f"{args.dtype} B={B} H={H} N={short_n(N)} d={d}{' causal' if causal else ''} {mods}"
        if args.budget and time.monotonic() - start > args.budget:
            print(f"skip {label}: past the budget of {args.budget:.0f} s", file=sys.stderr)
            continue
        failed += measure(B, H, N, d, causal, mods, label)
        release()  # what the problem held goes back before the next one allocates
    if out is not sys.stdout:
        out.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
