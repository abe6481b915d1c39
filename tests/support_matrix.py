#!/usr/bin/env python3
"""support_matrix.py FLASHSTEPS README: the README's support matrices are what `flashsteps support`
prints now. Each block sits between `<!-- flashsteps support ARGS -->` and `<!-- end -->`; the
command runs with ARGS and must print the block exactly. Exit 1 naming the block that differs (and
how to refresh it), 2 on bad input."""
import os
import re
import subprocess
import sys


def refuse(why):
    print(f"support_matrix.py: {why}", file=sys.stderr)
    sys.exit(2)


if sys.argv[1:] in (["-h"], ["--help"]):
    print(__doc__)
    sys.exit(0)
if len(sys.argv) != 3:
    print("usage: support_matrix.py FLASHSTEPS README", file=sys.stderr)
    sys.exit(2)
binary, readme = sys.argv[1], sys.argv[2]
# Both paths before anything runs: FLASHSTEPS an executable file, README a UTF-8 text file.
if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
    what = "a folder" if os.path.isdir(binary) else "not an executable file" if os.path.exists(binary) else "missing"
    refuse(f"FLASHSTEPS {binary} is {what}: "
           "give the flashsteps binary first, then the README")
if not os.path.isfile(readme):
    refuse(f"README {readme} is {'a folder, not a file' if os.path.isdir(readme) else 'missing'}: "
           "give the flashsteps binary first, then the README")
try:
    with open(readme, encoding="utf-8") as f:
        text = f.read()
except UnicodeDecodeError:
    refuse(f"README {readme} is not UTF-8 text: give the flashsteps binary first, then the README")
except OSError as e:
    refuse(f"README {readme} cannot be read: {e.strerror}")
blocks = re.findall(r"<!-- flashsteps support ([^>]*?) -->\n(.*?)<!-- end -->", text, re.S)
if not blocks:
    print(f"{readme}: no `<!-- flashsteps support ... -->` block", file=sys.stderr)
    sys.exit(1)
status = 0
for args, block in blocks:
    try:
        r = subprocess.run([binary, "support", *args.split()], capture_output=True, text=True)
    except OSError as e:
        refuse(f"FLASHSTEPS {binary} cannot be run: {e.strerror}")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        refuse(f"`{binary} support {args}` failed with exit code {r.returncode} ({last}): is {binary} the flashsteps binary?")
    now = r.stdout
    if now != block:
        print(f"{readme}: the block of `flashsteps support {args}` is not what the command prints now; "
              f"paste its output between the markers:\n{now}", file=sys.stderr)
        status = 1
    else:
        print(f"flashsteps support {args}: as in the README")
sys.exit(status)
