"""The salted FNV-1a ranking shared by ``reorder_shuffle_by_salt`` and ``reorder_topn_boost``.

An item's rank is the 64-bit FNV-1a hash of ``prefix + text`` (``text``: the
item's value as Go prints it) as a fraction of 2**64; ties go to the value's
number (a text of decimal digits, else 0), then to the item's index.

Compiled by mypyc (``pineapple/_native_modules.txt``): the hash runs on two
native 32-bit halves held in ``i64`` (no sum or product reaches 2**42, so
nothing wraps and the pure-Python run computes the same numbers), the
prefix is hashed once a request, and a value's number is read only where two
ranks tie. ``salted_hash`` is the plain 64-bit hash, for tests.
"""

from __future__ import annotations

import re
from typing import Any, Final

from mypy_extensions import i64

from ..engine._gofmt import format_value, go_json
from ..engine._pieces import PIECE, spans, stable_order
from ._order_kernels import SALTED_ORDER

__all__ = ["boosted_order", "salt_text", "salted_hash", "salted_rank"]

_OFFSET_HI: Final = 0xCBF29CE4
_OFFSET_LO: Final = 0x84222325
"""The FNV-1a 64-bit offset basis 0xCBF29CE484222325, as its two 32-bit halves."""
_PRIME_LOW: Final = 0x1B3
"""The FNV-1a 64-bit prime is ``2**40 + 0x1B3``: a product is the shift plus this multiple."""
_LOW32: Final = 0xFFFFFFFF
_TWO32: Final = 4294967296.0
_TWO64: Final = 18446744073709551616.0
_MAX_UINT = 0xFFFFFFFFFFFFFFFF
_DIGITS_BELOW: Final = 1000000
"""An int of smaller magnitude is its decimal digits as Go prints it (``format_value``)."""
_UINT = re.compile(r"^[0-9]+$")


def salt_text(value: Any) -> str:
    """A value as text for hashing: Go ``%g`` for numbers, "" for null, JSON for composites."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    # Two isinstance tests: compiled, ``int | float`` would build a union on every call.
    if isinstance(value, int) or isinstance(value, float):  # noqa: SIM101
        return format_value(value)  # true, false, or Go %g (an int's digits below 1e6)
    return go_json(value).decode()


def _fnv1a(hi: i64, lo: i64, data: bytes) -> tuple[i64, i64]:
    """The FNV-1a 64-bit state ``hi * 2**32 + lo`` after ``data`` (bounded: ``len(data)``).

    ``h * (2**40 + 0x1B3) mod 2**64`` on halves: ``lo * 0x1B3`` is below
    2**41; its carry, ``hi * 0x1B3`` and ``lo << 8`` (the low half's share of
    ``h << 40``) make the new high half, below 2**42 before the mask.
    """
    k: i64 = 0
    for k in range(len(data)):  # bounded: len(data) bytes
        lo ^= data[k]
        low = lo * _PRIME_LOW
        hi = (hi * _PRIME_LOW + (lo << 8) + (low >> 32)) & _LOW32
        lo = low & _LOW32
    return hi, lo


def _fnv1a_int(hi: i64, lo: i64, v: i64) -> tuple[i64, i64]:
    """The state after the decimal text of ``v`` (``str(v)``: a ``-``, then its digits from
    the most significant), read off the number itself, no text made. Bounded: the
    digits of ``v``, whose magnitude is below 10**6 here (:data:`_DIGITS_BELOW`)."""
    if v < 0:
        hi, lo = _fnv1a(hi, lo, b"-")
        v = -v
    place: i64 = 1
    while place * 10 <= v:  # bounded: at most 6 places below 10**6
        place *= 10
    while place > 0:  # bounded: one round a digit
        digit = v // place
        v -= digit * place
        place //= 10
        lo ^= 48 + digit  # "0" + digit
        low = lo * _PRIME_LOW
        hi = (hi * _PRIME_LOW + (lo << 8) + (low >> 32)) & _LOW32
        lo = low & _LOW32
    return hi, lo


def salted_hash(data: bytes) -> int:
    """The 64-bit FNV-1a hash of ``data``."""
    hi, lo = _fnv1a(_OFFSET_HI, _OFFSET_LO, data)
    return int(hi) << 32 | int(lo)


def _uint(text: str) -> int:
    if _UINT.match(text):
        n = int(text)
        if n <= _MAX_UINT:
            return n
    return 0


def _fractions(hi: i64, lo: i64, values: list[Any], start: int, end: int) -> list[float]:
    """The hashes of ``values[start:end]`` after the state ``(hi, lo)``, over 2**64.

    Bounded: ``end - start`` values. ``hi * 2**32`` is exact in a float; adding
    ``lo`` rounds once, as ``float(h)`` does; dividing by 2**64 is exact.
    """
    ranks = [0.0] * (end - start)
    for i in range(start, end):  # bounded: end - start values
        v = values[i]
        if type(v) is int:
            n: int = v
            if -_DIGITS_BELOW < n < _DIGITS_BELOW:  # Go prints its digits: hash them as read
                h, low = _fnv1a_int(hi, lo, n)
                ranks[i - start] = (float(h) * _TWO32 + float(low)) / _TWO64
                continue
        h, low = _fnv1a(hi, lo, salt_text(v).encode())
        ranks[i - start] = (float(h) * _TWO32 + float(low)) / _TWO64
    return ranks


def salted_rank(prefix: str, values: list[Any]) -> list[int]:
    """Item indices sorted by (hash(prefix + text) / 2**64, numeric id, index)."""
    hi, lo = _fnv1a(_OFFSET_HI, _OFFSET_LO, prefix.encode())
    order = _by_kernel(hi, lo, values, -1)
    return order if order is not None else _ranked(hi, lo, values)


def boosted_order(prefix: str, values: list[Any], size: int) -> list[int]:
    """The first ``size`` items of :func:`salted_rank`, then the others in input order."""
    hi, lo = _fnv1a(_OFFSET_HI, _OFFSET_LO, prefix.encode())
    order = _by_kernel(hi, lo, values, max(0, size))
    if order is not None:
        return order
    n = len(values)
    head = _ranked(hi, lo, values)[: max(0, min(size, n))]
    boosted = set(head)
    return head + [i for i in range(n) if i not in boosted]


def _by_kernel(hi: i64, lo: i64, values: list[Any], head: int) -> list[int] | None:
    """The C kernel's order after the prefix state ``(hi, lo)`` (``head`` as ``_orders.c``
    takes it), or None: no kernel in this process (the compiled core only), more than
    ``PIECE`` values, or values it leaves to :func:`_ranked` (not strs and small ints
    only, or equal ranks)."""
    kernel = SALTED_ORDER
    if kernel is None or len(values) > PIECE:
        return None
    return kernel(int(hi) << 32 | int(lo), values, head)


def _ranked(hi: i64, lo: i64, values: list[Any]) -> list[int]:
    """:func:`salted_rank` after the prefix state ``(hi, lo)``, in Python (compiled or not)."""
    n = len(values)
    if n <= PIECE:  # stable_order's one-piece call, here compiled (no interpreted frame)
        ranks = _fractions(hi, lo, values, 0, n)
        order = sorted(range(n), key=ranks.__getitem__)
    else:
        ranks = []
        for start, end in spans(n):  # bounded: n / PIECE pieces
            ranks += _fractions(hi, lo, values, start, end)
        order = stable_order(ranks)
    _break_ties(order, ranks, values)
    return order


def _break_ties(order: list[int], ranks: list[float], values: list[Any]) -> None:
    """Order each run of equal ranks by numeric id (a stable sort keeps the indices ascending).

    Bounded: one pass over ``order``; equal ranks are rare (a repeated value, or
    two hashes one float apart), so the ids of only those items are read.
    """
    n = len(order)
    if n == 0:
        return
    start = 0
    prev = ranks[order[0]]
    for p in range(1, n):  # bounded: n positions
        r = ranks[order[p]]
        if r != prev:
            if p - start > 1:
                _by_number(order, start, p, values)
            start = p
            prev = r
    if n - start > 1:
        _by_number(order, start, n, values)


def _by_number(order: list[int], start: int, end: int, values: list[Any]) -> None:
    """Stably sort ``order[start:end]`` by the values' numbers (bounded: the run)."""
    run = order[start:end]
    ids = [_uint(salt_text(values[k])) for k in run]
    keyed = sorted(range(end - start), key=ids.__getitem__)
    order[start:end] = [run[q] for q in keyed]
