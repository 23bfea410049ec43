"""The reorder operators' C kernels (``_orders.c``), where this process uses them.

:data:`FLOAT_ORDER` (``reorder_sort``) and :data:`SALTED_ORDER`
(``reorder_shuffle_by_salt``, ``reorder_topn_boost``) are the kernels when the
extension was built (``setup.py``; it is optional) and the compiled core runs;
``None`` otherwise (``PINEAPPLE_PURE_PYTHON=1``, or an install without a C
compiler), and the operators order in Python. A kernel answers ``None`` for
an input it leaves to Python. The orders are the same either way: the tests
compare each kernel with the Python ordering it stands for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._native import compiled

__all__ = ["FLOAT_ORDER", "SALTED_ORDER"]

FloatOrder = Callable[[list[Any], bool], "list[int] | None"]
SaltedOrder = Callable[[int, list[Any], int], "list[int] | None"]

FLOAT_ORDER: FloatOrder | None = None
"""``float_order(values, descending)``: ``sorted``'s stable order of floats and exact ints."""
SALTED_ORDER: SaltedOrder | None = None
"""``salted_order(state, values, head)``: items by salted FNV-1a rank (see ``_orders.c``)."""

if compiled():
    try:
        from . import _orders
    except ImportError:  # pragma: no cover - an install without a C compiler
        pass
    else:
        FLOAT_ORDER, SALTED_ORDER = _orders.float_order, _orders.salted_order
