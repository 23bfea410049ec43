"""The answer's size bound: what operators' writes add to a run's answer, counted as it grows.

A request of a few KB can ask for an answer of GBs: ``transform_dispatch``
(or ``transform_copy`` ``common_to_item``) puts one common value on every
item, so a 60 KB value on 3,500 items is a 200 MB answer, and encoding it
allocates all of it at once (orjson crashes past a few GB). The list that
holds the copies costs a pointer per item; the bytes exist only when the
answer is encoded, so the bound is checked on an estimate, before that.

A run with a bound (``Engine.run(max_answer_bytes=)``; the server's
``--max-answer-bytes``) keeps an :class:`AnswerBytes` and, before an
operator's output is applied, counts:

- every common write: the value's estimated JSON size (:func:`value_bytes`);
- every ``OperatorOutput.fill_column``: the value's size once, times the
  number of items it is copied to.

Past the bound the run stops with ``AnswerTooLargeError`` naming the
operator, before the copy is applied. Column writes of distinct values
(``set_column``) are not walked (the engines' hot path writes them for every
item); they copy what the frame holds already, once per operator. The
server also measures the encoded answer against the same bound.

The estimate walks each distinct list or dict once (a value that holds one
object many times is counted many times, without walking it again), at most
:data:`MAX_DEPTH` deep (deeper than an encoder goes): bounded by the number
of objects the value is made of. Text counts its characters (non-ASCII and
escaped text encode longer); numbers count 8 bytes.
"""

from __future__ import annotations

from typing import Any, Final, final

from .._errors import AnswerTooLargeError

__all__ = ["MAX_DEPTH", "AnswerBytes", "value_bytes"]

MAX_DEPTH: Final = 256
"""Nesting the estimate follows (orjson refuses to encode past 254 levels)."""
_SCALAR: Final = 8


@final
class AnswerBytes:
    """One run's count of what its writes add to the answer, and its bound.

    A plain class (compiled: no interpreted ``__init__``); one per run with a
    bound, owned by that run's thread.
    """

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def charge(self, operator: str, nbytes: int) -> None:
        """Count ``nbytes`` that ``operator``'s output adds; raise past the bound."""
        used = self.used + nbytes
        if used > self.limit:
            raise AnswerTooLargeError(
                f'answer too large: operator "{operator}" would make it about {used:,} bytes, '
                f"more than the limit of {self.limit:,} bytes",
                operator=operator,
            )
        self.used = used


def value_bytes(value: Any) -> int:
    """About the bytes of ``value`` encoded as JSON (see the module's docstring)."""
    return _size(value, {}, 0)


def _size(value: Any, seen: dict[int, int], depth: int) -> int:
    if isinstance(value, str):
        return len(value) + 2
    if not isinstance(value, (dict, list, tuple)) or depth >= MAX_DEPTH:
        return _SCALAR
    key = id(value)
    known = seen.get(key)
    if known is not None:
        return known
    seen[key] = 0  # a cycle counts nothing on its way back (no encoder writes one)
    total = 2
    if isinstance(value, dict):
        for k, v in value.items():  # bounded: each distinct container is walked once
            total += _size(k, seen, depth + 1) + 1 + _size(v, seen, depth + 1)
    else:
        for v in value:  # bounded: each distinct container is walked once
            total += 1 + _size(v, seen, depth + 1)
    seen[key] = total
    return total
