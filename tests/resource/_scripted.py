"""A fetcher that serves a script of row lists, and a printer that sizes them."""

from __future__ import annotations

import threading
from typing import Any


class Rows(list[dict[str, Any]]):
    """A list of row dicts that counts its closes."""

    def __init__(self, rows: list[dict[str, Any]], tag: str = "") -> None:
        super().__init__(rows)
        self.tag = tag
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


def rows(n: int, tag: str = "", **extra: Any) -> Rows:
    """``n`` rows ``{"id": i, **extra}``."""
    return Rows([{"id": i, **extra} for i in range(n)], tag)


class Scripted:
    """Returns the next value of ``script`` per call (the last one forever)."""

    def __init__(self, *script: Any) -> None:
        self.script = list(script)
        self.calls = 0
        self.gate: threading.Event | None = None  # set: the fetch waits for it
        self.entered = threading.Event()
        self.resumed_with: list[Any] = []

    def __call__(self) -> Any:
        self.calls += 1
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(10), "test gate never opened"
        return self.script[min(self.calls, len(self.script)) - 1]

    def carry_over(self, value: Any) -> None:
        self.resumed_with.append(value)


class RowPrinter:
    """100 bytes a row."""

    def describe(self, value: Any) -> str:
        return repr(value)

    def summarize(self, value: Any) -> str:
        return f"{len(value)} rows"

    def size_of(self, value: Any) -> int:
        return 100 * len(value)
