"""``did you mean ...?``: the closest known name to a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]

_MAX_NAME = 200
"""Longer names get no suggestion: the comparison is quadratic in the name's length."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` to ``name``, else ``""``.

    Bounded: names over 200 characters are not compared, and ``difflib`` looks at
    each known name once (registries hold dozens of names).
    """
    if len(name) > _MAX_NAME:
        return ""
    candidates = [k for k in known if len(k) <= _MAX_NAME]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""
