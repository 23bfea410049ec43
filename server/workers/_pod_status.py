"""The pod's status, posted by the supervisor as a file that every worker reads.

What a worker shows of the supervisor (the statuses of shared resources in
``/resources``, its reload record in ``/config``, whether its refreshes
stopped for ``/readyz``) is read from ``status.json`` in the store's
directory, never asked over the control channel: the channel's few slots are
kept for the admin's decisions, so no flood of unauthenticated reads can
take them, and a status of any size is served (the channel caps a message at
64 KiB; 150 shared resources are about 130 KB of status).

The supervisor posts the status (:meth:`StatusBoard.post`) after every
decision (reload, refresh, rollback, pin, unpin), before it answers the
worker that asked. The board's own thread (apart from the supervision loop,
which a slow status never holds up) wakes every ``POST_SECONDS``: it posts
again when told a status changed (:meth:`StatusBoard.changed`: a background
refresh ended) or ``RECOMPUTE_SECONDS`` after its last post (a condition
that flips with time alone), and otherwise only stamps the file's time. A
post whose status did not change only stamps it too. So the file's age says
when the supervisor last ran this thread, and a worker answers ``/readyz``
503 (``no supervisor``) once it is over ``STATUS_STALE_SECONDS`` (stopped,
gone, or its status stuck). Cost (150 shared resources, a 138 KB status):
a post computes and encodes it in about 9 ms, a stamp is one ``utime``; a
worker parses a new post in 0.4 ms and otherwise reads a cached one (one
``stat``).

Bounds: a status over ``STATUS_MAX_BYTES`` is posted as an error saying so
(its resources left out); a reader reads at most that many bytes.

Guarantees:
- ``StatusBoard._lock`` serialises posts, and each post computes the status
  and writes it under the lock: a status posted after a decision is never
  replaced by one computed before it. The file is written under a temporary
  name and renamed over the old one (atomic): a reader sees a whole post.
- ``_changed`` is cleared by a post before it computes the status: a change
  noted while a post runs is posted by the next wake, never lost.
- The board's thread (:meth:`StatusBoard.start`) waits at most
  ``POST_SECONDS`` between posts and ends within one wait of :meth:`StatusBoard.stop`.
- ``StatusReader._cached`` is one tuple (the file's identity, its parsed
  body) replaced whole; two threads may parse the same post twice, never
  mix two.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from .._atomic_file import write_atomically
from .._decisions import Refused

__all__ = [
    "POST_SECONDS",
    "RECOMPUTE_SECONDS",
    "STATUS_FILE",
    "STATUS_MAX_BYTES",
    "STATUS_STALE_SECONDS",
    "StatusBoard",
    "StatusReader",
]

STATUS_FILE = "status.json"
"""The file's name in the store's directory."""
STATUS_MAX_BYTES = 64 * 1024 * 1024
"""A status larger than this is posted as an error (about 70,000 shared resources)."""
POST_SECONDS = 0.5
"""How often the board's thread wakes: to post a changed status, else to stamp it."""
RECOMPUTE_SECONDS = 2.0
"""The longest a posted status goes without being computed again (flips with time)."""
STATUS_STALE_SECONDS = 5.0
"""A status older than this means no supervisor runs its loop: ``/readyz`` is 503."""

_log = logging.getLogger("pineapple.server")

Status = Callable[[], dict[str, Any]]


class StatusBoard:
    """The supervisor's side: posts ``status()`` to ``path`` (see module docs)."""

    def __init__(self, path: Path, status: Status) -> None:
        self.path = path
        self._status = status
        self._lock = threading.Lock()
        self._posted: bytes | None = None
        self._failing = False
        self._stop = threading.Event()
        self._changed = threading.Event()
        self._computed = 0.0
        """Monotonic time of the last post (its status computed)."""
        self._thread = threading.Thread(target=self._run, name="pineapple-status", daemon=True)

    def changed(self) -> None:
        """A status changed (any thread): the board's next wake posts it."""
        self._changed.set()

    def start(self) -> None:
        """Post now, then every ``POST_SECONDS`` on the board's thread until :meth:`stop`."""
        self.post()
        self._thread.start()

    def stop(self) -> None:
        """Stop posting; returns within one wait (the file stays until the store goes)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=POST_SECONDS * 4)

    def _run(self) -> None:
        # Bounded: one post or stamp per POST_SECONDS; ends on stop().
        while not self._stop.wait(POST_SECONDS):
            due = time.monotonic() - self._computed >= RECOMPUTE_SECONDS
            try:
                if due or self._changed.is_set():
                    self.post()
                else:
                    self._stamp()
            except Exception:  # a status that cannot be made: stale, so "no supervisor"
                _log.exception("cannot post the pod's status")

    def _stamp(self) -> None:
        with self._lock, contextlib.suppress(OSError):  # not written yet: posted next
            os.utime(self.path)

    def post(self) -> None:
        """Write the status if it changed, else stamp the file's time; never raises OSError
        (a full directory is logged once; the last status stays and keeps its stamp)."""
        with self._lock:
            self._changed.clear()  # a change from now on is posted by the next wake
            self._computed = time.monotonic()
            data = _encoded(self._status())
            try:
                if data != self._posted:
                    write_atomically(self.path, data)
                    self._posted = data
                else:
                    os.utime(self.path)
            except OSError as exc:
                self._stamp_after(exc)
                return
            if self._failing:
                self._failing = False
                _log.info("the pod's status is written to %s again", self.path)

    def _stamp_after(self, exc: OSError) -> None:
        """A write failed (a full directory): stamp the last status, which stays."""
        if not self._failing:
            self._failing = True
            _log.warning("cannot write the pod's status to %s (the last stays): %s", self.path, exc)
        # Needs no room: the supervisor is alive. Not written yet: "no supervisor" until it is.
        with contextlib.suppress(OSError):
            os.utime(self.path)


def _encoded(status: dict[str, Any]) -> bytes:
    data = orjson.dumps(status)
    if len(data) <= STATUS_MAX_BYTES:
        return data
    error = f"the pod's status is {len(data)} bytes, over {STATUS_MAX_BYTES}"
    _log.error("%s; its resources are left out", error)
    return orjson.dumps({**status, "resources": None, "error": error})


class StatusReader:
    """A worker's side: the status the supervisor last posted at ``path`` (see module docs)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cached: tuple[tuple[int, int, int], dict[str, Any]] | None = None

    def read(self) -> dict[str, Any]:
        """The posted status; :class:`Refused` (503) when it is missing or stale."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise Refused(503, f"no supervisor: cannot read its status ({exc.strerror})") from None
        age = time.time() - st.st_mtime
        if age > STATUS_STALE_SECONDS:
            raise Refused(503, f"no supervisor: its status was last posted {age:.1f}s ago")
        identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._cached
        if cached is not None and cached[0] == identity:
            return cached[1]
        body = _parsed(self.path)
        self._cached = (identity, body)
        return body

    def config(self) -> dict[str, Any]:
        """The supervisor's reload record and whether its refreshes stopped (``halted``)."""
        config: dict[str, Any] = self.read()["config"]
        return config

    def resources(self) -> dict[str, dict[str, Any]]:
        """``name -> status`` of every shared resource; :class:`Refused` (507) when the
        status was too large to post."""
        body = self.read()
        if body.get("resources") is None:
            raise Refused(507, str(body.get("error") or "the pod's status has no resources"))
        return {st["name"]: st for st in body["resources"]}


def _parsed(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as source:
            data = source.read(STATUS_MAX_BYTES + 1)
    except OSError as exc:
        raise Refused(503, f"no supervisor: cannot read its status ({exc.strerror})") from None
    if len(data) > STATUS_MAX_BYTES:
        raise Refused(502, f"{path}: over {STATUS_MAX_BYTES} bytes, not a status we wrote")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise Refused(502, f"{path}: not JSON ({exc})") from None
    if not isinstance(body, dict) or not isinstance(body.get("config"), dict):
        raise Refused(502, f"{path}: not a status")
    return body
