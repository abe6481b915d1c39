"""sass_fixture.py: what the tests of sass_issue.py's build rules (test_sass_live.py, test_sass_archs.py)
share: a copy of the repository's tools, common/ and chapters to edit, and a SASS row's size."""
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def copy_tree(dest):
    """tools/, common/ and every chapter's folder copied under dest (a Path), without __pycache__."""
    for d in ["tools", "common"] + sorted(p.name for p in ROOT.glob("[0-9][0-9]_*") if p.is_dir()):
        shutil.copytree(ROOT / d, dest / d, ignore=shutil.ignore_patterns("__pycache__"))


def instructions(line):
    """The instructions of a SASS data row's parts, summed (its text: sass_issue.py's row_text)."""
    return sum(int(n) for n in re.findall(r"\{(\d+), \{", line))
