#!/usr/bin/env python3
"""check_notes.py: what a teacher relies on in notes/, checked (the CTest `notes`; any python3).

- every chapter note's "## Exercises" list is numbered 1..n, each exercise tagged **[paper]**,
  **[cpu]** or **[gpu]**, and at least one of them is a "Predict, then measure" exercise;
- its answer file, notes/answers/<same name>, has a "### k. [tag] ..." heading for every exercise
  k, with the exercise's own first tag, and none for an exercise that does not exist;
- every exercise notes/course.md hands out ("05: 3 [paper]") exists with that tag;
- every relative link in the README, notes/ and results/README.md leads to a file that exists;
- in those pages, a repository path in backticks (`common/...`, `03_tiled_softmax/...`, `results/...`:
  a first folder that is one of the repository's own, not a build folder) names a file or folder that
  exists, unless NOT_COMMITTED says why not (a file a note asks the reader to create, a tool's output);
- a sentence that names a committed CSV with a `commit` column (results/**/*.csv, by path or by its
  file name; "the CSV" is the last one the page named) and cites a commit ("commit 7063334692d6",
  "at 7063334692d6") cites one its rows carry: a CSV re-profiled at a new commit makes every
  citation of the old one fail here until the numbers quoted are checked against the new rows and
  the citation moved;
- a diagnostic a page quotes from the emulator's buggy kernels (`common/simt/tests/buggy_kernels.cu:N`,
  in a code block too) names a line that `common/simt/tests/test_diagnostics.cpp`, the test that runs
  them and checks their messages, expects: a kernel moved by an edit there makes the note's quote fail
  here until it is taken again.

Usage: tools/check_notes.py [--root DIR]. Prints one line per problem; exit 1 if any, else 0;
exit 2, before any check, when DIR is not a folder.
"""
import argparse
import csv
import re
import sys
from pathlib import Path

EXERCISE = re.compile(r"^(\d+)\. \*\*\[(paper|cpu|gpu)\]")
ANY_ITEM = re.compile(r"^(\d+)\. ")
ANSWER = re.compile(r"^### (\d+)\. \[(paper|cpu|gpu)\]")
CHAPTER = re.compile(r"\b(\d\d): ")
ONE = re.compile(r"\b(\d+) \[(paper|cpu|gpu)\]")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"^(?:\.\./)*((?:[A-Za-z0-9_.+-]+/)+[A-Za-z0-9_.+-]*)$")
CSV_NAME = re.compile(r"((?:[\w.+-]+/)*[\w.+-]+\.csv)\b")
# "commit <hash>" always; "at <hash>" only with a letter in it, so that "at 1048576" is no commit.
CITED = re.compile(r"\bcommit\s+([0-9a-f]{7,40})\b|\bat\s+((?=[0-9a-f]*[a-f])[0-9a-f]{7,40})\b")
THE_CSV = re.compile(r"\bthe CSV\b", re.I)
DIAGNOSTIC = re.compile(r"buggy_kernels\.cu:(\d+)")
# Sentences: split at a paragraph break, before a table row, and after . ! or ? (also after .* .) .`).
SENTENCE = re.compile(r"\n[ \t]*\n|\n(?=\|)|(?<=[.!?])\s+|(?<=[.!?][*_)`])\s+")
# Paths the notes name that are not committed, and why: the backticked-path check skips them.
NOT_COMMITTED = {
    "01_naive_attention/softmax_two_pass.cu": "the file course.md's worked example asks the reader to create",
    "results/gpu-session": "tools/gpu_session.sh's default $OUT, moved to results/<device-slug>/ before committing",
}


def exercises(note):
    """{number: tag} of the note's "## Exercises" section, and the problems found in it."""
    found, problems, inside = {}, [], False
    for line in note.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line.strip() == "## Exercises"
            continue
        if not inside or not ANY_ITEM.match(line):
            continue
        k = int(ANY_ITEM.match(line).group(1))
        m = EXERCISE.match(line)
        if not m:
            problems.append(f"{note.name}: exercise {k} has no [paper], [cpu] or [gpu] tag")
        if k in found:
            problems.append(f"{note.name}: two exercises numbered {k}")
        found[k] = m.group(2) if m else None
    if not found:
        problems.append(f"{note.name}: no '## Exercises' section with numbered exercises")
    elif sorted(found) != list(range(1, len(found) + 1)):
        problems.append(f"{note.name}: exercises numbered {sorted(found)}, not 1..{len(found)}")
    return found, problems


def csv_commits(root):
    """{path relative to root: the commits its rows carry} of every CSV under results/ with a
    `commit` column."""
    found = {}
    for f in sorted((root / "results").rglob("*.csv")):
        with f.open(newline="", encoding="utf-8") as fh:
            rows = csv.DictReader(fh)
            if rows.fieldnames and "commit" in rows.fieldnames:
                found[f.relative_to(root).as_posix()] = {r["commit"] for r in rows if r.get("commit")}
    return found


def csv_citations(text, commits):
    """(csv paths, cited commit, the sentence) for every commit a sentence of `text` cites beside a
    CSV of `commits` ({path: commits}) that has a commit column."""
    def resolve(name):
        name = re.sub(r"^(?:\.\.?/)+", "", name)
        if "/" in name:
            return [k for k in commits if k == name or k.endswith("/" + name)]
        return [k for k in commits if k.rsplit("/", 1)[-1] == name]

    last, out = [], []
    for sentence in SENTENCE.split(text):
        names = CSV_NAME.findall(sentence)
        paths = [k for n in names for k in resolve(n)]
        if names:
            last = paths
        elif THE_CSV.search(sentence):
            paths = last
        for a, b in CITED.findall(sentence) if paths else []:
            out.append((paths, a or b, " ".join(sentence.split())))
    return out


def carried(cited, commits):
    """Whether the commit `cited` (7 to 40 hex digits) is one of `commits` (any length)."""
    return any(c.startswith(cited) or cited.startswith(c) for c in commits)


def check(root):
    problems = []
    notes = sorted((root / "notes").glob("[0-9][0-9]_*.md"))
    if not notes:
        return [f"no chapter notes under {root / 'notes'}"]
    tags = {}
    for note in notes:
        found, p = exercises(note)
        problems += p
        tags[note.name[:2]] = found
        text = note.read_text(encoding="utf-8")
        if note.name[:2] != "00" and "Predict, then measure" not in text.split("## Exercises")[-1]:
            problems.append(f"{note.name}: no 'Predict, then measure' exercise")
        answers = root / "notes" / "answers" / note.name
        if not answers.is_file():
            problems.append(f"{note.name}: no answer file notes/answers/{note.name}")
            continue
        answered = {}
        for line in answers.read_text(encoding="utf-8").splitlines():
            m = ANSWER.match(line)
            if m:
                answered[int(m.group(1))] = m.group(2)
            elif line.startswith("### ") and re.match(r"### \d+\.", line):
                problems.append(f"answers/{note.name}: heading without a tag: {line}")
        for k, tag in found.items():
            if k not in answered:
                problems.append(f"{note.name}: exercise {k} has no answer in answers/{note.name}")
            elif tag and answered[k] != tag:
                problems.append(f"answers/{note.name}: exercise {k} is [{tag}] in the note, [{answered[k]}] here")
        for k in sorted(set(answered) - set(found)):
            problems.append(f"answers/{note.name}: answers exercise {k}, which the note does not have")

    course = root / "notes" / "course.md"
    if course.is_file():
        handed = 0
        for line in course.read_text(encoding="utf-8").splitlines():
            if not line.startswith("| ") or not re.match(r"\| \d+\. ", line):
                continue  # the labs table's rows only
            # "05: 3 [paper] (...), 1 [paper]; with a GPU: 05: 6 [gpu]": each "NN:" names the
            # chapter of the "k [tag]" items that follow it, up to the next "NN:" or the cell's end.
            for cell in line.split("|"):
                parts = CHAPTER.split(cell)  # [before, NN, items, NN, items, ...]
                for chapter, items in zip(parts[1::2], parts[2::2]):
                    for k, tag in ONE.findall(items):
                        handed += 1
                        have = tags.get(chapter, {})
                        if int(k) not in have:
                            problems.append(f"course.md: {chapter}: {k} [{tag}] names an exercise notes/{chapter} does not have")
                        elif have[int(k)] != tag:
                            problems.append(f"course.md: {chapter}: {k} is [{have[int(k)]}] in the note, [{tag}] in the course")
        if handed == 0:
            problems.append("course.md: its labs table hands out no exercise ('NN: k [tag]')")
    else:
        problems.append("notes/course.md is missing")

    pages = [root / "README.md", root / "results" / "README.md"] + sorted((root / "notes").rglob("*.md"))
    tops = {d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "build"))}
    commits = csv_commits(root)
    diagnostics = root / "common" / "simt" / "tests" / "test_diagnostics.cpp"
    expected = set(DIAGNOSTIC.findall(diagnostics.read_text(encoding="utf-8"))) if diagnostics.is_file() else None
    for page in pages:
        if not page.is_file():
            continue
        raw = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", raw, flags=re.S)
        where = page.relative_to(root)
        stale = set(DIAGNOSTIC.findall(raw)) - expected if expected is not None else set()
        for line in sorted(stale, key=int):
            problems.append(f"{where}: quotes a diagnostic at common/simt/tests/buggy_kernels.cu:{line}, a line "
                            f"test_diagnostics.cpp does not expect: run its case again and quote what it prints")
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not (page.parent / path).exists():
                problems.append(f"{where}: link to {target}, which does not exist")
        for span in CODE_SPAN.findall(text):
            for word in span.split():
                word = re.sub(r"(?::\d+(?:-\d+)?)?[,;:.)]*$", "", word.split("#", 1)[0])
                m = REPO_PATH.match(word)
                path = m.group(1) if m else ""
                if path.split("/")[0] in tops and path.rstrip("/") not in NOT_COMMITTED and not (root / path).exists():
                    problems.append(f"{where}: `{span}` names {path}, which does not exist")
        for paths, cited, sentence in csv_citations(text, commits):
            have = set().union(*(commits[p] for p in paths))
            if not carried(cited, have):
                problems.append(f"{where}: cites {', '.join(paths)} at commit {cited}, but its rows carry "
                                f"{', '.join(sorted(have))}: check the numbers quoted against those rows and "
                                f"cite that commit (\"{sentence[:100]}...\")")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = ap.parse_args()
    if not args.root.is_dir():
        print(f"check_notes: --root {args.root} is not a folder: give the repository's top folder", file=sys.stderr)
        sys.exit(2)
    problems = check(args.root)
    for p in problems:
        print(p)
    print(f"check_notes: {len(problems)} problem(s)" if problems else "check_notes: notes, answers, course and links agree")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
