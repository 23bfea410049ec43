"""A staged refresh on the Manager: ``fetch_candidate``, ``admit_candidate``,
``refuse_candidate``, ``drop_candidate`` (the server's shadow stage of one resource)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pineapple.resource import (
    NOT_MODIFIED,
    Manager,
    PinnedError,
    RefreshError,
    ValidationRefusedError,
)
from pineapple.resource.lowlevel import flush_closes

from ._scripted import Rows, Scripted, rows

HOLD = "a staged refresh of 'feed' is shadowed"


def _served(rm: Manager) -> Any:
    handle = rm.get("feed")
    assert handle is not None
    with handle as value:
        return value


def _condition(rm: Manager, kind: str) -> tuple[str, str]:
    cond = rm.status_of("feed").condition(kind)
    assert cond is not None
    return cond.status, cond.message


def _started(*script: Any) -> tuple[Manager, Scripted]:
    fetcher = Scripted(*script)
    rm = Manager(jitter=0)
    rm.register("feed", fetcher, interval=-1)
    rm.start()
    return rm, fetcher


def test_a_candidate_is_fetched_pinned_and_swapped_in_as_a_refresh() -> None:
    live, new = rows(2, "live"), rows(3, "new")
    rm, _ = _started(live, new)
    candidate = rm.fetch_candidate("feed", HOLD)
    assert candidate is new and _served(rm) is live  # fetched, not swapped
    assert _condition(rm, "Pinned") == ("True", HOLD)
    with pytest.raises(PinnedError, match="a staged refresh"):
        rm.refresh("feed")  # held by the stage
    with pytest.raises(PinnedError):
        rm.fetch_candidate("feed", HOLD)  # one stage at a time
    assert rm.admit_candidate("feed", candidate, HOLD) == 2
    assert _served(rm) is new and _condition(rm, "Pinned")[0] == "False"
    flush_closes(5)
    assert live.closes == 1 and new.closes == 0
    rm.stop()


def test_a_refused_candidate_is_not_swapped_in_by_the_next_fetch_of_the_same_data() -> None:
    live, new = rows(2, "live"), rows(3, "new")
    fetcher = Scripted(live, new, NOT_MODIFIED, rows(4, "changed"))
    rm = Manager(jitter=0)
    rm.register("feed", fetcher, interval=-1)
    rm.start()
    candidate = rm.fetch_candidate("feed", HOLD)
    rm.refuse_candidate("feed", HOLD, "aborted (admin): aborted by an admin")
    rm.drop_candidate("feed", candidate)
    status, message = _condition(rm, "Valid")
    assert status == "False" and "refused by stage: aborted (admin)" in message, message
    assert _condition(rm, "Pinned")[0] == "False"
    with pytest.raises(ValidationRefusedError, match="refused by stage"):
        rm.refresh("feed")  # the source still holds the aborted data
    assert _served(rm) is live
    assert rm.refresh("feed") == "swapped"  # a change is refreshed as usual
    assert _condition(rm, "Valid")[0] == "True"
    flush_closes(5)
    assert isinstance(candidate, Rows) and candidate.closes == 1 and live.closes == 1
    rm.stop()


def test_nothing_is_pinned_when_there_is_nothing_to_stage_and_an_admins_pin_stays() -> None:
    rm, _ = _started(rows(1), NOT_MODIFIED)
    assert rm.fetch_candidate("feed", HOLD) is NOT_MODIFIED
    assert _condition(rm, "Pinned")[0] == "False"
    rm.pin("feed", "an admin's pin")
    rm.release_hold("feed", HOLD)  # lifts the stage's pin only
    assert _condition(rm, "Pinned") == ("True", "an admin's pin")
    rm.stop()


def test_a_failed_fetch_stages_nothing() -> None:
    fetched = iter([rows(1)])

    def fetch() -> Any:
        for value in fetched:
            return value
        raise RuntimeError("source down")

    rm = Manager(jitter=0)
    rm.register("feed", fetch, interval=-1)
    rm.start()
    with pytest.raises(RefreshError, match="source down"):
        rm.fetch_candidate("feed", HOLD)
    assert _condition(rm, "Pinned")[0] == "False"
    rm.stop()


class _Watched:
    """A lock that says when a thread asks for it (the refresh lock of one slot)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.asked = threading.Semaphore(0)

    def __enter__(self) -> bool:
        self.asked.release()
        return self._lock.acquire(timeout=10)

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_a_refresh_waiting_for_the_lock_while_a_stage_pins_fetches_nothing() -> None:
    live, new = rows(2, "live"), rows(3, "new")
    rm, fetcher = _started(live, new)
    watched = _Watched()
    rm._slots["feed"].refresh_lock = watched  # type: ignore[assignment]  # the interleaving
    fetcher.gate = threading.Event()
    staged: list[Any] = []
    stage = threading.Thread(target=lambda: staged.append(rm.fetch_candidate("feed", HOLD)))
    stage.start()
    assert watched.asked.acquire(timeout=10) and fetcher.entered.wait(10)  # it holds the lock
    fetcher.entered.clear()
    refused: list[BaseException] = []

    def refresh() -> None:
        try:
            rm._fetch(rm._slots["feed"], unless_pinned=True)  # past the check, as the timer
        except PinnedError as exc:
            refused.append(exc)

    waiting = threading.Thread(target=refresh)
    waiting.start()
    assert watched.asked.acquire(timeout=10)  # it waits for the lock the stage holds
    fetcher.gate.set()
    stage.join(10)
    waiting.join(10)
    assert staged == [new] and len(refused) == 1 and "a staged refresh" in str(refused[0])
    assert fetcher.calls == 2  # the start and the stage: the waiting refresh fetched nothing
    assert rm.admit_candidate("feed", new, HOLD) == 2
    rm.stop()
