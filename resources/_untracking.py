"""``untrack_atomic``: take a finished column tuple out of the cyclic GC's sight at once.

The compiled ``_untrack`` extension does it (see ``_untrack.c`` for why);
where it was not built, or ``PINEAPPLE_PURE_PYTHON=1``, this is a no-op that
returns False and the collector untracks the tuple on its own next walk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["IMPLEMENTATION", "untrack_atomic"]


def _leave_to_the_collector(column: tuple[Any, ...]) -> bool:
    """The fallback: nothing is untracked now."""
    return False


untrack_atomic: Callable[[tuple[Any, ...]], bool] = _leave_to_the_collector
IMPLEMENTATION = "python"

if os.environ.get("PINEAPPLE_PURE_PYTHON") != "1":
    try:
        from . import _untrack  # type: ignore[attr-defined]
    except ImportError:  # the optional extension was not built
        pass
    else:
        untrack_atomic = _untrack.untrack_atomic
        IMPLEMENTATION = "c"
