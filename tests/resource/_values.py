"""Test values that record how they are used and closed."""

from __future__ import annotations

import itertools
import threading
from typing import Any


class Closable:
    """A value that counts its closes and refuses use after close."""

    _ids = itertools.count(1)

    def __init__(self, payload: Any = None) -> None:
        self.id = next(self._ids)
        self.payload = payload
        self.closes = 0
        self.used_after_close = 0
        self.close_thread = ""
        self._lock = threading.Lock()

    def use(self) -> Any:
        with self._lock:
            if self.closes:
                self.used_after_close += 1
        return self.payload

    def close(self) -> None:
        with self._lock:
            self.closes += 1
        self.close_thread = threading.current_thread().name


class CountingFetcher:
    """A fetcher returning a new Closable per call; can be told to fail."""

    def __init__(self) -> None:
        self.calls = 0
        self.made: list[Closable] = []
        self.fail_with: Exception | None = None
        self.closed = 0
        self.fetched = threading.Event()

    def __call__(self) -> Closable:
        self.calls += 1
        try:
            if self.fail_with is not None:
                raise self.fail_with
            value = Closable(self.calls)
            self.made.append(value)
            return value
        finally:
            self.fetched.set()

    def close(self) -> None:
        self.closed += 1
