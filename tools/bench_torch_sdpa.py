#!/usr/bin/env python3
"""bench_torch_sdpa.py: PyTorch's scaled_dot_product_attention, the baselines, and the book's kernels
beside them in one process, in the project's CSV.

Runs torch.nn.functional.scaled_dot_product_attention on the shapes the chapters are measured on,
with each of PyTorch's backends forced in turn (math, efficient, flash = FlashAttention-2, cuDNN),
and writes one row per measurement in the schema of common/harness/report.cpp (chapter "torch",
variant sdpa_math | sdpa_efficient | sdpa_flash | sdpa_cudnn), so that the chapters' rows and these
can be plotted together (tools/plot_speedups.py).

With --chapters LIB (the gpu build's build-gpu/lib/libflashsteps_capi.so) the book's variants run in
the same process, on the same tensors, checked against the same fp32 reference, and timed in the
same rounds: each round runs every implementation once, in an order that rotates from round to
round, so that a clock that drifts during the run shifts them all alike. Speedups are then
same-run ratios. Without it, a speedup is only meaningful between rows measured on the same GPU in
the same session.

Timing follows notes/00_overview.md: CUDA events around the call only, warm-up first, a buffer of
twice the L2 size written between repetitions, median and minimum of >= 20 repetitions.

  tools/bench_torch_sdpa.py --csv results/nvidia-h100-80gb-hbm3/torch.csv   # FlashAttention's sweep
  tools/bench_torch_sdpa.py --chapters build-gpu/lib/libflashsteps_capi.so --variants best --csv out.csv
  tools/bench_torch_sdpa.py --shapes small --dtype fp16 --causal off
"""
import argparse
import ctypes
import gc
import math
import os
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or through runpy
from results_csv import check_csv, measured_row, open_csv


BACKENDS = ["math", "efficient", "flash", "cudnn"]  # the order they run in, and the variant suffix
BACKEND_ENUM = {"math": "MATH", "efficient": "EFFICIENT_ATTENTION", "flash": "FLASH_ATTENTION",
                "cudnn": "CUDNN_ATTENTION"}
ELEM_BYTES = {"fp16": 2, "bf16": 2}
# The harness's element-wise tolerance, |o - ref| <= tol + tol*|ref| (notes/00_overview.md).
TOLERANCE = {"fp16": 2e-3, "bf16": 1.6e-2}
# The fp32 reference runs a few heads at a time so that its S and P stay within this many bytes.
REFERENCE_CHUNK_BYTES = 2 << 30
REPO = Path(__file__).resolve().parent.parent
# What the commit column holds (cmake/WriteCommit.cmake's 12 hex digits, '-dirty', "unknown"): nothing
# the CSV would need to quote.
COMMIT = re.compile(r"[0-9A-Za-z._-]+")


def sweep(which, dtypes, causals):
    """(B, H, Lq, Lk, d, dtype, causal) tuples. FlashAttention's convention: B*N = 16k tokens, hidden
    size 2048 (H = 32 for d = 64, H = 16 for d = 128). "uneven": Lq != Lk (a short query block
    against a long context, and the reverse), 16k key tokens."""
    if which == "uneven":
        lengths = [(512, 4096), (1024, 8192), (4096, 1024), (8192, 512)]
        tokens = 16384
        return [(max(1, tokens // max(lq, lk)), H, lq, lk, d, dtype, causal)
                for dtype in dtypes for d, H in ((64, 32), (128, 16)) for causal in causals for lq, lk in lengths]
    tokens, lengths = (16384, [512, 1024, 2048, 4096, 8192, 16384]) if which == "flash" else (2048, [256, 1024])
    shapes = []
    for dtype in dtypes:
        for d, H in ((64, 32), (128, 16)):
            for causal in causals:
                for N in lengths:
                    shapes.append((tokens // N, H, N, N, d, dtype, causal))
    return shapes


def visible_pairs(Lq, Lk, causal):
    """(query, key) pairs a top-left causal mask leaves visible: row i sees keys 0..min(i, Lk-1)."""
    if not causal:
        return Lq * Lk
    n = min(Lq, Lk)
    return n * (n + 1) // 2 + max(0, Lq - Lk) * Lk


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def shape_label(B, H, Lq, Lk, d, dtype, causal):
    return (f"{dtype} B={B} H={H} " + (f"N={short_n(Lq)}" if Lq == Lk else f"Lq={short_n(Lq)} Lk={short_n(Lk)}")
            + f" d={d}{' causal' if causal else ''}")


def release():
    """Gives back what the last shape held before the next one allocates (torch is loaded by then)."""
    import torch
    gc.collect()
    torch.cuda.empty_cache()


def short_n(n):
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def default_commit():
    """Same convention as cmake/WriteCommit.cmake: 12 hex digits, '-dirty' with local changes."""
    env = os.environ.get("FLASHSTEPS_COMMIT")
    if env:
        return env
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        clean = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD", "--", "."],
                               capture_output=True, timeout=10).returncode == 0
        return commit + ("" if clean else "-dirty") if commit else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True, timeout=30).stdout
        return out.splitlines()[0].strip() or "unknown"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time torch.nn.functional.scaled_dot_product_attention with each backend forced "
                    "(math, efficient, flash, cudnn), and optionally the book's variants in the same process, "
                    "and write rows in the project's CSV schema.",
        epilog="Needs PyTorch with CUDA and a GPU; exits 2 without them. Skipped backends and progress go to "
               "stderr. Exit code 1 if any output failed the check against the fp32 math backend.")
    ap.add_argument("--shapes", choices=["flash", "small", "uneven"], default="flash",
                    help="flash: B*N = 16k, N = 512..16k, d = 64 (H = 32) and d = 128 (H = 16) (default); "
                         "small: B*N = 2k, N = 256 and 1k, for a quick look; uneven: Lq != Lk")
    ap.add_argument("--dtype", choices=["fp16", "bf16", "both"], default="both", help="input type (default both)")
    ap.add_argument("--causal", choices=["off", "on", "both"], default="both",
                    help="is_causal=True, PyTorch's top-left alignment (default both)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="comma-separated subset of " + ",".join(BACKENDS) + " (default all); 'none' for none")
    ap.add_argument("--chapters", metavar="LIB",
                    help="the book's C interface (build-gpu/lib/libflashsteps_capi.so): its variants run and are "
                         "timed in the same rounds as PyTorch's backends")
    ap.add_argument("--variants", default=None,
                    help="with --chapters (refused without it): best (each chapter's best variant, default), all, either followed by "
                         "chapter prefixes (all:05,06), or a comma-separated list of names")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions, at least 20 (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds: no new shape is started after this long (default 0: no limit)")
    ap.add_argument("--csv", metavar="FILE", help="append the rows to FILE (header if new); default stdout")
    ap.add_argument("--commit", default=None,
                    help="commit column (default: the library's with --chapters, else $FLASHSTEPS_COMMIT, else "
                         "git rev-parse --short=12 HEAD, else unknown)")
    args = ap.parse_args(argv)
    check_timing_args(ap, args)
    if args.chapters == "":
        ap.error("--chapters needs the library's file name (build-gpu/lib/libflashsteps_capi.so)")
    if args.variants is not None and not args.chapters:
        ap.error("--variants chooses among the book's variants: give --chapters LIB too")
    args.variants = args.variants or "best"
    if args.commit is not None and not COMMIT.fullmatch(args.commit):
        ap.error(f"--commit {args.commit!r}: a commit is letters, digits, '.', '_' and '-' (as git rev-parse "
                 "prints it), at least one")
    check_commit_env(ap, args.commit is None and not args.chapters)
    args.backends = subset(args.backends)
    bad = [b for b in args.backends if b not in BACKENDS]
    if bad or not (args.backends or args.chapters):
        ap.error(f"--backends: unknown backend(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(BACKENDS)}"
                 + ("" if args.chapters else " (or give --chapters)"))
    return args


def check_timing_args(ap, args):
    """The rules of --reps, --warmup, --budget and --csv, which the benchmarks share: ap.error (exit 2)."""
    if args.reps < 20:
        ap.error("--reps must be at least 20: the project reports the median and minimum of >= 20 repetitions")
    if args.warmup < 1:
        ap.error("--warmup must be at least 1: the first call also checks the output")
    if not math.isfinite(args.budget) or args.budget < 0:
        ap.error("--budget must be a number of seconds >= 0")
    why = check_csv(args.csv)
    if why:
        ap.error(why)


def check_commit_env(ap, used):
    """$FLASHSTEPS_COMMIT, when the commit column would take it, as --commit is checked (ap.error)."""
    env = os.environ.get("FLASHSTEPS_COMMIT")
    if used and env and not COMMIT.fullmatch(env):
        ap.error(f"FLASHSTEPS_COMMIT={env!r}: a commit is letters, digits, '.', '_' and '-' (as git rev-parse "
                 "prints it)")


def subset(text):
    """A comma-separated list of names, [] for "none"."""
    names = [b.strip() for b in text.split(",") if b.strip()]
    return [] if names == ["none"] else names


class Chapters:
    """The book's variants through common/harness/capi.h (ctypes). Needs no torch: the caller passes
    device pointers."""

    DTYPE = {"fp32": 0, "fp16": 1, "bf16": 2}

    class Problem(ctypes.Structure):
        _fields_ = [("B", ctypes.c_int), ("H", ctypes.c_int), ("Lq", ctypes.c_int), ("Lk", ctypes.c_int),
                    ("d", ctypes.c_int), ("dtype", ctypes.c_int), ("causal", ctypes.c_int), ("scale", ctypes.c_float),
                    ("mods", ctypes.c_char_p)]

    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        P, c, cp, vp = ctypes.POINTER(self.Problem), ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p
        for name, res, argtypes in (("fs_variant_count", cp, []), ("fs_variant_name", c, [cp]),
                                    ("fs_variant_chapter", c, [cp]), ("fs_variant_best", cp, [cp]),
                                    ("fs_unsupported", c, [c, P]), ("fs_workspace_bytes", ctypes.c_double, [c, P]),
                                    ("fs_hbm_bytes", ctypes.c_double, [c, P]),
                                    ("fs_mod_table", cp, [P, ctypes.POINTER(ctypes.c_int), cp]),
                                    ("fs_visible", cp, [P, ctypes.POINTER(ctypes.c_ubyte)]),
                                    ("fs_run", cp, [c, P, vp, vp, vp, vp, vp, vp, vp]), ("fs_synchronize", cp, []),
                                    ("fs_last_error", c, []), ("fs_commit", c, [])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, argtypes
        self.lib = lib
        self.variants = [(lib.fs_variant_chapter(i).decode(), lib.fs_variant_name(i).decode(), bool(lib.fs_variant_best(i)))
                         for i in range(lib.fs_variant_count())]
        self.commit = lib.fs_commit().decode()

    def select(self, spec):
        """[(chapter, name)] for "best" or "all" (optionally ":05,06": of the chapters with those prefixes) or a
        comma-separated list of names; raises ValueError for unknown names or prefixes that match nothing."""
        kind, _, prefixes = spec.partition(":")
        if kind in ("best", "all"):
            wanted = [p.strip() for p in prefixes.split(",") if p.strip()]
            chosen = [(c, n) for c, n, best in self.variants
                      if (kind == "all" or best) and (not wanted or any(c.startswith(p) for p in wanted))]
            if not chosen:
                raise ValueError(f"no chapter starts with {prefixes!r}")
            return chosen
        known = {n: c for c, n, _ in self.variants}
        names = [n.strip() for n in spec.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise ValueError(f"unknown variant(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}")
        return [(known[n], n) for n in names]

    def problem(self, B, H, Lq, Lk, d, dtype, causal, scale, mods=None, causal_kind=None):
        """mods: chapter 10's settings in the results CSV's words (None: none); causal_kind overrides
        causal with the C enum (2: bottom-right)."""
        kind = causal_kind if causal_kind is not None else (1 if causal else 0)
        return self.Problem(B, H, Lq, Lk, d, self.DTYPE[dtype], kind, scale, mods.encode() if mods else None)

    def mod_table(self, prob):
        """The ints the problem's kernels read beside the tensors (fs_mod_table: the mask_mod's table, then given
        ALiBi slopes' bits; [] for none); raises ValueError for a problem that is not one."""
        n = self.lib.fs_mod_table(ctypes.byref(prob), None, 0)
        if n < 0:
            raise ValueError(self.lib.fs_last_error().decode())
        table = (ctypes.c_int * max(n, 1))()
        self.lib.fs_mod_table(ctypes.byref(prob), table, n)
        return list(table[:n])

    def visible(self, prob):
        """Which keys each query sees, Lq * Lk bytes row by row (1 visible), as the library's rule says."""
        out = (ctypes.c_ubyte * (prob.Lq * prob.Lk))()
        if self.lib.fs_visible(ctypes.byref(prob), out) != 0:
            raise ValueError(self.lib.fs_last_error().decode())
        return out

    def unsupported(self, name, prob):
        why = self.lib.fs_unsupported(name.encode(), ctypes.byref(prob))
        return "unknown variant" if why is None else why.decode()

    def workspace_bytes(self, name, prob):
        return int(self.lib.fs_workspace_bytes(name.encode(), ctypes.byref(prob)))

    def hbm_bytes(self, name, prob):
        return self.lib.fs_hbm_bytes(name.encode(), ctypes.byref(prob))

    def run(self, name, prob, q, k, v, o, workspace, table=None):
        """Launches (asynchronously) on device pointers (table: mod_table's ints on the device); raises
        RuntimeError with the library's message."""
        if self.lib.fs_run(name.encode(), ctypes.byref(prob), q, k, v, o, workspace, None, table) != 0:
            raise RuntimeError(self.lib.fs_last_error().decode())

    def synchronize(self):
        if self.lib.fs_synchronize() != 0:
            raise RuntimeError(self.lib.fs_last_error().decode())


class Bench:
    """Everything that needs torch; built only once torch and CUDA are known to be there."""

    def __init__(self, torch, reps, warmup):
        self.torch, self.reps, self.warmup = torch, reps, warmup
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.SDPBackend, self.sdpa_kernel = SDPBackend, sdpa_kernel
        self.sdpa = torch.nn.functional.scaled_dot_product_attention
        # The reference must be true fp32: no TF32 in its matrix products.
        torch.backends.cuda.matmul.allow_tf32 = False
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0)  # PyTorch >= 2.5
        if not l2:
            l2 = 64 << 20
            print("bench_torch_sdpa: this PyTorch does not report the L2 size; flushing 128 MiB", file=sys.stderr)
        # Written between repetitions so that none finds the previous one's Q, K, V in L2.
        self.flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
        # A kernel that spins for ~0.1 ms after the flush keeps the GPU busy while Python records the start
        # event and calls in: the time between the events is then the call's kernels, not the host's overhead.
        self.spin = getattr(torch.cuda, "_sleep", None)

    def backend(self, name):
        return getattr(self.SDPBackend, BACKEND_ENUM[name], None)

    def inputs(self, B, H, Lq, Lk, d, dtype):
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(1)
        tdtype = torch.float16 if dtype == "fp16" else torch.bfloat16
        return [torch.randn(B, H, L, d, generator=g, device="cuda", dtype=tdtype) for L in (Lq, Lk, Lk)]

    def reference(self, q, k, v, causal):
        """The math backend in fp32 (inputs upcast exactly), a few (batch, head) planes at a time."""
        torch = self.torch
        B, H, Lq, d = q.shape
        Lk = k.shape[2]
        qf, kf, vf = (t.reshape(B * H, 1, t.shape[2], d) for t in (q, k, v))
        chunk = max(1, REFERENCE_CHUNK_BYTES // (Lq * Lk * 4 * 3))
        out = torch.empty(B * H, 1, Lq, d, dtype=torch.float32, device="cuda")
        with self.sdpa_kernel(self.SDPBackend.MATH):
            for i in range(0, B * H, chunk):
                s = slice(i, i + chunk)
                out[s] = self.sdpa(qf[s].float(), kf[s].float(), vf[s].float(), is_causal=causal)
        return out.view(B, H, Lq, d)

    def torch_call(self, backend, q, k, v, causal):
        """A callable that runs the forced backend, after one checked call whose output it returns.
        Raises RuntimeError (with PyTorch's reasons) when the backend refuses."""
        torch = self.torch

        def call():
            with self.sdpa_kernel(backend):
                return self.sdpa(q, k, v, is_causal=causal)
        # PyTorch says why a forced backend cannot run in warnings, then raises "No available kernel".
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = call()
            except torch.cuda.OutOfMemoryError:
                raise
            except RuntimeError as e:
                why = "; ".join(str(w.message).strip() for w in caught)
                raise RuntimeError(f"{first_line(e)}{' (' + why + ')' if why else ''}") from None
        return call, out

    def check(self, out, ref, dtype):
        """(max_err, pass): every element within the harness's tolerance, none NaN or Inf."""
        torch = self.torch
        err = (out.float() - ref).abs()
        tol = TOLERANCE[dtype]
        finite = bool(torch.isfinite(out).all())
        max_err = float(err.max()) if finite else math.inf
        return max_err, finite and bool((err <= tol + tol * ref.abs()).all())

    def time_rounds(self, calls):
        """calls: [callable]. Warm-up, then self.reps rounds, each running every callable once after an L2
        flush, the order rotating by one from round to round. Returns [(median_ms, min_ms)] in input order."""
        torch = self.torch
        for call in calls:
            for _ in range(self.warmup - 1):  # the checked call was the first warm-up
                call()
        events = [[] for _ in calls]
        n = len(calls)
        for r in range(self.reps):
            for j in range(n):
                i = (r + j) % n
                self.flush.zero_()  # on the stream before the start event: not timed
                if self.spin:
                    self.spin(200_000)
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                calls[i]()
                stop.record()
                events[i].append((start, stop))
        torch.cuda.synchronize()
        result = []
        for ev in events:
            times = [a.elapsed_time(b) for a, b in ev]
            result.append((statistics.median(times), min(times)))
        return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # torch before the book's library: the library links the system's CUDA (libcublas, libcudart), and
    # `import torch` after it segfaults in torch/__init__.py (an H200, CUDA 13.0); before it, both load.
    try:
        import torch
    except ImportError:
        torch = None
    chapters = None
    if args.chapters:
        try:
            chapters = Chapters(args.chapters)
            ours = chapters.select(args.variants)
        except (OSError, AttributeError) as e:  # AttributeError: a library without the book's functions
            print(f"bench_torch_sdpa: cannot load the book's C interface {args.chapters}: {e} "
                  "(build it with the gpu backend: build-gpu/lib/libflashsteps_capi.so)", file=sys.stderr)
            return 2
        except ValueError as e:
            print(f"bench_torch_sdpa: --variants: {e}", file=sys.stderr)
            return 2
    else:
        ours = []
    if torch is None:
        print("bench_torch_sdpa: PyTorch is not installed (pip install torch): it is the baseline this script times",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_torch_sdpa: no CUDA device visible to PyTorch (or a CPU-only PyTorch); "
              "the baselines are GPU kernels", file=sys.stderr)
        return 2
    try:
        bench = Bench(torch, args.reps, args.warmup)
    except ImportError:
        print(f"bench_torch_sdpa: PyTorch {torch.__version__} lacks torch.nn.attention.sdpa_kernel "
              "(needs PyTorch >= 2.3)", file=sys.stderr)
        return 2

    commit = args.commit or (chapters.commit if chapters else default_commit())
    if chapters and not args.commit and chapters.commit != default_commit():
        print(f"bench_torch_sdpa: the library was built from {chapters.commit}, the tree is at {default_commit()}; "
              "the rows carry the library's", file=sys.stderr)
    device = torch.cuda.get_device_name(0).replace('"', '""')
    fixed = f'"{device}",{driver_version()},{torch.version.cuda or "none"},{commit}'
    dtypes = ["fp16", "bf16"] if args.dtype == "both" else [args.dtype]
    causals = {"off": [False], "on": [True], "both": [False, True]}[args.causal]
    shapes = sweep(args.shapes, dtypes, causals)
    per_shape = len(args.backends) + len(ours)
    total, done, failed = len(shapes) * per_shape, 0, 0
    out = open_csv(args.csv)
    print(f"bench_torch_sdpa: {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{total} measurements" + (f", the book's variants from {commit}" if chapters else ""), file=sys.stderr)
    start_time = time.monotonic()

    for B, H, Lq, Lk, d, dtype, causal in shapes:
        shape = shape_label(B, H, Lq, Lk, d, dtype, causal)
        if args.budget and time.monotonic() - start_time > args.budget:
            done += per_shape
            print(f"[{done}/{total}] skip {shape}: past the budget of {args.budget:.0f} s", file=sys.stderr)
            continue
        q = k = v = ref = None
        try:
            q, k, v = bench.inputs(B, H, Lq, Lk, d, dtype)
            ref = bench.reference(q, k, v, causal)
        except RuntimeError as e:  # out of memory, most likely (torch.cuda.OutOfMemoryError is one)
            why = first_line(e)
        if ref is None:
            q = k = v = None
            release()
            done += per_shape
            print(f"[{done}/{total}] skip {shape}, every implementation: no inputs or fp32 reference ({why})",
                  file=sys.stderr)
            continue
        # Every implementation: (chapter, variant, call, extra bytes, modelled bytes, max_err, pass).
        impls, held = [], []
        for name in args.backends:
            backend = bench.backend(name)
            why = None
            if backend is None:
                why = f"PyTorch {torch.__version__} has no {BACKEND_ENUM[name]} backend"
            else:
                try:
                    call, o = bench.torch_call(backend, q, k, v, causal)
                    max_err, ok = bench.check(o, ref, dtype)
                    del o
                except torch.cuda.OutOfMemoryError:  # before RuntimeError: it is one
                    why = "out of memory"
                except RuntimeError as e:
                    why = first_line(e)
            if why:
                release()  # what the failed call held goes back before the next one
                done += 1
                print(f"[{done}/{total}] skip sdpa_{name} {shape}: {why}", file=sys.stderr)
                continue
            # GB/s from a cost model of Q, K, V and O only, each read or written once: the least any backend
            # must move. The math backend also writes and reads S and P, so its figure is a floor.
            moved = ELEM_BYTES[dtype] * 2.0 * B * H * (Lq + Lk) * d
            extra = B * H * Lq * Lk * (4 + ELEM_BYTES[dtype]) if name == "math" else 0  # S in fp32 and P
            impls.append(("torch", f"sdpa_{name}", call, extra, moved, max_err, ok))
        for chapter, name in ours:
            prob = chapters.problem(B, H, Lq, Lk, d, dtype, causal, 1.0 / math.sqrt(d))
            why = chapters.unsupported(name, prob)
            if not why:
                try:
                    ws_bytes = chapters.workspace_bytes(name, prob)
                    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
                    o = torch.full_like(q, math.nan)  # an element the kernel leaves unwritten fails the check
                    ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), ws.data_ptr() if ws_bytes else None)
                    chapters.run(name, prob, *ptrs)
                    chapters.synchronize()
                    max_err, ok = bench.check(o, ref, dtype)
                    held.append((ws, o))
                    call = (lambda name=name, prob=prob, ptrs=ptrs: chapters.run(name, prob, *ptrs))
                    impls.append((chapter, name, call, ws_bytes, chapters.hbm_bytes(name, prob), max_err, ok))
                    continue
                except torch.cuda.OutOfMemoryError:
                    why = "out of memory"
                except RuntimeError as e:
                    why = first_line(e)
            release()
            done += 1
            print(f"[{done}/{total}] skip {chapter}/{name} {shape}: {why}", file=sys.stderr)
        if impls:
            times = bench.time_rounds([i[2] for i in impls])
            if chapters:
                chapters.synchronize()  # a kernel that failed while timed: its rows would be wrong
        flops = 4.0 * B * H * d * visible_pairs(Lq, Lk, causal)
        for (chapter, variant, _, extra, moved, max_err, ok), (median_ms, min_ms) in zip(impls, times if impls else []):
            done += 1
            tflops = flops / (median_ms * 1e9)
            gbps = moved / (median_ms * 1e6)
            out.write(measured_row(fixed, chapter, variant, dtype, B, H, Lq, Lk, d, causal, median_ms, min_ms, tflops,
                                   gbps, extra, max_err, ok))
            failed += not ok
            print(f"[{done}/{total}] {chapter + '/' + variant:32} {shape}: {median_ms:.4f} ms, {tflops:.1f} TFLOP/s, "
                  f"max error {max_err:.2e} {'pass' if ok else 'FAIL'}", file=sys.stderr)
        out.flush()  # a long sweep that dies keeps the rows it measured
        del q, k, v, ref, impls, held
        release()

    if out is not sys.stdout:
        out.close()
    if failed:
        print(f"bench_torch_sdpa: {failed} measurement(s) failed the check against the fp32 math backend",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
