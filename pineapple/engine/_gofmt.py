"""Value formatting that matches the Go reference engine byte for byte.

The shared fixtures pin behaviour that comes from Go's ``fmt`` and
``encoding/json``: ``%v`` of a number is ``%g`` with the shortest digits
(``1e+06``), JSON numbers are ``float64`` (so ``1`` and ``1.0`` are one
value), JSON output uses plain decimals below 1e21, sorts map keys and
escapes ``<``, ``>`` and ``&``. Python ``int`` values are treated as the
``float64`` they would be after a JSON round trip in Go.
"""

from __future__ import annotations

import math
import re
from types import UnionType
from typing import Any

import orjson

__all__ = ["format_f", "format_g", "format_value", "go_json", "go_type_name", "json_float"]


def _digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits of ``abs(f)`` (finite, non-zero) and the point position."""
    text = repr(abs(f))
    mant, _, exp_text = text.partition("e")
    whole, _, frac = mant.partition(".")
    if frac == "0":
        frac = ""
    raw = whole + frac
    stripped = raw.lstrip("0")
    point = len(whole) + (int(exp_text) if exp_text else 0) - (len(raw) - len(stripped))
    return stripped.rstrip("0") or "0", point


def format_g(f: float) -> str:
    """Go's ``%g`` / ``%v`` of a float64 (``strconv.FormatFloat(f, 'g', -1, 64)``)."""
    if f != f:
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    if f.is_integer() and -1e6 < f < 1e6:
        return str(int(f))
    digits, point = _digits(f)
    sign = "-" if f < 0 else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        esign = "-" if exp < 0 else "+"
        return f"{sign}{mant}e{esign}{abs(exp):02d}"
    return sign + _fixed(digits, point)


def _fixed(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * (-point) + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def format_f(f: float) -> str:
    """Go's ``strconv.FormatFloat(f, 'f', -1, 64)`` of a finite float64."""
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    digits, point = _digits(f)
    return ("-" if f < 0 else "") + _fixed(digits, point)


def json_float(f: float) -> str:
    """Go ``encoding/json`` text of a float64 (``null`` for NaN and infinities).

    Go's rule: ``strconv.FormatFloat(f, 'f', -1, 64)`` when ``1e-6 <= |f| < 1e21``
    (and for zero), else the ``'e'`` format with a two-digit negative exponent
    shortened (``1e-07`` -> ``1e-7``; ``1e+21`` stays). Go's ``json.Marshal``
    refuses NaN and infinities; we write ``null`` (as orjson does) rather than raise.
    """
    if f != f or math.isinf(f):
        return "null"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    digits, point = _digits(f)
    sign = "-" if f < 0 else ""
    a = abs(f)
    if a < 1e-6 or a >= 1e21:
        exp = point - 1
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        esign = "-" if exp < 0 else "+"
        return f"{sign}{mant}e{esign}{abs(exp):02d}".replace("e-0", "e-")
    return sign + _fixed(digits, point)


def format_value(v: Any) -> str:
    """Go's ``fmt.Sprint(v)`` for a JSON-like value."""
    if v is None:
        return "<nil>"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        return format_g(v)
    if isinstance(v, int):
        return str(v) if -1000000 < v < 1000000 else format_g(float(v))
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{format_value(v[k])}" for k in sorted(v)) + "]"
    return str(v)


# Go's type of each JSON value (as ``encoding/json`` decodes into ``any``), by
# the Python type the same JSON decodes to here; bool before int (a subclass).
_GO_TYPES: tuple[tuple[type | UnionType, str], ...] = (
    (bool, "bool"),
    (int | float, "float64"),
    (str, "string"),
    (list | tuple, "[]interface {}"),
    (dict, "map[string]interface {}"),
)


def go_type_name(v: Any) -> str:
    """Go's ``%T`` of the value a JSON decode would have produced."""
    if v is None:
        return "<nil>"
    for python_type, go_type in _GO_TYPES:  # bounded: the table's rows
        if isinstance(v, python_type):
            return go_type
    return type(v).__name__


# Where orjson's number text differs from Go's: ``1.0`` and ``-0.0`` (Go: ``1``,
# ``-0``), ``1e-6`` .. ``9.9e-6`` and ``1e+16`` .. ``9.9e+20`` (Go: plain decimals).
# A match inside a string only costs the slow path, never a wrong byte.
_SUSPECT = re.compile(rb"\.0[,}\]]|\de-6|\.0$|\de\+(?:1[6-9]|20)(?!\d)")
_DOT, _PLUS, _MINUS = b".+-"
"""The bytes (as ints) every ``_SUSPECT`` match holds one of: ``.0``, ``e-6``, ``e+``."""
_LT, _GT, _AMP, _E2 = b"<>&\xe2"
"""The first bytes (as ints) of what Go escapes: ``<``, ``>``, ``&``, U+2028 and U+2029."""
# Bytes are looked for as ints: ``46 in out`` is a memchr behind one C call, where
# ``out.find(b".")`` parses its arguments first and ``b"." in out`` first raises (and
# clears) a TypeError: ~100 instructions against ~700 and ~1,700.

_INT64_MIN = -(2**63)
_UINT64_END = 2**64


def _go_float(v: float) -> Any:
    """``v`` as orjson must write it to give Go's text: an int, a fragment, or ``v``."""
    if v.is_integer() and abs(v) < 1e16:
        if v == 0 and math.copysign(1.0, v) < 0:
            return orjson.Fragment(b"-0")
        return int(v)
    a = abs(v)
    if 1e-6 <= a < 1e-5 or 1e16 <= a < 1e21:
        return orjson.Fragment(json_float(v).encode())
    return v


def _go_numbers(v: Any) -> Any:
    if type(v) is float:
        return _go_float(v)
    if type(v) is int:
        # Beyond 64 bits orjson refuses an int; Go holds every JSON number as a float64.
        return (
            v if _INT64_MIN <= v < _UINT64_END else orjson.Fragment(json_float(float(v)).encode())
        )
    if type(v) is dict:
        return {k: _go_numbers(x) for k, x in v.items()}
    if type(v) is list or type(v) is tuple:
        return [_go_numbers(x) for x in v]
    return v


def go_json(v: Any) -> bytes:
    """JSON bytes as Go's ``json.Marshal`` writes them (no trailing newline).

    Fast path: orjson with sorted keys; only when its output may hold a
    number that Go writes differently (``1.0``, ``1e-6``, ``1e+20``, an int
    beyond 64 bits) are the numbers rewritten first. Never raises for a
    number: NaN and infinities are written ``null``.
    """
    try:
        out = orjson.dumps(v, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an int beyond 64 bits, the only number orjson refuses
        out = _rewritten(v)
    else:
        if _DOT in out or _PLUS in out or _MINUS in out:
            if _suspect(out):
                out = _rewritten(v)
        elif not _escapes(out):
            return out  # no number to rewrite, nothing to escape: the usual short answer
    return _escaped(out) if _escapes(out) else out


def _rewritten(v: Any) -> bytes:
    """orjson's output for ``v`` with every number rewritten to give Go's text."""
    return orjson.dumps(_go_numbers(v), option=orjson.OPT_SORT_KEYS)


def _escapes(out: bytes) -> bool:
    """Whether ``out`` may hold a character Go escapes."""
    return _LT in out or _GT in out or _AMP in out or _E2 in out


def _escaped(out: bytes) -> bytes:
    """``out`` (where :func:`_escapes` found a candidate) with what Go escapes in JSON
    strings escaped as Go does."""
    out = out.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if _E2 in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


def _suspect(out: bytes) -> bool:
    """``_SUSPECT.search(out)`` for orjson output (which never ends in a newline, so
    ``$`` is its end), by substring searches: the pattern runs only when one of its
    exponent forms may be there."""
    find = out.find
    if _DOT in out and (
        find(b".0,") >= 0 or find(b".0}") >= 0 or find(b".0]") >= 0 or out.endswith(b".0")
    ):
        return True
    exponent = (_MINUS in out and find(b"e-6") >= 0) or (
        _PLUS in out and (find(b"e+1") >= 0 or find(b"e+2") >= 0)
    )
    return exponent and _SUSPECT.search(out) is not None
