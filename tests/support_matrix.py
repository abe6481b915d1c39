#!/usr/bin/env python3
"""support_matrix.py FLASHSTEPS README: the README's support matrices are what `flashsteps support`
prints now. Each block sits between `<!-- flashsteps support ARGS -->` and `<!-- end -->`; the
command runs with ARGS and must print the block exactly. Exit 1 naming the block that differs (and
how to refresh it), 2 on bad input."""
import re
import subprocess
import sys

if len(sys.argv) != 3:
    print("usage: support_matrix.py FLASHSTEPS README", file=sys.stderr)
    sys.exit(2)
binary, readme = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
blocks = re.findall(r"<!-- flashsteps support ([^>]*?) -->\n(.*?)<!-- end -->", text, re.S)
if not blocks:
    print(f"{readme}: no `<!-- flashsteps support ... -->` block", file=sys.stderr)
    sys.exit(1)
status = 0
for args, block in blocks:
    now = subprocess.run([binary, "support", *args.split()], capture_output=True, text=True, check=True).stdout
    if now != block:
        print(f"{readme}: the block of `flashsteps support {args}` is not what the command prints now; "
              f"paste its output between the markers:\n{now}", file=sys.stderr)
        status = 1
    else:
        print(f"flashsteps support {args}: as in the README")
sys.exit(status)
