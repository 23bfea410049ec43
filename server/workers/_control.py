"""The control channel: a worker asks the supervisor to decide, and waits for its answer.

With ``--workers N`` an admin call reaches whichever worker accepted the
connection, but reloads, refreshes and pins of shared resources must be
decided once, by the supervisor. So the supervisor listens on a unix socket
in its private snapshot directory (mode 0700: only its user can connect) and
a worker forwards the call there: one JSON line in, one JSON line out, then
the connection closes.

A request is ``{"op": ..., ...}``; a reply is the handler's dict, or
``{"error": {"status": <HTTP status>, "message": ..., "resource": <status>}}``
when the handler raised a ``PineappleError`` (the status from
``server/_decisions.py``'s table, keyed by class; messages are already
redacted by whoever raised them; any other exception is logged here and
answered without its text).

Only decisions travel here (a reload, an admin action on a shared resource:
what the admin check let through); every status a worker shows is read from
what the supervisor posts in the store (``server/workers/_pod_status.py``),
so no read, however many, takes a slot.

Bounds (fixed: requests are a few hundred bytes and admin calls are rare):
``CONTROL_MAX_BYTES`` per message, ``CONTROL_MAX_HANDLERS`` requests at once
(another is answered ``Busy``), ``CONTROL_READ_SECONDS`` to read a request;
the caller gives its own timeout for the whole call. An error's message is at
most ``MAX_ERROR_BYTES`` (``pineapple/_error_text.py``), and a reply that
would not fit in a message is answered with an error saying how large it
was: no answer breaks the channel.

Guarantees:
- ``_slots`` (a semaphore) holds one unit per running handler thread: it is
  taken before the thread starts and given back in that thread's ``finally``,
  so at most ``CONTROL_MAX_HANDLERS`` handlers run and none leaks a unit.
- ``stop()`` closes the listening socket and joins the accept thread within
  one accept timeout; handlers still running finish on their own (daemon
  threads) and their replies fail harmlessly if the caller has gone.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pineapple import PineappleError
from pineapple._error_text import capped

from .._decisions import Refused, http_status

__all__ = [
    "CONTROL_MAX_BYTES",
    "CONTROL_MAX_HANDLERS",
    "CONTROL_READ_SECONDS",
    "CONTROL_SOCKET",
    "ControlError",
    "ControlServer",
    "call",
    "refusal_of",
]

CONTROL_SOCKET = "control.sock"
"""The socket's name in the supervisor's snapshot directory."""
CONTROL_MAX_BYTES = 64 * 1024
"""A request or reply longer than this is refused."""
CONTROL_MAX_HANDLERS = 8
"""Requests handled at once; another one is answered ``Busy``."""
CONTROL_READ_SECONDS = 5.0
"""How long the supervisor waits for a connected worker to send its request."""
_ACCEPT_SECONDS = 0.5
_SUN_PATH_MAX = 100

_log = logging.getLogger("pineapple.server")

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ControlError(PineappleError):
    """The control channel failed: no supervisor, a timeout, or a malformed message."""


def _read_line(conn: socket.socket, deadline: float, what: str) -> dict[str, Any]:
    """One JSON object terminated by a newline, read before ``deadline``."""
    buffer = b""
    # Bounded: by CONTROL_MAX_BYTES (each recv adds at least one byte) and by ``deadline``.
    while b"\n" not in buffer:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ControlError(f"{what}: no complete message within the time allowed")
        conn.settimeout(remaining)
        try:
            chunk = conn.recv(CONTROL_MAX_BYTES + 1 - len(buffer))
        except TimeoutError:
            raise ControlError(f"{what}: no complete message within the time allowed") from None
        except OSError as exc:
            raise ControlError(f"{what}: {exc.strerror or exc}") from None
        if not chunk:
            raise ControlError(f"{what}: the connection closed before a complete message")
        buffer += chunk
        if len(buffer) > CONTROL_MAX_BYTES:
            raise ControlError(f"{what}: message over {CONTROL_MAX_BYTES} bytes")
    try:
        message = orjson.loads(buffer.partition(b"\n")[0])
    except orjson.JSONDecodeError as exc:
        raise ControlError(f"{what}: not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise ControlError(f"{what}: not a JSON object")
    return message


def _sun_path(path: Path, act: Callable[[str], None]) -> None:
    """``act(address)`` (bind or connect) with an address short enough for ``sun_path``.

    A unix socket's path is limited to ~107 bytes; a ``--shared-dir`` deep in
    a temporary tree is longer. Then the directory is opened and the socket
    named through ``/proc/self/fd/<fd>/`` (Linux), which is short.
    """
    address = str(path)
    if len(address.encode()) < _SUN_PATH_MAX:
        act(address)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        act(f"/proc/self/fd/{fd}/{path.name}")
    finally:
        os.close(fd)


def _error_reply(status: int, message: str, resource: Any = None) -> dict[str, Any]:
    return {"error": {"status": status, "message": capped(message), "resource": resource}}


def _fitted(reply: dict[str, Any]) -> bytes:
    """``reply`` encoded; one that would not fit in a message is answered with an error
    saying so (bounded), so no answer can break the channel for its caller."""
    data = orjson.dumps(reply)
    if len(data) < CONTROL_MAX_BYTES:  # with its newline, at most the cap
        return data
    refusal = (
        f"the supervisor's answer is {len(data)} bytes, "
        f"over the control channel's {CONTROL_MAX_BYTES}"
    )
    _log.error("%s; answered with this error", refusal)
    return orjson.dumps(_error_reply(502, refusal))


def refusal_of(reply: dict[str, Any]) -> Refused | None:
    """The :class:`Refused` an error reply carries (None for an answer)."""
    error = reply.get("error")
    if not isinstance(error, dict):
        return None
    status = error.get("status")
    resource = error.get("resource")
    return Refused(
        status if isinstance(status, int) else 502,
        str(error.get("message")),
        resource if isinstance(resource, dict) else None,
    )


def call(path: Path, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Send ``request`` to the supervisor listening at ``path``; its reply within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    what = f"control channel {path}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            _sun_path(path, conn.connect)
        except OSError as exc:
            raise ControlError(f"{what}: {exc.strerror or exc} (is the supervisor gone?)") from None
        try:
            conn.sendall(orjson.dumps(request) + b"\n")
        except BrokenPipeError:
            pass  # answered without reading (Busy): the reply is already queued
        except OSError as exc:
            raise ControlError(f"{what}: {exc.strerror or exc}") from None
        return _read_line(conn, deadline, what)


class ControlServer:
    """The supervisor's end: serves ``handle`` on a unix socket at ``path`` (see module docs)."""

    def __init__(self, path: Path, handle: Handler) -> None:
        self.path = path
        self._handle = handle
        self._slots = threading.BoundedSemaphore(CONTROL_MAX_HANDLERS)
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._accept, name="pineapple-control", daemon=True)

    def start(self) -> None:
        """Bind the socket and start accepting."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            _sun_path(self.path, sock.bind)
            sock.listen(CONTROL_MAX_HANDLERS * 2)
            sock.settimeout(_ACCEPT_SECONDS)
        except OSError:
            sock.close()
            raise
        self._sock = sock
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting; returns within one accept timeout."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=_ACCEPT_SECONDS * 4)
        if self._sock is not None:
            self._sock.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        assert self._sock is not None
        # Bounded: each accept waits at most _ACCEPT_SECONDS; ends on stop().
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            if not self._slots.acquire(blocking=False):
                self._reply(conn, _error_reply(503, "the supervisor is busy; try again"))
                continue
            threading.Thread(
                target=self._serve, args=(conn,), name="pineapple-control-call", daemon=True
            ).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            try:
                request = _read_line(
                    conn, time.monotonic() + CONTROL_READ_SECONDS, "control request"
                )
                reply = self._handle(request)
            except Refused as exc:
                reply = _error_reply(exc.status, str(exc), exc.resource)
            except PineappleError as exc:
                reply = _error_reply(http_status(exc), str(exc))
            except Exception:
                _log.exception("a control request failed")
                reply = _error_reply(502, "the supervisor failed (see its log)")
            self._reply(conn, reply)
        finally:
            self._slots.release()

    @staticmethod
    def _reply(conn: socket.socket, reply: dict[str, Any]) -> None:
        with conn:
            try:
                conn.settimeout(CONTROL_READ_SECONDS)
                conn.sendall(_fitted(reply) + b"\n")
            except OSError:
                pass  # the caller gave up; nothing to tell it
