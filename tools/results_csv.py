"""results_csv.py: the project's results CSV as the Python tools see it: the header (the one of
kCsvHeader in common/harness/report.cpp, which the `cli` test compares with this file), the kinds
of rows, and the rules for appending to a file (those of report.cpp's check_csv_target)."""
import csv
import datetime
import os
import sys
from pathlib import Path

CSV_HEADER = ("device,driver,cuda,commit,timestamp,chapter,variant,dtype,B,H,Lq,Lk,d,causal,mask,"
              "median_ms,min_ms,tflops,gbps,extra_bytes,max_err,pass,kind,bound,mods")
# measured on a GPU, emulated on the CPU, modelled from the emulator's counters: never mixed.
KINDS = ("measured", "emulated", "modelled")
# The columns that make two rows the same problem.
SHAPE = ("dtype", "B", "H", "Lq", "Lk", "d", "causal", "mask", "mods")


def check_csv(path, header=CSV_HEADER, header_name="the project's CSV header"):
    """Why rows cannot be appended to path, or None: the C++ binaries' rules (report.cpp,
    check_csv_target): a name, no folder, an existing folder, writable, new/empty or ours (its first
    line header: the results CSV's unless a tool that writes another kind of CSV names its own)."""
    if path is None:
        return None
    p = Path(path)
    if not path:
        return "--csv needs a file name"
    if p.is_dir():
        return f"--csv {path} is a folder: name a file in it"
    if not p.parent.is_dir():
        return f"--csv {path}: the folder {p.parent} does not exist (create it first)"
    if p.exists():
        try:
            with p.open("a"):
                pass
            with p.open() as f:
                first = f.readline().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as e:
            return f"--csv {path} cannot be used: {getattr(e, 'strerror', None) or e}"
        if p.stat().st_size > 0 and first != header:
            return f"--csv {path} does not start with {header_name}; not appending to it"
    elif not os.access(p.parent, os.W_OK):
        return f"--csv {path} cannot be created: permission denied"
    return None


def measured_row(fixed, chapter, variant, dtype, B, H, Lq, Lk, d, causal, median_ms, min_ms, tflops, gbps, extra,
                 max_err, ok, causal_name=None, mods="none"):
    """One measured row (no attn_mask), stamped now; fixed is the quoted device, driver, CUDA and commit
    columns; causal top-left or none unless causal_name names the alignment; mods: chapter 10's words."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (f"{fixed},{stamp},{chapter},{variant},{dtype},{B},{H},{Lq},{Lk},{d},"
            f"{causal_name or ('top-left' if causal else 'none')},none,{median_ms:.6g},{min_ms:.6g},{tflops:.6g},"
            f"{gbps:.6g},{extra},{max_err:.6g},{int(ok)},measured,,\"{mods}\"\n")


def open_csv(path):
    """Appends to path (checked by check_csv), writing the header only to a new or empty file."""
    if path is None:
        print(CSV_HEADER, flush=True)
        return sys.stdout
    p = Path(path)
    fresh = not p.exists() or p.stat().st_size == 0
    f = p.open("a")
    if fresh:
        f.write(CSV_HEADER + "\n")
    return f


class NotResultsCsv(Exception):
    """A path that is there but is not one of this project's results CSVs; the message is one
    sentence that names it, for the tool to print before it exits with code 2."""


def rows_of_kind(path, kind):
    """The rows of one kind (KINDS) of a results CSV, as dicts; none when the file does not exist
    or is empty. NotResultsCsv when it is not a file, cannot be read, or its first line is not
    CSV_HEADER (another program's CSV, or another version of the columns)."""
    p = Path(path)
    if not p.exists():
        return []
    if not p.is_file():
        raise NotResultsCsv(f"{path} is not a file: a results CSV was expected there")
    try:
        with p.open(newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                return []  # empty: a file the C++ binaries would still start with the header
            if reader.fieldnames != CSV_HEADER.split(","):
                raise NotResultsCsv(f"{path}: its header is not one of this project's results CSVs "
                                    f"(the first line must be {CSV_HEADER.split(',')[0]},...,"
                                    f"{CSV_HEADER.split(',')[-1]} as common/harness/report.cpp writes it)")
            return [r for r in reader if r["kind"] == kind]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise NotResultsCsv(f"{path} cannot be read as a CSV: {getattr(e, 'strerror', None) or e}") from None
