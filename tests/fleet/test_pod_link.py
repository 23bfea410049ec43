"""``StoreLink``: a pod's connection waits once for a store that does not answer, then fails fast.

A store whose reads block until the test releases them (an ``Event``) stands
in for a silent server: the first read with a cached fallback gives up after
``QUICK_ANSWER_SECONDS``; every later read (no probe) is refused at once,
without reaching the store (counted); a probe reaches it, and its success
ends the refusals.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from server.fleet import StoreUnavailableError
from server.fleet._link import QUICK_ANSWER_SECONDS, StoreLink

pytestmark = pytest.mark.timeout(30)


class _SilentStore:
    """``get`` blocks until ``answer`` is set (bounded by the test's own timeout)."""

    url = "nats://127.0.0.1:1"

    def __init__(self) -> None:
        self.answer = threading.Event()
        self.calls = 0
        self._lock = threading.Lock()

    def get(self, bucket: str, key: str) -> Any:
        with self._lock:
            self.calls += 1
        if not self.answer.wait(20):
            raise StoreUnavailableError(f"{self.url}: get {bucket}/{key}: no answer within 20s")
        return None

    def close(self) -> None:
        self.answer.set()


def test_a_silent_store_is_waited_for_once_then_refused_at_once_until_a_probe_answers() -> None:
    store = _SilentStore()
    link = StoreLink(store.url, lambda: store)  # type: ignore[arg-type,return-value]
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"no answer within 0\.5s"):
            link.run(lambda s: s.get("pineapple-pins", "x"), quick=True)
        waited = time.monotonic() - started
        assert QUICK_ANSWER_SECONDS <= waited < QUICK_ANSWER_SECONDS + 2.0
        assert (link.down, store.calls) == (True, 1)

        started = time.monotonic()
        for _ in range(5):  # refused at once, the store is not asked
            with pytest.raises(StoreUnavailableError, match=r"127\.0\.0\.1:1"):
                link.run(lambda s: s.get("pineapple-pins", "x"))
        assert time.monotonic() - started < 1.0 and store.calls == 1

        store.answer.set()  # the store answers again: a probe finds it
        assert link.run(lambda s: s.get("pineapple-config", "current"), probe=True) is None
        assert (link.down, store.calls) == (False, 2)
        assert link.run(lambda s: s.get("pineapple-pins", "x")) is None
        assert store.calls == 3
    finally:
        link.close()
