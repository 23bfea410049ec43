"""``Manager.cancel``: a start in progress ends without waiting for its fetch (issue 33, item 8)."""

from __future__ import annotations

import threading
import time

import pytest

from pineapple import resource
from pineapple.resource import ManagerStateError, StartError

pytestmark = pytest.mark.timeout(30)


class _Blocking:
    """A fetch that blocks until its ``cancel()`` (or 20 s), counting both."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.cancels = 0
        self.fetches = 0

    def __call__(self) -> list[int]:
        self.fetches += 1
        self.entered.set()
        if not self.released.wait(20):
            return [1]
        raise RuntimeError("cancelled")

    def cancel(self) -> None:
        self.cancels += 1
        self.released.set()


def test_cancel_ends_a_start_in_progress_and_cancels_its_fetch() -> None:
    fetcher = _Blocking()
    manager = resource.Manager(start_timeout=20)
    manager.register("feed", fetcher, interval=-1)
    raised: list[BaseException] = []

    def start() -> None:
        try:
            manager.start()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=start)
    thread.start()
    assert fetcher.entered.wait(10)
    began = time.monotonic()
    manager.cancel()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - began < 5  # never the 20 s fetch
    assert len(raised) == 1 and isinstance(raised[0], StartError), raised
    assert fetcher.cancels == 1 and fetcher.fetches == 1
    assert manager.state == "stopped" and manager.get("feed") is None
    manager.cancel()  # idempotent
    assert fetcher.cancels == 1


def test_a_cancelled_manager_never_starts() -> None:
    fetcher = _Blocking()
    manager = resource.Manager()
    manager.register("feed", fetcher, interval=-1)
    manager.cancel()
    with pytest.raises(ManagerStateError):
        manager.start()
    assert fetcher.fetches == 0
