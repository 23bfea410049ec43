"""The memory budget: current, kept previous and retired-but-borrowed values count."""

from __future__ import annotations

from typing import Any

import pytest

from pineapple.resource import Manager, MemoryBudgetExceededError, StartError
from pineapple.resource.lowlevel import MemoryBudget, flush_closes

from ._scripted import RowPrinter, Scripted, rows


class Refusals:
    """A metrics object that records refusals."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def observe_refresh(self, name: str, type_name: str, result: Any, seconds: float) -> None:
        pass

    def observe_refusal(self, name: str, type_name: str, check: str) -> None:
        self.seen.append((name, check))


def _manager(limit: int, *script: Any, keep_previous: bool = False, **kw: Any) -> Manager:
    rm = Manager(budget=MemoryBudget(limit), **kw)
    rm.register(
        "feed", Scripted(*script), interval=-1, printer=RowPrinter(), keep_previous=keep_previous
    )
    return rm


def _tag(rm: Manager) -> str:
    handle = rm.get("feed")
    assert handle is not None
    with handle as value:
        return str(value.tag)


def test_a_value_over_the_budget_is_refused_and_the_old_one_kept() -> None:
    metrics = Refusals()
    huge = rows(20, "huge")
    rm = _manager(1000, rows(5, "small"), huge, metrics=metrics)
    rm.start()
    assert rm.status_of("feed").size_bytes == 500
    with pytest.raises(MemoryBudgetExceededError, match=r"'feed'.*memory_budget.*2000 bytes"):
        rm.refresh("feed")
    assert _tag(rm) == "small"
    assert metrics.seen == [("feed", "memory_budget")]
    cond = rm.status_of("feed").condition("Valid")
    assert cond is not None and cond.status == "False"
    flush_closes(5)
    assert huge.closes == 1
    rm.stop()


def test_a_retired_value_counts_while_it_is_borrowed_exactly() -> None:
    rm = _manager(1000, rows(5, "a"), rows(4, "b"), rows(6, "c"))
    rm.start()
    borrowed = rm.get("feed")  # a request still reads "a"
    assert borrowed is not None
    assert rm.refresh("feed") == "swapped"  # "a" (borrowed, 500) + "b" (400) = 900: fits
    assert rm.memory()["retired_borrowed_bytes"] == 500
    assert rm.memory()["in_use_bytes"] == 900
    with pytest.raises(MemoryBudgetExceededError, match="1100 bytes"):
        rm.refresh("feed")  # "c" (600) + borrowed "a" (500); "b" is not borrowed: freed
    borrowed.release()
    assert rm.memory()["retired_borrowed_bytes"] == 0  # forgotten at the last release
    assert rm.refresh("feed") == "swapped"  # the same source value fits now
    assert _tag(rm) == "c"
    rm.stop()


def test_the_kept_previous_value_counts() -> None:
    rm = _manager(1200, rows(5, "a"), rows(5, "b"), rows(8, "c"), keep_previous=True)
    rm.start()
    assert rm.refresh("feed") == "swapped"  # b 500 + previous a 500
    assert rm.memory()["previous_bytes"] == 500
    with pytest.raises(MemoryBudgetExceededError, match="1300 bytes"):
        rm.refresh("feed")  # c 800 + previous b 500; a (not borrowed) is dropped
    rm.stop()


def test_parallel_first_loads_cannot_both_fit() -> None:
    rm = Manager(budget=MemoryBudget(1000))
    for name in ("x", "y"):
        rm.register(name, Scripted(rows(6, name)), interval=-1, printer=RowPrinter())
    with pytest.raises(StartError, match="memory_budget") as info:
        rm.start()
    assert len(info.value.failures) == 1  # exactly one of the two fits


def test_sizes_of_unknown_types_are_none_and_not_enforced() -> None:
    rm = Manager(budget=MemoryBudget(1))
    rm.register("feed", Scripted(rows(1000)), interval=-1)  # default printer: size unknown
    rm.start()
    assert rm.status_of("feed").size_bytes is None
    assert rm.memory()["unknown_size"] == ["feed"]
    rm.stop()
