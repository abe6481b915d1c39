#!/bin/sh
# ptxas_log.sh: the compiler launcher of the kernels whose resources the tests check
# (flashsteps_ptxas_report in Kernels.cmake). Runs the compile command and keeps ptxas's -v report
# beside the object file, as <object>.ptxas, out of the build log; everything else passes through.
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
[ -n "$out" ] || exec "$@"
"$@" 2> "$out.ptxas.tmp"
rc=$?
grep -v -e '^ptxas info' -e '^ *[0-9]* bytes stack frame' "$out.ptxas.tmp" >&2
mv "$out.ptxas.tmp" "$out.ptxas"
exit $rc
