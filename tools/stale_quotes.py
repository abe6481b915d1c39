#!/usr/bin/env python3
"""stale_quotes.py: the lines of the notes that quote a number a results file no longer holds.

    python3 tools/stale_quotes.py [--since REV] [--check] [RESULTS_FILE ...]

A change to the model moves the numbers in the files it wrote (tools/record_runs.sh --again rewrites
them), and every note that quotes one of the old numbers is then wrong. For each results file (by
default every file under results/ whose working-tree text differs from REV's, HEAD unless named),
the numbers of REV's version that the new one no longer holds are looked for in every tracked
Markdown file that names the results file (its name, anywhere in the document): each line quoting one
is printed as `path:line: number (results file)`. Images and README.md files (prose) are skipped (a
file named that is one, or lies outside results/, is refused), and so are the blocks other tools
generate in the notes (`<!-- counters-table:begin ... -->` to its end). Numbers are decimals of at
least four digits (24399.54, 0.579), as the notes quote them verbatim, and a CSV's values also
rounded to 2 and 1 decimals (counters.csv's 34.7912 quoted as 34.79); another rounded or converted
quote (24.4 ms for 24399.54 us) is not found. Nothing is changed. Exit 0 (1 with --check when a line
was found); exit 2 on bad use: not a git tree, an unknown REV, a file REV does not have, a file named
that is not a results file.
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\d)")
GENERATED = re.compile(r"\s*<!-- [\w-]+:(begin|end)\b")  # a block another tool writes from its own source


def numbers(text):
    return {n for n in NUMBER.findall(text) if sum(ch.isdigit() for ch in n) >= 4}


def held_numbers(path, text):
    """The numbers a results file holds as the notes would quote them: a CSV's full-precision values
    (22.67923497) also rounded to 2 and 1 decimals (22.68, 22.7), the notes' usual forms, where
    those still have four digits."""
    if not path.endswith(".csv"):
        return numbers(text)
    return numbers(text) | numbers(" ".join(f"{float(n):.{places}f}" for n in NUMBER.findall(text) for places in (2, 1)))


def git(*args):
    r = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True)
    r.stdout = r.stdout.decode(errors="replace")
    return r


def not_data(name, text):
    """Why a file under results/ holds no numbers to quote ("prose": a README, which quotes the data
    rather than holds it; "an image (binary)"), or None."""
    return "prose" if name == "README.md" else "an image (binary)" if "\0" in text else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="results files (default: those under results/ that differ from REV)")
    ap.add_argument("--since", default="HEAD", metavar="REV", help="the revision whose numbers were quoted (default HEAD)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a stale quote was found")
    a = ap.parse_args()

    def refuse(why):
        print(f"stale_quotes.py: {why}", file=sys.stderr)
        return 2

    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        return refuse(f"{ROOT} is not a git working tree")
    if git("rev-parse", "--verify", "--quiet", a.since + "^{commit}").returncode != 0:
        return refuse(f"no revision {a.since}")
    files = []
    for f in a.files:  # results files, as the default finds them: under results/, not prose, not images
        p = Path(f).resolve()
        if not p.is_file():
            return refuse(f"no file {f}")
        try:
            files.append(p.relative_to(ROOT).as_posix())
        except ValueError:
            return refuse(f"{f} is outside the repository {ROOT}")
        if not files[-1].startswith("results/"):
            return refuse(f"{f} is not a results file: name files under results/ (the notes quote those)")
        if why := not_data(p.name, p.read_text(errors="replace")):
            return refuse(f"{f} is {why}, not a results file whose numbers the notes quote")
    if not a.files:  # changed, not added or deleted: a number can only be stale where it was
        files = [f for f in git("diff", "-z", "--name-only", "--diff-filter=M", a.since, "--", "results/").stdout.split("\0") if f]
    old_text = {}
    for f in files:
        r = git("show", f"{a.since}:{f}")
        if r.returncode != 0:
            return refuse(f"{a.since} has no {f}")
        if not_data(Path(f).name, r.stdout):
            continue
        old_text[f] = r.stdout
    documents = {d: (ROOT / d).read_text(errors="replace")
                 for d in git("ls-files", "-z", "*.md").stdout.split("\0") if d}
    found = 0
    for f in old_text:
        gone = held_numbers(f, old_text[f]) - held_numbers(f, (ROOT / f).read_text(errors="replace"))
        if not gone:
            continue
        name = Path(f).name
        for doc, text in documents.items():
            if name not in text:
                continue
            generated = False  # inside <!-- name:begin --> ... <!-- name:end -->
            for i, line in enumerate(text.splitlines(), 1):
                if GENERATED.match(line):
                    generated = ":begin" in line
                    continue
                if generated:
                    continue
                for n in sorted(numbers(line) & gone):
                    print(f"{doc}:{i}: {n} ({f})")
                    found += 1
    print(f"stale_quotes.py: {found} quote(s) of numbers that {len(old_text)} results file(s) no longer hold", file=sys.stderr)
    return 1 if a.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
