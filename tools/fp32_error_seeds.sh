#!/usr/bin/env bash
# fp32_error_seeds.sh: how far the fp32 steps land from the fp64 reference, seed after seed.
# Chapter 01's naive step exponentiates scale * s - m; chapters 02 to 04's steps fold the scale into
# exp2's argument (t = s * scale * log2(e), then exp2(t - m)), which rounds t at its own size, not at
# its distance from the row's maximum. This runs them at one fp32 problem (B1 H2 Lq50 Lk70 d64, scale
# 2: scores up to ~80 in log2 units) for seeds 1..N on the CPU emulator, prints each step's largest
# error and its ratio to the naive step's, then the ratios' mean, least and most.
#
#   tools/fp32_error_seeds.sh [N]      # N seeds (default 24); run from the repository root after a build
set -euo pipefail
n=${1:-24}
[[ $n =~ ^[1-9][0-9]{0,3}$ ]] || { echo "usage: tools/fp32_error_seeds.sh [seeds, 1 to 9999]" >&2; exit 2; }
bin=build/bin/flashsteps
[ -x "$bin" ] || { echo "$bin not found: build first (README, 'Building by hand')" >&2; exit 2; }
steps=(naive exp2 online_softmax register_tiles o_in_registers)
args=()
for s in "${steps[@]}"; do args+=(-v "$s"); done

echo "# tools/fp32_error_seeds.sh $n at commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown):"
echo "# B=1 H=2 Lq=50 Lk=70 d=64 fp32 scale=2, largest |error| against the fp64 reference (CPU emulator)"
printf '%-5s' seed
printf ' %15s' "${steps[@]}"
echo
rows=$(for ((seed = 1; seed <= n; ++seed)); do
  "$bin" run -b 1 -H 2 --lq 50 --lk 70 -d 64 --dtype fp32 --scale 2 --reps 0 --seed "$seed" "${args[@]}" |
    awk -v seed="$seed" -v list="${steps[*]}" '
      BEGIN { n = split(list, want, " ") }
      NF >= 3 && $3 ~ /^(pass|FAIL|fail)/ { err[$1] = $2 }
      END {
        printf "%-5d", seed
        for (i = 1; i <= n; ++i) {
          if (!(want[i] in err)) { print "no row for " want[i] > "/dev/stderr"; exit 1 }
          printf " %15s", err[want[i]]
        }
        printf "\n"
      }' || exit 1
done)
echo "$rows"
echo "$rows" | awk -v list="${steps[*]}" '
  BEGIN { n = split(list, want, " ") }
  {
    for (i = 2; i <= n; ++i) {
      r = $(i + 1) / $2
      sum[i] += r
      rows[i]++
      if (!(i in lo) || r < lo[i]) lo[i] = r
      if (!(i in hi) || r > hi[i]) hi[i] = r
    }
  }
  END {
    print "\nratio to naive'"'"'s error over the seeds: mean (least to most)"
    for (i = 2; i <= n; ++i) printf "%-15s %.2f (%.2f to %.2f)\n", want[i], sum[i] / rows[i], lo[i], hi[i]
  }'
