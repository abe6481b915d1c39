"""Rules read from the code that figures of more than one module use: C++ expressions as Python,
simt/fragments.h's fragment layout, 09_hopper/hopper.h's constants."""
import re

from .style import ROOT, check


def c_expr_to_python(expr):
    """An integer C++ expression of +, -, *, /, %, ^, &, <<, >>, parentheses, names and calls, as Python
    (whose precedence of these operators is C's)."""
    check(re.fullmatch(r"[\w\s+\-*/%^&<>(),]+", expr) is not None, f"unexpected characters in {expr!r}")
    return expr.replace("/", "//")


def fragment_layout():
    """The six functions of simt/fragments.h as Python functions of (lane, i)."""
    src = (ROOT / "common/simt/include/simt/fragments.h").read_text()
    funcs = {}
    for name in ("a_row", "a_col", "b_k", "b_n", "c_row", "c_col"):
        m = re.search(name + r"\(int lane, int (?:/\*i\*/|i)\)\s*\{\s*return (.+?);\s*\}", src)
        check(m is not None, f"simt/fragments.h: cannot read {name}(); tools/figures.py must follow the header")
        funcs[name] = eval("lambda lane, i: " + c_expr_to_python(m.group(1)))  # noqa: S307 (our own header)
    return funcs



def hopper_constants():
    """The constants of 09_hopper/hopper.h that the figures use, each evaluated from its definition."""
    src = (ROOT / "09_hopper/hopper.h").read_text()
    k = {}
    for name in ("kBr", "kBc", "kThreads", "kStages", "kConsumers", "kWsThreads", "kProducerRegs", "kConsumerRegs"):
        m = re.search(r"\b" + name + r" = ([^,;]+)[,;]", src)
        check(m is not None, f"09_hopper/hopper.h: cannot read {name}; tools/figures.py must follow it")
        k[name] = eval(c_expr_to_python(m.group(1)), {}, dict(k))  # noqa: S307 (our own header)
    m = re.search(r"long ring_smem_bytes\(int d\) \{ return ([^;]+); \}", src)
    check(m is not None, "09_hopper/hopper.h: cannot read ring_smem_bytes()")
    ring = c_expr_to_python(re.sub(r"(\d)L\b", r"\1", m.group(1)))
    k["ring_smem_bytes"] = lambda d: eval(ring, {}, dict(k, d=d))  # noqa: S307
    return k
