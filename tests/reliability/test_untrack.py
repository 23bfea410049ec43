"""Issue 11, item 15: ``untrack_atomic`` untracks exactly when CPython would.

CPython keeps a tuple tracked while any item is a GC object other than an
exact tuple that is untracked (``_PyTuple_MaybeUntrack``): an untracked dict
can become tracked later, and a cycle through it and the tuple must stay
collectable. Both C extensions are part of a normal install: a missing one is
a failure here, never a skip; only ``PINEAPPLE_PURE_PYTHON=1`` lets them go.
"""

from __future__ import annotations

import gc
import importlib
import os
import weakref
from types import ModuleType
from typing import Any

import pytest

_PURE = os.environ.get("PINEAPPLE_PURE_PYTHON") == "1"


def _extension(name: str) -> ModuleType:
    """The compiled module; a failure when it did not build (a skip only when pure Python)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if _PURE:
            pytest.skip(f"{name} not built and PINEAPPLE_PURE_PYTHON=1")
        pytest.fail(f"C extension {name} did not build in a normal install: {exc}", pytrace=False)


@pytest.mark.parametrize("name", ["resources._untrack", "pineapple.resource._cref"])
def test_both_c_extensions_are_built_and_in_use(name: str) -> None:
    _extension(name)
    from pineapple.resource import _refvalue
    from resources import _untracking

    expected = "python" if _PURE else "c"
    assert (expected, expected) == (_untracking.IMPLEMENTATION, _refvalue.IMPLEMENTATION)


class _Canary:
    """Something a weak reference can watch die."""


def test_a_tuple_holding_an_untracked_dict_stays_tracked() -> None:
    untrack = _extension("resources._untrack").untrack_atomic
    d: dict[str, Any] = {"n": 1}
    assert not gc.is_tracked(d)  # a dict of atomic values starts untracked
    t = (d,)
    assert untrack(t) is False
    assert gc.is_tracked(t)


def test_a_cycle_made_later_through_that_dict_is_collected() -> None:
    untrack = _extension("resources._untrack").untrack_atomic
    d: dict[str, Any] = {"n": 1}
    t = (d, "x", 3)
    untrack(t)
    canary = _Canary()
    watch = weakref.ref(canary)
    d["canary"] = canary  # the dict becomes tracked now ...
    d["tuple"] = t  # ... and closes a cycle d -> t -> d
    del d, t, canary
    gc.collect()
    assert watch() is None, "a cycle through an untracked tuple was never collected"


@pytest.mark.parametrize(
    "item",
    [[1], {1: 2}, {"a": [1]}, set(), _Canary(), (1, [2])],
    ids=["list", "untracked-dict", "tracked-dict", "set", "object", "tracked-tuple"],
)
def test_any_gc_item_but_an_untracked_tuple_keeps_the_tuple_tracked(item: object) -> None:
    untrack = _extension("resources._untrack").untrack_atomic
    t = ("a", item)
    assert untrack(t) is False and gc.is_tracked(t)


def test_atomic_items_and_untracked_tuples_let_it_go() -> None:
    untrack = _extension("resources._untrack").untrack_atomic
    inner = ("a", 1)
    gc.collect()  # lets CPython untrack the inner tuple itself
    assert untrack(inner) is True or not gc.is_tracked(inner)
    t = ("s", 1, 2.5, None, b"b", inner)
    assert untrack(t) is True and not gc.is_tracked(t)
