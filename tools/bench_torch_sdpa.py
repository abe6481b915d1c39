#!/usr/bin/env python3
"""bench_torch_sdpa.py: PyTorch's scaled_dot_product_attention, the baselines, in the project's CSV.

Runs torch.nn.functional.scaled_dot_product_attention on the shapes the chapters are measured on,
with each of PyTorch's backends forced in turn (math, efficient, flash = FlashAttention-2, cuDNN),
and writes one row per measurement in the schema of common/harness/report.cpp (chapter "torch",
variant sdpa_math | sdpa_efficient | sdpa_flash | sdpa_cudnn), so that the chapters' rows and these
can be plotted together (tools/plot_speedups.py). Speedups are only meaningful between rows
measured on the same GPU in the same session: run this right after the chapters' sweep.

Timing follows notes/00_overview.md: CUDA events around the call only, warm-up first, a buffer of
twice the L2 size written between repetitions, median and minimum of >= 20 repetitions.

  tools/bench_torch_sdpa.py --csv results/nvidia-h100-80gb-hbm3/torch.csv   # FlashAttention's sweep
  tools/bench_torch_sdpa.py --shapes small --dtype fp16 --causal off
"""
import argparse
import datetime
import gc
import math
import os
import statistics
import subprocess
import sys
import warnings
from pathlib import Path

# Must match kCsvHeader in common/harness/report.cpp.
CSV_HEADER = ("device,driver,cuda,commit,timestamp,chapter,variant,dtype,B,H,Lq,Lk,d,causal,mask,"
              "median_ms,min_ms,tflops,gbps,extra_bytes,max_err,pass,kind,bound")

BACKENDS = ["math", "efficient", "flash", "cudnn"]  # the order they run in, and the variant suffix
BACKEND_ENUM = {"math": "MATH", "efficient": "EFFICIENT_ATTENTION", "flash": "FLASH_ATTENTION",
                "cudnn": "CUDNN_ATTENTION"}
ELEM_BYTES = {"fp16": 2, "bf16": 2}
# The harness's element-wise tolerance, |o - ref| <= tol + tol*|ref| (notes/00_overview.md).
TOLERANCE = {"fp16": 2e-3, "bf16": 1.6e-2}
# The fp32 reference runs a few heads at a time so that its S and P stay within this many bytes.
REFERENCE_CHUNK_BYTES = 2 << 30
REPO = Path(__file__).resolve().parent.parent


def sweep(which, dtypes, causals):
    """(B, H, N, d, dtype, causal) tuples. FlashAttention's convention: B*N = 16k tokens, hidden
    size 2048 (H = 32 for d = 64, H = 16 for d = 128)."""
    tokens, lengths = (16384, [512, 1024, 2048, 4096, 8192, 16384]) if which == "flash" else (2048, [256, 1024])
    shapes = []
    for dtype in dtypes:
        for d, H in ((64, 32), (128, 16)):
            for causal in causals:
                for N in lengths:
                    shapes.append((tokens // N, H, N, d, dtype, causal))
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


def open_csv(path):
    """Appends to path, writing the header only to a new or empty file; refuses a foreign header."""
    if path is None:
        print(CSV_HEADER, flush=True)
        return sys.stdout
    p = Path(path)
    fresh = not p.exists() or p.stat().st_size == 0
    if not fresh:
        with p.open() as f:
            first = f.readline().rstrip("\r\n")
        if first != CSV_HEADER:
            print(f"bench_torch_sdpa: {path} does not start with the project's CSV header; not appending to it",
                  file=sys.stderr)
            sys.exit(2)
    p.parent.mkdir(parents=True, exist_ok=True)
    f = p.open("a")
    if fresh:
        f.write(CSV_HEADER + "\n")
    return f


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time torch.nn.functional.scaled_dot_product_attention with each backend forced "
                    "(math, efficient, flash, cudnn) and write rows in the project's CSV schema.",
        epilog="Needs PyTorch with CUDA and a GPU; exits 2 without them. Skipped backends and progress go to "
               "stderr. Exit code 1 if any backend's output failed the check against the fp32 math backend.")
    ap.add_argument("--shapes", choices=["flash", "small"], default="flash",
                    help="flash: B*N = 16k, N = 512..16k, d = 64 (H = 32) and d = 128 (H = 16) (default); "
                         "small: B*N = 2k, N = 256 and 1k, for a quick look")
    ap.add_argument("--dtype", choices=["fp16", "bf16", "both"], default="both", help="input type (default both)")
    ap.add_argument("--causal", choices=["off", "on", "both"], default="both",
                    help="is_causal=True, PyTorch's top-left alignment (default both)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="comma-separated subset of " + ",".join(BACKENDS) + " (default all)")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions, at least 20 (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--csv", metavar="FILE", help="append the rows to FILE (header if new); default stdout")
    ap.add_argument("--commit", default=None,
                    help="commit column (default: $FLASHSTEPS_COMMIT, else git rev-parse --short=12 HEAD, else unknown)")
    args = ap.parse_args(argv)
    if args.reps < 20:
        ap.error("--reps must be at least 20: the project reports the median and minimum of >= 20 repetitions")
    if args.warmup < 1:
        ap.error("--warmup must be at least 1: the first call also checks the output")
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in args.backends if b not in BACKENDS]
    if bad or not args.backends:
        ap.error(f"--backends: unknown backend(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(BACKENDS)}")
    return args


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

    def backend(self, name):
        return getattr(self.SDPBackend, BACKEND_ENUM[name], None)

    def inputs(self, B, H, N, d, dtype):
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(1)
        tdtype = torch.float16 if dtype == "fp16" else torch.bfloat16
        return [torch.randn(B, H, N, d, generator=g, device="cuda", dtype=tdtype) for _ in range(3)]

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

    def measure(self, backend, q, k, v, causal, ref, dtype):
        """(median_ms, min_ms, max_err, pass). Raises RuntimeError when the backend refuses."""
        torch = self.torch
        with self.sdpa_kernel(backend):
            # PyTorch says why a forced backend cannot run in warnings, then raises "No available kernel".
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    out = self.sdpa(q, k, v, is_causal=causal)
                except torch.cuda.OutOfMemoryError:
                    raise
                except RuntimeError as e:
                    why = "; ".join(str(w.message).strip() for w in caught)
                    raise RuntimeError(f"{first_line(e)}{' (' + why + ')' if why else ''}") from None
            err = (out.float() - ref).abs()
            tol = TOLERANCE[dtype]
            finite = bool(torch.isfinite(out).all())
            max_err = float(err.max()) if finite else math.inf
            ok = finite and bool((err <= tol + tol * ref.abs()).all())
            del out, err
            for _ in range(self.warmup - 1):
                self.sdpa(q, k, v, is_causal=causal)
            events = []
            for _ in range(self.reps):
                self.flush.zero_()  # on the stream before the start event: not timed
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                self.sdpa(q, k, v, is_causal=causal)
                stop.record()
                events.append((start, stop))
            torch.cuda.synchronize()
        times = [a.elapsed_time(b) for a, b in events]
        return statistics.median(times), min(times), max_err, ok


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
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

    device = torch.cuda.get_device_name(0).replace('"', '""')
    fixed = f'"{device}",{driver_version()},{torch.version.cuda or "none"},{args.commit or default_commit()}'
    dtypes = ["fp16", "bf16"] if args.dtype == "both" else [args.dtype]
    causals = {"off": [False], "on": [True], "both": [False, True]}[args.causal]
    shapes = sweep(args.shapes, dtypes, causals)
    total, done, failed = len(shapes) * len(args.backends), 0, 0
    out = open_csv(args.csv)
    print(f"bench_torch_sdpa: {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{total} measurements", file=sys.stderr)

    for B, H, N, d, dtype, causal in shapes:
        shape = f"{dtype} B={B} H={H} N={short_n(N)} d={d}{' causal' if causal else ''}"
        q = k = v = ref = None
        try:
            q, k, v = bench.inputs(B, H, N, d, dtype)
            ref = bench.reference(q, k, v, causal)
        except RuntimeError as e:  # out of memory, most likely (torch.cuda.OutOfMemoryError is one)
            why = first_line(e)
        if ref is None:
            q = k = v = None
            gc.collect()
            torch.cuda.empty_cache()
            done += len(args.backends)
            print(f"[{done}/{total}] skip {shape}, every backend: no inputs or fp32 reference ({why})", file=sys.stderr)
            continue
        for name in args.backends:
            done += 1
            variant = f"sdpa_{name}"
            backend = bench.backend(name)
            why = None
            if backend is None:
                why = f"PyTorch {torch.__version__} has no {BACKEND_ENUM[name]} backend"
            else:
                try:
                    median_ms, min_ms, max_err, ok = bench.measure(backend, q, k, v, causal, ref, dtype)
                except torch.cuda.OutOfMemoryError:  # before RuntimeError: it is one
                    why = "out of memory"
                except RuntimeError as e:
                    why = first_line(e)
            if why:
                gc.collect()
                torch.cuda.empty_cache()  # what the failed call held goes back before the next backend
                print(f"[{done}/{total}] skip {variant} {shape}: {why}", file=sys.stderr)
                continue
            flops = 4.0 * B * H * d * visible_pairs(N, N, causal)
            # GB/s from a cost model of Q, K, V and O only, each read or written once: the least any
            # backend must move. The math backend also writes and reads S and P, so its figure is a floor.
            moved = ELEM_BYTES[dtype] * 4.0 * B * H * N * d
            extra = B * H * N * N * (4 + ELEM_BYTES[dtype]) if name == "math" else 0  # S in fp32 and P
            tflops = flops / (median_ms * 1e9)
            gbps = moved / (median_ms * 1e6)
            stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.write(f"{fixed},{stamp},torch,{variant},{dtype},{B},{H},{N},{N},{d},"
                      f"{'top-left' if causal else 'none'},none,{median_ms:.6g},{min_ms:.6g},{tflops:.6g},"
                      f"{gbps:.6g},{extra},{max_err:.6g},{int(ok)},measured,\n")
            out.flush()  # a long sweep that dies keeps the rows it measured
            failed += not ok
            print(f"[{done}/{total}] {variant:15} {shape}: {median_ms:.4f} ms, {tflops:.1f} TFLOP/s, "
                  f"max error {max_err:.2e} {'pass' if ok else 'FAIL'}", file=sys.stderr)
        del q, k, v, ref
        gc.collect()
        torch.cuda.empty_cache()

    if out is not sys.stdout:
        out.close()
    if failed:
        print(f"bench_torch_sdpa: {failed} measurement(s) failed the check against the fp32 math backend",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
