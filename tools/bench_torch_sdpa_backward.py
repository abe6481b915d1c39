#!/usr/bin/env python3
"""bench_torch_sdpa_backward.py: PyTorch's SDPA backward, the baseline of chapter 07, in the project's CSV.

For each shape and each forced backend (flash = FlashAttention-2, efficient, cudnn; math on request),
runs the forward once (untimed) and then times torch.autograd.grad of its output alone: the backward's
kernels, the forward excluded. dQ, dK and dV are checked against the fp32 math backend's (inputs
upcast exactly) by FlashAttention's rule: each gradient's largest error at most twice that of the math
backend in the same dtype, plus one unit in the last place of its largest value. One row per
measurement (chapter "torch", variant sdpa_<backend>_backward), TFLOP/s of 2.5 times the forward's
FLOPs (the book's convention), GB/s of Q, K, V, O, dO read and dQ, dK, dV written once.

The chapter's own rows come from its binary, in the same session on the same GPU (a speedup is only
taken between rows measured so: results/README.md):

  build-gpu/bin/07_backward -n 4096 -b 4 -H 16 -d 128 --csv results/<device>/chapters.csv
  tools/bench_torch_sdpa_backward.py --shapes flash --dtype fp16 --csv results/<device>/torch.csv

Shapes, timing, the L2 flush and the CSV header are tools/bench_torch_sdpa.py's. Needs PyTorch with
CUDA and a GPU; exits 2 without them.
"""
import argparse
import math
import sys
import time

from bench_torch_sdpa import (BACKEND_ENUM, BACKENDS, ELEM_BYTES, Bench, check_commit_env, default_commit,
                              driver_version, first_line, release, shape_label, sweep, visible_pairs)
from results_csv import check_csv, measured_row, open_csv

# The fp32 reference and the same-dtype yardstick run a few heads at a time, within this many bytes of S and P.
CHUNK_BYTES = 2 << 30


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", choices=["flash", "small", "uneven"], default="flash",
                    help="flash: B*N = 16k, N = 512 .. 16k, d = 64 (H = 32) and 128 (H = 16); small: B*N = 2k")
    ap.add_argument("--seq", type=int, nargs="+", metavar="N",
                    help="only the shapes of these sequence lengths (query lengths of --shapes' sweep)")
    ap.add_argument("--dtype", choices=["fp16", "bf16", "both"], default="both")
    ap.add_argument("--causal", choices=["off", "on", "both"], default="both")
    ap.add_argument("--backends", default="flash,efficient,cudnn",
                    help=f"comma-separated, from {', '.join(BACKENDS)} (default flash,efficient,cudnn)")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions, at least 20 (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--budget", type=float, default=0, help="start no new shape after this many seconds (0: none)")
    ap.add_argument("--csv", metavar="FILE", help="append the rows to FILE (header if new); default stdout")
    args = ap.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in args.backends if b not in BACKENDS]
    if bad or not args.backends:
        ap.error(f"--backends: unknown backend(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(BACKENDS)}")
    if args.reps < 20 or args.warmup < 1 or not args.budget >= 0:
        ap.error("--reps takes 20 or more, --warmup 1 or more, --budget 0 or more")
    why = check_csv(args.csv)  # before torch is imported: a bad --csv costs nothing
    if why:
        ap.error(why)
    check_commit_env(ap, True)
    if args.seq:  # each a query length of the sweep --shapes names, none dropped
        lengths = sorted({s[2] for s in sweep(args.shapes, ["fp16"], [False])})
        bad = [n for n in args.seq if n not in lengths]
        if bad:
            ap.error(f"--seq {' '.join(map(str, bad))}: not a sequence length of --shapes {args.shapes}, whose shapes "
                     f"have {', '.join(map(str, lengths))}")
    return args


def grads_by_chunks(bench, q, k, v, dout, causal, upcast):
    """dQ, dK, dV of the math backend, a few (batch, head) planes at a time: in fp32 from the upcast inputs
    (the reference), or in the inputs' dtype (the yardstick a fast kernel is judged against)."""
    torch = bench.torch
    B, H, Lq, d = q.shape
    Lk = k.shape[2]
    flat = [t.detach().reshape(B * H, 1, t.shape[2], d) for t in (q, k, v, dout)]
    chunk = max(1, CHUNK_BYTES // (Lq * Lk * 4 * 4))
    out = [torch.empty(B * H, 1, t.shape[2], d, dtype=torch.float32 if upcast else t.dtype, device="cuda")
           for t in flat[:3]]
    with bench.sdpa_kernel(bench.SDPBackend.MATH):
        for i in range(0, B * H, chunk):
            s = slice(i, i + chunk)
            qs, ks, vs, ds = ((t[s].float() if upcast else t[s].clone()).requires_grad_(j < 3) for j, t in enumerate(flat))
            o = bench.sdpa(qs, ks, vs, is_causal=causal)
            for dst, g in zip(out, torch.autograd.grad(o, (qs, ks, vs), ds)):
                dst[s] = g
    return [g.view(B, H, g.shape[2], d) for g in out]


MANTISSA_BITS = {"fp16": 10, "bf16": 7}


def check(grads, ref, naive, dtype):
    """(max_err, pass): FlashAttention's rule on each gradient, and nothing NaN or Inf."""
    worst, ok = 0.0, True
    for g, r, n in zip(grads, ref, naive):
        if not bool(g.isfinite().all()):
            return math.inf, False
        err = float((g.float() - r).abs().max())
        bound = 2 * float((n.float() - r).abs().max()) + math.ldexp(float(r.abs().max()), -MANTISSA_BITS[dtype])
        worst, ok = max(worst, err), ok and err <= bound
    return worst, ok


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        print("bench_torch_sdpa_backward: PyTorch is not installed (pip install torch): it is the baseline this script "
              "times", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_torch_sdpa_backward: no CUDA device visible to PyTorch (or a CPU-only PyTorch)", file=sys.stderr)
        return 2
    try:
        bench = Bench(torch, args.reps, args.warmup)
    except ImportError:
        print(f"bench_torch_sdpa_backward: PyTorch {torch.__version__} lacks torch.nn.attention.sdpa_kernel (needs >= 2.3)",
              file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name(0).replace('"', '""')
    fixed = f'"{device}",{driver_version()},{torch.version.cuda or "none"},{default_commit()}'
    dtypes = ["fp16", "bf16"] if args.dtype == "both" else [args.dtype]
    causals = {"off": [False], "on": [True], "both": [False, True]}[args.causal]
    shapes = [s for s in sweep(args.shapes, dtypes, causals) if not args.seq or s[2] in args.seq]
    if not shapes:
        print(f"bench_torch_sdpa_backward: no shape of --shapes {args.shapes} has --seq {args.seq}", file=sys.stderr)
        return 2
    total, done, failed = len(shapes) * len(args.backends), 0, 0
    out = open_csv(args.csv)
    start_time = time.monotonic()

    for B, H, Lq, Lk, d, dtype, causal in shapes:
        shape = shape_label(B, H, Lq, Lk, d, dtype, causal)
        if args.budget and time.monotonic() - start_time > args.budget:
            done += len(args.backends)
            print(f"[{done}/{total}] skip {shape}: past the budget of {args.budget:.0f} s", file=sys.stderr)
            continue
        try:
            q, k, v = (t.requires_grad_() for t in bench.inputs(B, H, Lq, Lk, d, dtype))
            g = torch.Generator(device="cuda").manual_seed(2)
            dout = torch.randn(q.shape, generator=g, device="cuda", dtype=q.dtype)
            ref = grads_by_chunks(bench, q, k, v, dout, causal, True)
            naive = grads_by_chunks(bench, q, k, v, dout, causal, False)
        except RuntimeError as e:  # out of memory, most likely
            release()
            done += len(args.backends)
            print(f"[{done}/{total}] skip {shape}: no inputs or references ({first_line(e)})", file=sys.stderr)
            continue
        impls = []
        for name in args.backends:
            backend = bench.backend(name)
            why = None if backend is not None else f"PyTorch {torch.__version__} has no {BACKEND_ENUM[name]} backend"
            if not why:
                try:
                    with bench.sdpa_kernel(backend):
                        o = bench.sdpa(q, k, v, is_causal=causal)  # the forward, once, untimed
                    call = (lambda o=o, x=(q, k, v), do=dout: torch.autograd.grad(o, x, do, retain_graph=True))
                    max_err, ok = check(call(), ref, naive, dtype)
                    impls.append((name, call, max_err, ok))
                    continue
                except RuntimeError as e:
                    why = first_line(e)
            release()
            done += 1
            print(f"[{done}/{total}] skip sdpa_{name}_backward {shape}: {why}", file=sys.stderr)
        times = bench.time_rounds([i[1] for i in impls]) if impls else []
        flops = 2.5 * 4.0 * B * H * d * visible_pairs(Lq, Lk, causal)
        moved = ELEM_BYTES[dtype] * B * H * d * (4.0 * Lq + 4.0 * Lk)  # Q O dO read, dQ written; K V read, dK dV written
        for (name, _, max_err, ok), (median_ms, min_ms) in zip(impls, times):
            done += 1
            out.write(measured_row(fixed, "torch", f"sdpa_{name}_backward", dtype, B, H, Lq, Lk, d, causal, median_ms,
                                   min_ms, flops / (median_ms * 1e9), moved / (median_ms * 1e6), 0, max_err, ok))
            failed += not ok
            print(f"[{done}/{total}] sdpa_{name}_backward {shape}: {median_ms:.4f} ms, "
                  f"{flops / (median_ms * 1e9):.1f} TFLOP/s, max error {max_err:.2e} {'pass' if ok else 'FAIL'}",
                  file=sys.stderr)
        out.flush()
        del q, k, v, dout, ref, naive, impls
        release()
    if out is not sys.stdout:
        out.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
