#!/usr/bin/env python3
"""figures.py: the notes' figures, drawn from the code's own rules and from arithmetic.

Nothing here is a measurement. Each figure takes its rule from the file that defines it:

  01_memory_traffic.svg   chapter 01's cost model (01_naive_attention/variants.cpp): S written once
                          and read three times, P written once and read once
  02_reduction_trees.svg  common/kernels/reduce.cuh: warp_max's butterfly, block_reduce's two levels
  03_online_softmax.svg   the split-softmax identity of notes/03 on one row of 8 scores in 2 blocks
                          (the numbers are computed here and checked against a direct softmax)
  04_loop_order.svg       FlashAttention-1's loop order (chapter 04) against FlashAttention-2's
                          (chapter 05)
  05_mma_fragments.svg    which lane holds which element of mma.m16n8k16's A, B and C: the
                          formulas are read from common/simt/include/simt/fragments.h
  05_swizzle_banks.svg    the shared-memory banks of ldmatrix's 8 rows, plain, padded and swizzled:
                          the swizzled address is read from 05_flash_v2/pipeline.cuh
  06_tile_map.svg         chapter 06's tiles (skipped, masked, visited without a mask): the rules
                          of tools/causal_schedule.py, which reproduces 06_causal/causal.h
  06_schedule.svg         skip_tiles' and balanced's launch orders on a small GPU (a model:
                          tools/causal_schedule.py's greedy scheduler)
  07_loop_order.svg       chapter 07's backward: the K/V-outer pass (a block per K/V tile from
                          first_q_tile down, dQ by atomics) and the deterministic dQ pass (a block
                          per Q tile up to the diagonal); tiles Br x Bc read from
                          07_backward/backward.h, skip and mask rules as chapter 06's
  08_split_kv.svg         chapter 08's split-KV: the grid's busy share unsplit and with the splits
                          of split_heuristic (common/harness/decode/decode.cpp, reproduced here and
                          checked: 33 splits at 8 blocks and 32k keys), and the combine of one row
                          with numbers (checked against a direct softmax)
  08_paged_cache.svg      a pool of pages and a block table: DecodeParams::paged_row
                          (common/kernels/decode_params.h) on an example table, the new token appended in place
  08_gqa_packing.svg      the g x Lq query rows of one KV head as the rows of one block:
                          rows_per_block of 08_decoding/gqa_packed.cu, the row mapping of decode.cuh
  08_roofline.svg         decoding's arithmetic intensity against the H100's roofs, the numbers of
                          common/gpus/gpus.h
  09_wgmma_layout.svg     which thread and register of a warpgroup hold each element of wgmma's
                          m64nNk16 accumulator (drawn at N = 16): frag::wgmma_d_row / wgmma_d_col read
                          from common/simt/include/simt/fragments.h, tiles()[N / 8][4] from simt/wgmma.cuh
  09_swizzle_descriptor.svg  a K-major tile in the 128-byte swizzle: swizzled<R> and k_major_step<R> read
                          from 09_hopper/smem_tiles.cuh, checked against the address wgmma reads (the
                          emulator's element_offset in common/simt/src/wgmma.cpp) for every element
  09_pipeline.svg         steps c (tma_ring.cu) and d (warp_specialized.cu) as a schematic timeline of the
                          ring's stages and mbarriers, kStages from 09_hopper/hopper.h: the order of events
                          is the code's, the durations are illustrative
  09_registers.svg        the SM's 65536 registers by role, d = 128: ptxas's counts
                          (results/static-sm90a/09_hopper_ptxas.txt) and setmaxnreg's (09_hopper/hopper.h)
  09_ping_pong.svg        steps d (warp_specialized.cu), e (ping_pong.cu) and f (intra_overlap.cu): the two
                          consumers and the tensor cores over 4 K/V tiles, a small event simulation of the code's
                          order (attend_tile in tile.cuh, PingPong in ring.cuh, read and checked here; kConsumers
                          from hopper.h), durations illustrative; checked: e's S chains alternate, f's softmax of
                          tile j overlaps its own P V of tile j - 1

  tools/figures.py                          # writes notes/figures/*.svg
  tools/figures.py --out DIR --check        # CI: writes into DIR, draws each figure twice and
                                            # fails unless both SVGs are byte-identical
  tools/figures.py --br 128 --bc 64         # chapter 05/06 tiles other than the current code's

The SVGs are deterministic (fixed svg.hashsalt, no date, text kept as text), so regenerating them
does not churn git. Each figure checks what it draws (every fragment element held by exactly one
lane, the swizzle a permutation, the online softmax equal to the direct one): a failed check exits
with status 1. Bad options exit 2 before anything is drawn; drawing needs matplotlib (without it:
exit 77, a skip), --help and the options' checks do not.
"""
import argparse
import importlib
import sys
from pathlib import Path

# figures_lib/ and causal_schedule.py sit beside this file: importable however the file is loaded.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures_lib import ROOT  # noqa: E402  (no matplotlib: the package's __init__ alone)

# Each figure: its module in figures_lib/ and the function that draws it. The modules import
# matplotlib (figures_lib/style.py), so they are imported only to draw: --help and the checks of the
# arguments need no matplotlib.
FIGURES = {
    "01_memory_traffic": ("ch01", "fig_memory_traffic"),
    "02_reduction_trees": ("ch02", "fig_reduction_trees"),
    "03_online_softmax": ("ch03", "fig_online_softmax"),
    "04_loop_order": ("ch04", "fig_loop_order"),
    "05_mma_fragments": ("ch05", "fig_mma_fragments"),
    "05_swizzle_banks": ("ch05", "fig_swizzle_banks"),
    "06_tile_map": ("ch06", "fig_tile_map"),
    "06_schedule": ("ch06", "fig_schedule"),
    "07_loop_order": ("ch07", "fig_backward_loop_order"),
    "08_split_kv": ("ch08", "fig_split_kv"),
    "08_paged_cache": ("ch08", "fig_paged_cache"),
    "08_gqa_packing": ("ch08", "fig_gqa_packing"),
    "08_roofline": ("ch08", "fig_roofline"),
    "09_wgmma_layout": ("ch09_layouts", "fig_wgmma_layout"),
    "09_swizzle_descriptor": ("ch09_layouts", "fig_swizzle_descriptor"),
    "09_pipeline": ("ch09_pipeline", "fig_pipeline"),
    "09_registers": ("ch09_pipeline", "fig_registers"),
    "09_ping_pong": ("ch09_ping_pong", "fig_ping_pong"),
    "10_block_mask": ("ch10", "fig_block_mask"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--out", default=str(ROOT / "notes" / "figures"), help="folder for the SVGs (default notes/figures)")
    ap.add_argument("--only", action="append", choices=sorted(FIGURES), help="draw only this figure (repeatable)")
    ap.add_argument("--png", action="store_true", help="write PNGs instead (to look at; not committed)")
    ap.add_argument("--check", action="store_true", help="draw each figure twice and fail unless the SVGs are identical")
    ap.add_argument("--n01", type=int, default=4096, help="chapter 01's N (default 4096)")
    ap.add_argument("--d01", type=int, default=64, help="chapter 01's head dim (default 64)")
    ap.add_argument("--br", type=int, default=128,
                    help="chapter 05/06's rows of Q per tile (default 128: fa2_tiles(d).Br in 05_flash_v2/flash_v2.h, d <= 64)")
    ap.add_argument("--bc", type=int, default=64,
                    help="chapter 05/06's keys per K/V tile (default 64: fa2_tiles(64).Bc in 05_flash_v2/flash_v2.h)")
    ap.add_argument("--swizzle-dims", type=int, nargs="+", default=[64, 128], help="head dims of the bank figure")
    ap.add_argument("--sched-n", type=int, default=2048, help="sequence length of the schedule figure")
    ap.add_argument("--sched-heads", type=int, default=4, help="B*H of the schedule figure")
    ap.add_argument("--sched-sms", type=int, default=8, help="multiprocessors of the schedule figure's small GPU")
    ap.add_argument("--sched-per-sm", type=int, default=2, help="resident blocks per SM of the schedule figure")
    ap.add_argument("--split-context", type=int, default=32768,
                    help="keys per sequence of the split-KV figure (default 32768: notes/08's example)")
    args = ap.parse_args()
    for name in ("n01", "d01", "br", "bc", "sched_n", "sched_heads", "sched_sms", "sched_per_sm", "split_context"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")

    if any(d < 1 for d in args.swizzle_dims):
        ap.error("--swizzle-dims takes head dims of at least 1")
    out = Path(args.out)
    if not args.out or (out.exists() and not out.is_dir()):
        ap.error(f"--out {args.out!r} is not a folder: name the folder for the figures")
    # Drawing needs matplotlib: without it figures_lib/style.py says so and exits 77 (a skip).
    from figures_lib.style import CheckFailed, save
    draw = {name: getattr(importlib.import_module(f"figures_lib.{module}"), function)
            for name, (module, function) in FIGURES.items()}
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"figures.py: --out {args.out} cannot be created: {e.strerror}", file=sys.stderr)
        return 2
    try:
        for name in args.only or FIGURES:
            save(draw[name](args), out / f"{name}.{'png' if args.png else 'svg'}", args.check)
    except CheckFailed as e:
        print(f"figures.py: check failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
