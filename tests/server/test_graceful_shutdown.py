"""Issue 22, item 1: SIGTERM under keep-alive load drops nothing, in both process models.

A real ``pineapple serve`` (one process, and ``--workers 2``, from one
parametrised fixture) serves clients that each keep one connection alive and
alternate ``POST /execute`` and ``GET /readyz`` on it, reconnecting when a
response says ``Connection: close``. Then SIGTERM. Expected, from the
clients' side: no reset and no connection cut before its response; no
refused connection before the shutdown delay is over (the listener still
accepts); ``/readyz`` answers 503 within half a second while requests are
still served; every connection made after that is closed after its first
answer; the process exits 0 within delay + drain + 2 s.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ._modes import MODES, serving
from ._rawhttp import RawConnection
from .test_e2e import BODY, ServeProcess

pytestmark = pytest.mark.e2e

DELAY = 2.0  # --shutdown-delay-seconds
DRAIN = 5.0  # --drain-seconds
CLIENTS = 8
AT_ONCE = 0.5  # /readyz is 503 this soon after SIGTERM (every worker has had the signal)
LOAD_SECONDS = DELAY + DRAIN + 10  # every client thread ends by then at the latest


@dataclass
class Seen:
    """One client connection's life: when it was made, what it was answered."""

    opened: float
    answers: list[tuple[float, str, int, bool]] = field(default_factory=list)
    """(sent at, path, status, Connection: close)."""


@dataclass
class Tally:
    connections: list[Seen] = field(default_factory=list)
    refused: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _client(host: str, port: int, tally: Tally, ready: threading.Event, stop_at: float) -> None:
    conn: RawConnection | None = None
    seen: Seen | None = None
    turn = 0
    try:
        while time.monotonic() < stop_at:  # bounded by stop_at; ends at the first refusal
            if conn is None:
                try:
                    conn = RawConnection(host, port)
                except ConnectionRefusedError:
                    with tally.lock:
                        tally.refused.append(time.monotonic())
                    return
                seen = Seen(time.monotonic())
                with tally.lock:
                    tally.connections.append(seen)
            assert seen is not None
            path = "/readyz" if turn % 2 else "/execute"
            sent = time.monotonic()
            try:
                if path == "/execute":
                    answer = conn.ask("POST", path, BODY)
                else:
                    answer = conn.ask("GET", path)
            except (OSError, EOFError) as exc:  # a reset, or a close before the response
                with tally.lock:
                    tally.failures.append(f"{path} sent at {sent:.3f}: {exc!r}")
                return
            seen.answers.append((sent, path, answer.status, answer.closes))
            ready.set()
            turn += 1
            if answer.closes:
                conn.close()
                conn = None
    finally:
        if conn is not None:
            conn.close()


@pytest.fixture(params=MODES)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServeProcess]:
    args = ("--shutdown-delay-seconds", str(DELAY), "--drain-seconds", str(DRAIN))
    with serving(request.param, tmp_path, *args) as proc:
        yield proc


def test_sigterm_under_keep_alive_load_drops_nothing(server: ServeProcess) -> None:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    tally = Tally()
    stop_at = time.monotonic() + LOAD_SECONDS
    readies = [threading.Event() for _ in range(CLIENTS)]
    threads = [
        threading.Thread(
            target=_client, args=(parts.hostname, parts.port, tally, ready, stop_at), daemon=True
        )
        for ready in readies
    ]
    for thread in threads:
        thread.start()
    for ready in readies:
        assert ready.wait(30), "a client got no answer before SIGTERM"

    signalled = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    bound = DELAY + DRAIN + 2
    code = server.proc.wait(bound + 5)
    exited = time.monotonic() - signalled
    for thread in threads:
        thread.join(LOAD_SECONDS)
        assert not thread.is_alive()
    log = "".join(server.log)

    assert tally.failures == [], (tally.failures, log)
    assert code == 0, log
    assert exited < bound, (exited, log)
    # Refused only once the delay is over (the listener still accepts during it), and
    # then every client is: the listener is really gone.
    assert len(tally.refused) == CLIENTS, tally.refused
    assert min(tally.refused) >= signalled + DELAY, min(tally.refused) - signalled

    answers = [a for c in tally.connections for a in c.answers]
    assert {status for _, _, status, _ in answers} <= {200, 503}, answers
    assert any(a[1] == "/readyz" and a[2] == 200 for a in answers if a[0] < signalled)
    # /readyz turns 503 at once and stays so, while the listener still accepts.
    late_ready = [a for a in answers if a[1] == "/readyz" and a[0] >= signalled + AT_ONCE]
    assert late_ready and all(status == 503 for _, _, status, _ in late_ready), late_ready
    assert any(a[0] < signalled + DELAY for a in late_ready), "no /readyz during the delay"
    # Requests are still served during the delay: /execute 200 on new connections, and
    # each such connection is closed by the server after its first answer.
    fresh = [c for c in tally.connections if c.opened >= signalled + AT_ONCE and c.answers]
    assert fresh, "no connection accepted after SIGTERM"
    assert all(c.answers[0][3] for c in fresh), [c.answers for c in fresh]
    served = [a for c in fresh for a in c.answers if a[1] == "/execute"]
    assert served and all(status == 200 for _, _, status, _ in served), served
