"""The pod's request sample: each worker's recent requests, collected by the supervisor.

Under ``--workers N`` every worker keeps its own :class:`RequestSample`
(``server/_request_sample.py``, filled by its ``/execute`` responder). When
the supervisor builds a candidate config (a reload), it collects them here
and hands the merged sample to the trial process, which replays it on the
candidate it built (``server/_replay.py``, ``server/workers/supervisor/_trial.py``).
Nothing is written: each worker serves its sample on a unix socket
(``sample-<pid>.sock``) in the supervisor's private store directory (mode
0700), answering only its parent (the peer's pid, ``SO_PEERCRED``), and only
when asked, so serving costs nothing between reloads.

Bounds: the pod's sample holds at most ``--replay-sample-requests`` requests
and ``--replay-sample-bytes`` body bytes (the newest across workers), none
older than ``--replay-sample-seconds``; a worker's answer is read up to
``2 * max_bytes + 64 KiB`` (JSON escapes), all of them within
``COLLECT_SECONDS``; a worker answers one caller at a time, writing within the same
bound. A worker that does not answer is left out (and its stale socket
removed when nothing listens on it).

Guarantees:
- A worker's server thread ends within ``_ACCEPT_SECONDS`` of :meth:`stop`
  (daemon thread, socket closed and unlinked).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct
import threading
import time
from pathlib import Path

from .._config import Config
from .._replay import warmup_requests
from .._request_sample import RequestSample, SampledRequest, decode_sample
from ._control import _sun_path

__all__ = ["COLLECT_SECONDS", "SampleServer", "candidate_requests", "collect_sample"]

COLLECT_SECONDS = 2.0
"""How long the supervisor waits for its workers' samples (all of them)."""
_ACCEPT_SECONDS = 0.5
_PREFIX = "sample-"
_SUFFIX = ".sock"

_log = logging.getLogger("pineapple.server")


def _socket_path(store: Path, pid: int) -> Path:
    return store / f"{_PREFIX}{pid}{_SUFFIX}"


class SampleServer:
    """A worker's end: serves its sample to its parent on ``sample-<pid>.sock``."""

    def __init__(self, store: Path, sample: RequestSample) -> None:
        self._path = _socket_path(store, os.getpid())
        self._sample = sample
        self._parent = os.getppid()
        self._stopped = threading.Event()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            self._path.unlink()
        _sun_path(self._path, self._sock.bind)
        self._sock.listen(4)
        self._sock.settimeout(_ACCEPT_SECONDS)
        self._thread = threading.Thread(target=self._run, name="pineapple-sample", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(_ACCEPT_SECONDS * 2)
        self._sock.close()
        with contextlib.suppress(OSError):
            self._path.unlink()

    def _run(self) -> None:
        # Bounded: one accept of at most _ACCEPT_SECONDS per turn until stop().
        while not self._stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by stop()
            with conn:
                try:
                    self._answer(conn)
                except OSError as exc:
                    _log.warning("could not hand the request sample over: %s", exc)

    def _answer(self, conn: socket.socket) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, _, _ = struct.unpack("3i", creds)
        if pid != self._parent:
            return  # only the supervisor may read what users sent
        conn.settimeout(COLLECT_SECONDS)
        conn.sendall(self._sample.encode())


def collect_sample(config: Config, store: Path) -> list[SampledRequest]:
    """The pod's sample: the newest requests of every worker, within the bounds of ``config``."""
    limit = 2 * config.replay_sample_bytes + 64 * 1024
    deadline = time.monotonic() + COLLECT_SECONDS  # for every worker together
    found: list[tuple[float, SampledRequest]] = []
    for path in sorted(store.glob(f"{_PREFIX}*{_SUFFIX}")):  # bounded: one per worker
        try:
            data = _read(path, limit, deadline)
            found.extend((age, request) for request, age in decode_sample(data))
        except (OSError, ValueError) as exc:
            if isinstance(exc, ConnectionRefusedError):
                with contextlib.suppress(OSError):
                    path.unlink()  # a worker gone: nobody listens there any more
            else:
                _log.warning("no request sample from %s: %s", path.name, exc)
    found.sort(key=lambda pair: pair[0])  # the newest first
    out: list[SampledRequest] = []
    size = 0
    for age, request in found:
        if age > config.replay_sample_seconds or len(out) >= config.replay_sample_requests:
            break
        size += len(request.body)
        if size > config.replay_sample_bytes:
            break
        out.append(request)
    out.reverse()  # replayed oldest first, as one process's sample
    return out


def _read(path: Path, limit: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(max(0.001, deadline - time.monotonic()))
        _sun_path(path, conn.connect)
        # Bounded: by ``limit`` bytes and by ``deadline``.
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ValueError(f"no complete sample within {COLLECT_SECONDS:g}s")
            conn.settimeout(remaining)
            chunk = conn.recv(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise ValueError(f"a sample over {limit} bytes")
            chunks.append(chunk)


def candidate_requests(config: Config, store: Path, data: bytes) -> list[SampledRequest] | None:
    """The pod's sample for a candidate ``data`` to replay; None when there is nothing to
    replay (``--replay-seconds 0``, or no sample and no ``warmup_requests``)."""
    if config.replay_seconds <= 0:
        return None
    sample = collect_sample(config, store) if config.replay_sample_requests > 0 else []
    if not sample and not warmup_requests(data):
        return None
    return sample
