"""``StoreLink``: a pod's connection to the fleet store, waited for once when it does not answer.

Guarantees: see :class:`StoreLink`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

from ._errors import FleetError, StoreUnavailableError
from ._store import FleetStore

__all__ = ["QUICK_ANSWER_SECONDS", "StoreLink", "safe_url"]

QUICK_ANSWER_SECONDS = 0.5
"""While a pod's store has not answered yet, how long a call with a fallback (a cached
generation or config) waits for it: a pod whose store is down starts from its cache."""
T = TypeVar("T")

_log = logging.getLogger("pineapple.fleet")


def safe_url(url: str) -> str:
    """``url`` without user, password or token (for messages before the store is open)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an invalid fleet URL)"
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class StoreLink:
    """The pod's connection to the fleet store (see :meth:`run`).

    Opened on first use, opened again after :meth:`reset` (the follower
    resets it when the store stopped answering). Once an operation found the
    store unavailable, every other caller is answered that failure at once
    until a ``probe`` (the follower's retries, the heartbeat) finds it
    answering again: a pod whose store is down starts from its cache after
    one wait, not one per resource.

    Guarantees: ``_store`` and ``_down`` change under ``_lock`` only; an
    opening holds ``_lock`` (bounded by the store's ``timeout``); an operation
    runs outside it, bounded by the store's deadline.
    """

    def __init__(self, url: str, opener: Callable[[], FleetStore]) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._store: FleetStore | None = None
        self._down: tuple[float, str] | None = None
        """``(monotonic time, message)`` of the last failure (None: the store answers)."""
        self._answered = False
        """Whether the store has answered since it was opened."""
        self.on_down: list[Callable[[str], None]] = []
        """Called (outside the lock) with the failure when the store stops answering."""
        self.url = safe_url(url)
        """The store's address for messages (no credentials)."""

    def _open(self, probe: bool) -> FleetStore:
        with self._lock:
            down = self._down
            if not probe and down is not None:
                raise StoreUnavailableError(down[1])
            if self._store is not None:
                return self._store
            try:
                store = self._opener()
            except FleetError as exc:
                message = str(exc) if self.url in str(exc) else f"{self.url}: {exc}"
                self._down = (time.monotonic(), message)
                raise StoreUnavailableError(message) from None
            self._store = store
            self.url = store.url
            return store

    def run(
        self, operation: Callable[[FleetStore], T], *, probe: bool = False, quick: bool = False
    ) -> T:
        """``operation(store)``; :class:`StoreUnavailableError` when the store does not
        answer (at once while it is known down, unless ``probe``).

        ``quick``: the caller has a fallback (a cached generation or config), so
        while the store has not answered yet, it waits at most
        :data:`QUICK_ANSWER_SECONDS` (the operation goes on in the background,
        bounded by the store's deadline, and its answer is dropped).
        """
        store = self._open(probe)
        try:
            if quick and not self._answered:
                result = _within(QUICK_ANSWER_SECONDS, operation, store)
            else:
                result = operation(store)
        except (StoreUnavailableError, OSError) as exc:
            message = str(exc) if isinstance(exc, StoreUnavailableError) else f"{store.url}: {exc}"
            with self._lock:
                was_up, self._down = self._down is None, (time.monotonic(), message)
            if was_up:
                self._went_down(message)
            raise StoreUnavailableError(message) from None
        with self._lock:
            self._down, self._answered = None, True
        return result

    def _went_down(self, message: str) -> None:
        for listener in list(self.on_down):  # bounded: the pod's few listeners
            try:
                listener(message)
            except Exception:
                _log.exception("a fleet store listener failed")

    @property
    def down(self) -> bool:
        """Whether the last operation found the store unavailable."""
        return self._down is not None

    def reset(self) -> None:
        """Close the store; the next operation opens it again."""
        with self._lock:
            store, self._store, self._answered = self._store, None, False
        if store is not None:
            try:
                store.close()
            except Exception as exc:  # closing a broken connection: nothing more to do
                _log.debug("closing the fleet store %s: %s", self.url, exc)

    close = reset


def _within(seconds: float, operation: Callable[[FleetStore], T], store: FleetStore) -> T:
    """``operation(store)`` on a thread of its own, waited for at most ``seconds``.

    Past them :class:`StoreUnavailableError`; the thread ends within the store's
    own deadline, and its answer is dropped.
    """
    answer: list[tuple[bool, Any]] = []
    done = threading.Event()

    def call() -> None:
        try:
            answer.append((True, operation(store)))
        except BaseException as exc:  # handed to the caller below
            answer.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=call, name="pineapple-fleet-first", daemon=True).start()
    if not done.wait(seconds):
        raise StoreUnavailableError(f"fleet store {store.url}: no answer within {seconds:g}s")
    ok, value = answer[0]
    if ok:
        return cast(T, value)
    raise value
