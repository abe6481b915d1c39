"""Chapter 08: decoding's split-KV, paged cache, GQA packing and roofline, from common/harness/decode/decode.cpp,
common/kernels/decode_params.h, 08_decoding/ and common/gpus/gpus.h."""
import math
import re

from .style import BLUE, GREEN, GREY, LIGHT, ORANGE, RED, ROOT, Rectangle, arrow, box, check, plt


def h100_spec():
    """The H100's numbers of common/gpus/gpus.h (the row keyed "h100"): SMs, clock, DRAM TB/s, L2 TB/s,
    tensor TFLOP/s, fp32 TFLOP/s, mma.sync fraction."""
    src = re.sub(r"//[^\n]*", "", (ROOT / "common/gpus/gpus.h").read_text())
    m = re.search(r'\{\.key = "h100",(.*?)\},\s*\{', src, re.S)
    check(m is not None, "common/gpus/gpus.h: cannot read the h100 row of kGpus; tools/figures.py must follow it")
    fields = dict(re.findall(r"\.(\w+) = ([0-9.]+)", m.group(1)))
    want = ["sms", "clock_ghz", "dram_tb_s", "l2_tb_s", "tensor_tflops", "fp32_tflops", "mma_sync_fraction"]
    check(all(k in fields for k in want), "common/gpus/gpus.h: the h100 row lacks one of " + ", ".join(want))
    return {"sms": int(fields["sms"]), "clock": float(fields["clock_ghz"]), "dram": float(fields["dram_tb_s"]),
            "l2": float(fields["l2_tb_s"]), "tensor": float(fields["tensor_tflops"]), "fp32": float(fields["fp32_tflops"]),
            "mma": float(fields["mma_sync_fraction"])}


def split_rule():
    """split_heuristic of common/harness/decode/decode.cpp, in Python, with kMinSplitKeys from decode.h. The
    function's lines that decide are checked to be there as they are reproduced here."""
    header = (ROOT / "common/harness/decode/decode.h").read_text()
    m = re.search(r"kMinSplitKeys = (\d+);", header)
    check(m is not None, "common/harness/decode/decode.h: cannot read kMinSplitKeys")
    min_keys = int(m.group(1))
    src = (ROOT / "common/harness/decode/decode.cpp").read_text()
    for line in ("std::clamp(max_keys / kMinSplitKeys, 1, 128)", "blocks * first * 10 < 9LL * per_sm * sms",
                 "s <= std::min(most, 2 * first)", "if (first == 1) return 1;", "n / (round * std::ceil(n / round))"):
        check(line in src, f"common/harness/decode/decode.cpp: split_heuristic no longer has `{line}`; "
              "tools/figures.py must follow it")

    def heuristic(blocks, max_keys, sms, per_sm=2):  # two blocks per SM: steps c to g
        most = min(max(max_keys // min_keys, 1), 128)

        def filled(s):
            n, wave = blocks * s, sms * per_sm
            return n / (wave * math.ceil(n / wave))
        first = 1
        while first < most and blocks * first * 10 < 9 * per_sm * sms:
            first += 1
        if first == 1:
            return 1
        best = first
        for s in range(first + 1, min(most, 2 * first) + 1):
            if filled(s) > filled(best) + 1e-9:
                best = s
        return best
    return heuristic


def rows_per_block_rule():
    """rows_per_block of 08_decoding/gqa_packed.cu: the fewest of 1, 2, 4, 8 rows that hold g x Lq."""
    src = (ROOT / "08_decoding/gqa_packed.cu").read_text()
    check("rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8" in src,
          "08_decoding/gqa_packed.cu: rows_per_block changed; tools/figures.py must follow it")
    return lambda rows: 1 if rows <= 1 else 2 if rows <= 2 else 4 if rows <= 4 else 8


def fig_split_kv(args):
    gpu, heuristic = h100_spec(), split_rule()
    sms, keys, blocks = gpu["sms"], args.split_context, 8  # B = 1, Hkv = 8: step e's unsplit grid
    splits = heuristic(blocks, keys, sms)
    if keys == 32768:
        check(splits == 33, "split_heuristic gives 33 splits to 8 blocks at 32k keys (notes/08)")
    per = math.ceil(keys / splits)
    grid = blocks * splits
    rounds = math.ceil(grid / sms)

    fig = plt.figure(figsize=(13, 7.4))
    top = fig.add_gridspec(2, 2, height_ratios=[1.5, 0.75], hspace=0.4, wspace=0.14)
    ax0, ax1 = fig.add_subplot(top[0, 0]), fig.add_subplot(top[0, 1])
    # Time in keys streamed by one SM, every SM at the same rate: a schematic of the busy share.
    for ax, title in ((ax0, f"unsplit: {blocks} blocks (one per KV head), {keys} keys each"),
                      (ax1, f"{splits} splits (split_heuristic): {grid} blocks of ≤ {per} keys, then the combine")):
        ax.set_xlim(0, keys * 1.04)
        ax.set_ylim(sms + 1, -1)
        ax.set_xlabel("time, in keys streamed by one SM (every SM at the same rate)")
        ax.set_ylabel(f"SM (of {sms})")
        ax.set_title(title, fontsize=9)
    for sm in range(blocks):
        ax0.barh(sm, keys, left=0, height=0.9, color=BLUE)
    ax0.add_patch(Rectangle((0, blocks - 0.5), keys, sms - blocks, facecolor=LIGHT, edgecolor="none"))
    ax0.text(keys / 2, (sms + blocks) / 2, f"{sms - blocks} SMs idle\nbusy share {blocks}/{sms} = "
             f"{blocks / sms:.3f}", ha="center", va="center", fontsize=10, color=GREY)
    for b in range(grid):
        sm, rnd = b % sms, b // sms
        lo = b // blocks * per  # split s = b / blocks covers keys [s * per, min(keys, (s + 1) * per))
        n = max(0, min(keys, lo + per) - lo)
        ax1.barh(sm, n, left=rnd * per, height=0.9, color=BLUE if rnd % 2 == 0 else GREEN)
    check(sum(max(0, min(keys, s * per + per) - s * per) for s in range(splits)) == keys,
          "the splits cover every key once")
    end = rounds * per
    rows = 32  # B x Lq x Hq query rows: the combine's blocks
    ax1.barh(range(min(rows, sms)), per * 0.4, left=end, height=0.9, color=ORANGE)
    last = grid - (rounds - 1) * sms
    ax1.annotate(f"{grid} blocks: {rounds} rounds of {sms}" +
                 (" (whole rounds)" if last == sms else f" (the last holds {last})") + ",\n"
                 f"then the combine (orange: {rows} blocks, one per query row;\nits width not to scale): "
                 f"the splits end at {end / keys:.3f} of the unsplit time",
                 xy=(end, sms / 2), xytext=(keys * 0.22, sms * 0.6), fontsize=9,
                 arrowprops=dict(arrowstyle="-|>", color="black"))

    # Bottom: the combine of one row, with numbers: 3 ranges of a row of 12 scores (base 2).
    ax2 = fig.add_subplot(top[1, :])
    ax2.axis("off")
    s = [1.0, 2.5, 0.5, 3.0, -1.0, 0.0, 4.0, 2.0, 1.5, -0.5, 0.5, 2.5]  # scores, base 2
    v = [0.3, -1.0, 0.8, 0.5, 2.0, -0.4, 1.2, 0.1, -0.7, 0.9, 0.0, -0.2]
    ranges = [(0, 4), (4, 8), (8, 12)]
    parts = []
    for lo, hi in ranges:
        m = max(s[lo:hi])
        p = [2 ** (x - m) for x in s[lo:hi]]
        l = sum(p)
        o = sum(pj * vj for pj, vj in zip(p, v[lo:hi])) / l
        parts.append((m, l, o, m + math.log2(l)))
    M = max(pt[3] for pt in parts)
    w = [2 ** (pt[3] - M) for pt in parts]
    O = sum(wi * pt[2] for wi, pt in zip(w, parts)) / sum(w)
    direct = sum(2 ** x * y for x, y in zip(s, v)) / sum(2 ** x for x in s)
    check(abs(O - direct) < 1e-12, "the combine equals the softmax over all the keys")
    lines = ["The combine (split_kv.cu's combine_kernel) on one row of 12 scores s_j (base 2: q·k · scale · log2 e) "
             "in 3 ranges of 4 keys:"]
    for i, ((lo, hi), (m, l, o, lse)) in enumerate(zip(ranges, parts)):
        lines.append(f"  split {i}: keys {lo}-{hi - 1}   m = {m:g}   l = Σ 2^(s − m) = {l:.4f}   "
                     f"O_{i} = Σ 2^(s − m) v / l = {o:+.4f}   lse_{i} = m + log2 l = {lse:.4f}")
    lines.append(f"  M = max lse = {M:.4f}      weights 2^(lse_s − M) = " + ", ".join(f"{x:.4f}" for x in w))
    lines.append(f"  O = Σ_s 2^(lse_s − M) O_s / Σ_s 2^(lse_s − M) = {O:+.6f}")
    lines.append(f"  check, all 12 at once: Σ 2^s v / Σ 2^s = {direct:+.6f}.   A split that sees no key writes "
                 "lse = −∞: weight 2^(−∞) = 0.")
    ax2.text(0.0, 1.0, "\n".join(lines), family="DejaVu Sans Mono", fontsize=9, va="top", linespacing=1.8,
             transform=ax2.transAxes)
    fig.suptitle(f"Split-KV (Flash-Decoding), step e at B = 1, Hq = 32, Hkv = 8, {keys} keys on {sms} SMs: "
                 "the split count from split_heuristic (common/harness/decode/decode.cpp).\nA schematic of the grid's "
                 "busy share (time as keys per SM), not a measurement; the modelled times are in notes/08",
                 fontsize=10)
    return fig


def fig_paged_cache(args):
    src = (ROOT / "common/kernels/decode_params.h").read_text()
    for expr in ("block_table[b * max_pages + j / page_size]) * page_size + j % page_size",):
        check(expr in src, "common/kernels/decode_params.h: paged_row no longer reads "
                           f"`{expr}`; tools/figures.py must follow it")
    page, pool = 4, 16
    lens = [9, 4, 6]   # cache_seqlens: keys before the append
    new = 1            # one new token per sequence, appended at cache_seqlens[b]
    keys = [n + new for n in lens]
    max_pages = math.ceil(max(keys) / page)
    import random
    order = list(range(pool))
    random.Random(8).shuffle(order)  # an example table: any free page will do
    table = [order[b * max_pages:(b + 1) * max_pages] for b in range(len(lens))]
    owner, where = {}, {}
    for b, n in enumerate(keys):
        for j in range(n):
            pg = table[b][j // page]
            row = pg * page + j % page  # paged_row: block_table[b][j / page_size] * page_size + j % page_size
            check(row not in where.values(), "two keys in one row of the pool")
            where[(b, j)] = row
            owner[pg] = b
    seq_colors = [BLUE, ORANGE, GREEN]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1, 1.7]})
    # Left: the block table [B, max_pages] and cache_seqlens.
    ax0.set_xlim(-2.2, max_pages + 2.6)
    ax0.set_ylim(len(lens) + 1.6, -1.4)
    ax0.set_aspect("equal")
    ax0.axis("off")
    ax0.set_title(f"block_table [B = {len(lens)}, max_pages = {max_pages}]\nand cache_seqlens", fontsize=10)
    for i in range(max_pages):
        ax0.text(i + 0.5, -0.25, f"[{i}]", ha="center", fontsize=8)
    for b in range(len(lens)):
        ax0.text(-0.2, b + 0.5, f"seq {b}", ha="right", va="center", fontsize=9)
        used = math.ceil(keys[b] / page)
        for i in range(max_pages):
            box(ax0, i, b, 1, 1, str(table[b][i]) if i < used else "–", seq_colors[b] if i < used else "white",
                fontsize=10, alpha=0.55 if i < used else 1)
        ax0.text(max_pages + 0.2, b + 0.5, f"{lens[b]} + {new} new", va="center", fontsize=8)
    ax0.text(max_pages / 2, len(lens) + 0.9, "key j of seq b: page block_table[b][j / page_size],\n"
             "row j % page_size of it", ha="center", fontsize=8)
    # Right: the pool of pages, each page_size rows of Hkv x d values.
    cols = 4
    ax1.set_xlim(-0.3, cols * (page + 1.2))
    ax1.set_ylim(pool // cols * 2.0 + 0.6, -1.2)
    ax1.set_aspect("equal")
    ax1.axis("off")
    ax1.set_title(f"the pool: k_cache, v_cache [pages = {pool}, page_size = {page}, Hkv, d]\neach cell a key "
                  "row, Hkv × d values: never split between two pages", fontsize=10)
    for pg in range(pool):
        x0, y0 = (pg % cols) * (page + 1.2), (pg // cols) * 2.0
        ax1.text(x0 + page / 2, y0 - 0.15, f"page {pg}", ha="center", fontsize=7, color=GREY)
        for r in range(page):
            hit = [(b, j) for (b, j), row in where.items() if row == pg * page + r]
            if hit:
                b, j = hit[0]
                is_new = j >= lens[b]
                box(ax1, x0 + r, y0, 1, 1, f"{j}", seq_colors[b], fontsize=8, alpha=0.9 if is_new else 0.45,
                    lw=2.2 if is_new else 1.0)
            else:
                box(ax1, x0 + r, y0, 1, 1, "", "white" if pg in owner else LIGHT, fontsize=7)
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", alpha=0.45) for c in seq_colors]
    handles += [Rectangle((0, 0), 1, 1, facecolor=BLUE, edgecolor="black", linewidth=2.2, alpha=0.9),
                Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black"),
                Rectangle((0, 0), 1, 1, facecolor=LIGHT, edgecolor="black")]
    fig.legend(handles, [f"seq {b}'s keys (number: j)" for b in range(len(lens))] +
               ["the new token, appended at cache_seqlens[b] in place", "a row of a sequence's page, not yet written",
                "a page no sequence owns (free)"], loc="lower center", ncol=3, frameon=False, fontsize=8)
    fig.suptitle("The paged KV cache of step e (flash_attn_with_kvcache's layout; vLLM's PagedAttention): an "
                 "example table. The rule is DecodeParams::paged_row\n(common/kernels/decode_params.h); an unpaged cache is one "
                 "page per sequence of page_size = the capacity (read through a table: block_table[b][0] = b)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.93))
    return fig


def fig_gqa_packing(args):
    src = (ROOT / "08_decoding/decode.cuh").read_text()
    check("t = pr / g, hq = hk * g + pr % g" in src,
          "08_decoding/decode.cuh: a block's row pr is no longer token pr / g of head hk * g + pr % g; "
          "tools/figures.py must follow it")
    R_of = rows_per_block_rule()
    g, hk = 4, 1  # Hq = 8, Hkv = 2: KV head 1 serves query heads 4..7
    cases = [(1, "steps b, c: a block per query row"), (1, "steps d, e: Lq = 1"), (2, "steps d, e: Lq = 2"),
             (4, "steps d, e: Lq = 4 (speculative)")]
    fig, axes = plt.subplots(1, len(cases), figsize=(15, 6.4), gridspec_kw={"width_ratios": [1.2, 1, 1, 1.3]})
    tok_colors = [BLUE, ORANGE, GREEN, "#8172b2"]
    for ci, (ax, (Lq, title)) in enumerate(zip(axes, cases)):
        ax.axis("off")
        ax.set_xlim(-0.5, 7.2)
        ax.set_ylim(18.5, -3.2)
        rows = g * Lq
        packed = ci > 0
        R = R_of(rows) if packed else 1
        chunks = math.ceil(rows / R)
        box(ax, 0.5, -2.6, 5, 1.2, f"KV head {hk}: K, V of every key", LIGHT, fontsize=8)
        y = 0.0
        for c in range(chunks):
            top_y = y
            for r in range(R):
                pr = c * R + r
                if pr >= rows:
                    break
                t, hq = pr // g, hk * g + pr % g
                box(ax, 1.5, y, 3.6, 0.9, f"row {pr}: token {t}, q head {hq}", tok_colors[t % 4], fontsize=7,
                    alpha=0.55)
                if not packed:
                    ax.add_patch(Rectangle((1.3, y - 0.1), 4.0, 1.1, fill=False, edgecolor="black", linewidth=1.4))
                    arrow(ax, (3.3, -1.4), (5.2, y + 0.45), color=RED, rad=-0.25, lw=0.8)
                y += 1.0 if packed else 1.25
            if packed:
                ax.add_patch(Rectangle((1.3, top_y - 0.1), 4.0, y - top_y + 0.2, fill=False, edgecolor="black",
                                       linewidth=1.6))
                ax.text(0.1, (top_y + y) / 2, f"block\n{c}", ha="center", va="center", fontsize=8)
                if c == 0:
                    arrow(ax, (3.3, -1.4), (3.3, top_y - 0.15), color=RED, lw=1.4)
                else:  # around the blocks above: each chunk streams the KV head again
                    arrow(ax, (5.5, -2.0), (5.35, top_y + 0.6), color=RED, rad=-0.35, lw=1.4)
            y += 0.8
        reads = rows if not packed else chunks
        ax.set_title(f"{title}\ng = {g}, Lq = {Lq}: {rows} rows, {R} per block\n{chunks if packed else rows} "
                     f"block{'s' if (chunks if packed else rows) > 1 else ''}: the KV head read {reads}×",
                     fontsize=9)
    fig.suptitle("GQA packing (step d): the g × Lq query rows of one KV head are the rows of one block (up to 8, "
                 "rows_per_block in gqa_packed.cu), so each 16-byte load of K or V serves all of them.\nRow pr of a "
                 "block is new token pr / g of query head hk·g + pr % g (decode.cuh); Hq = 8, Hkv = 2 here. Red: a "
                 "stream of the KV head's cache", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return fig


def fig_roofline(args):
    gpu = h100_spec()
    bw = gpu["dram"]  # TB/s
    roofs = [("tensor cores, dense fp16 (wgmma)", gpu["tensor"], RED),
             (f"mma.sync (× {gpu['mma']}, an assumption)", gpu["tensor"] * gpu["mma"], ORANGE),
             ("CUDA cores, fp32 FFMA", gpu["fp32"], GREEN)]
    fig, ax = plt.subplots(figsize=(10, 6.4))
    x = [10 ** (k / 20) for k in range(-20, 81)]  # 0.1 .. 10^4 FLOP/byte
    for name, peak, color in roofs:
        ridge = peak / bw
        ax.plot(x, [min(bw * xi, peak) for xi in x], color=color, linewidth=1.6,
                label=f"{name}: {peak:.0f} TFLOP/s, ridge {ridge:.0f} FLOP/byte")
        ax.plot([ridge], [peak], "o", color=color)
    # One query row against its KV head's cache, fp16: per key 4d FLOP (q·k and p·v) over 2·2·d bytes (a K and a
    # V row): 1 FLOP per byte whatever d. r rows sharing each load: r FLOP per byte.
    d, t = 128, 2
    per_row = 4 * d / (2 * d * t)
    check(per_row == 1.0, "one query row in fp16 does 1 FLOP per byte of K and V")
    points = [(per_row, "one query row per load (steps b, c: MHA, or each query head for itself)"),
              (4 * per_row, "g = 4 rows per load (steps d, e: Hq = 32, Hkv = 8, Lq = 1)"),
              (8 * per_row, "8 rows per load (a block's most: g·Lq = 8)"),
              (16 * per_row, "g·Lq = 16 (4 new tokens) if one block held them (an mma tile); two blocks of 8 "
                             "read the cache twice: 8")]
    for (xi, label), mk in zip(points, "sD^v"):
        ax.plot([xi], [bw * xi], mk, color=BLUE, markersize=8, label=f"{xi:g} FLOP/byte: {label}")
    ax.axvspan(0.5, 20, color=BLUE, alpha=0.06)
    ax.text(3.2, 1200, "decoding", ha="center", fontsize=9, color=BLUE)
    # A prefill for comparison: chapter 05's compulsory bytes at N = 8k, d = 128 (4096 FLOP/byte, notes/05's table).
    ax.plot([4096], [gpu["tensor"] * gpu["mma"]], "*", color="black", markersize=11,
            label="prefill, N = 8k, d = 128, Q, K, V, O once (notes/05's table): 4096 FLOP/byte, on mma.sync")
    ax.annotate("the decoding kernel's CUDA-core ceiling is below this roof:\nits loop issues shuffles, conversions "
                "and exp2 beside\nthe FFMA: notes/08 finds the CUDA cores the bound beyond 6.1 rows\nper block unpaged, 5.5 paged",
                xy=(20, gpu["fp32"]), xytext=(30, 12), fontsize=8, color=GREEN,
                arrowprops=dict(arrowstyle="-|>", color=GREEN))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.3, 1e4)
    ax.set_ylim(0.5, 3000)
    ax.set_xlabel("arithmetic intensity: FLOP per byte of DRAM traffic (K and V of the cache, fp16)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.grid(True, which="both", color=LIGHT, linewidth=0.6)
    ax.legend(loc="lower right", fontsize=7.5, framealpha=0.95)
    ax.set_title(f"The H100's roofline (common/gpus/gpus.h: {bw:g} TB/s of HBM3, the peaks below): decoding "
                 "sits on the bandwidth slope.\nArithmetic, not a measurement; each roof is a peak the kernels "
                 "reach only in part", fontsize=10)
    return fig
