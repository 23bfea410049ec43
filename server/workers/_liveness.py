"""Whether a worker still follows: its heartbeat, and the supervisor's clock of it.

A worker that stops following (SIGSTOP, a wedged follower thread, a start
that never ends) keeps serving what it mapped and holds a lease on an old
config generation, so the store would keep every snapshot dropped since
(``_config_leases``): it grows without bound, and nothing else notices. So
each worker sends a beat on a pipe of its own (worker -> supervisor) every
``HEARTBEAT_SECONDS`` while it is *healthy*, and the supervisor kills (SIGKILL)
a worker it has not heard from for ``LIVENESS_TIMEOUT_SECONDS``, then starts
a new one (with the usual restart backoff):

- healthy while starting: until ``start_timeout + START_SLACK_SECONDS`` after
  the worker began (its build is bounded by ``start_timeout``);
- healthy once serving: the follower thread is alive and no follow pass has
  run for longer than its own bound (``Follower.following``).

The first beat may take up to ``FIRST_BEAT_SECONDS`` after the spawn (a new
interpreter imports everything first). A beat says whether the worker
serves yet (``serving``), so that the supervisor never kills its last
serving workers together (``Supervisor._kill_silent``). So a stopped or stuck worker is gone
at most ``LIVENESS_TIMEOUT_SECONDS`` plus one supervision pass after its last
beat, and the store holds at most what the pod published meanwhile.

Guarantees:
- A beat is a hint of liveness only: it carries no data, and a full pipe
  (the supervisor itself stopped) blocks only the beating thread.
- The supervisor reads at most ``MAX_BEATS_PER_PASS`` beats per worker per
  pass, so a flood of beats cannot hold its loop.
- Every wait is bounded: the beating thread waits ``HEARTBEAT_SECONDS`` at a
  time and ends on ``stop()`` or a broken pipe (the supervisor is gone).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

__all__ = [
    "FIRST_BEAT_SECONDS",
    "HEARTBEAT_SECONDS",
    "LIVENESS_TIMEOUT_SECONDS",
    "MAX_BEATS_PER_PASS",
    "START_SLACK_SECONDS",
    "BeatClock",
    "Heartbeat",
]

HEARTBEAT_SECONDS = 1.0
"""How often a healthy worker beats."""
LIVENESS_TIMEOUT_SECONDS = 10.0
"""A worker unheard of for this long is killed and replaced."""
FIRST_BEAT_SECONDS = 60.0
"""How long after its spawn a worker may take to beat the first time."""
START_SLACK_SECONDS = 30.0
"""A starting worker beats until ``start_timeout`` plus this much after it began."""
MAX_BEATS_PER_PASS = 64

_BEAT = b"."
"""A beat of a worker that serves."""
_STARTING = b"s"
"""A beat of a worker still starting."""
_log = logging.getLogger("pineapple.server")


class Heartbeat:
    """Worker side: a daemon thread sending a beat on ``conn`` while ``healthy()``."""

    def __init__(self, conn: Connection, healthy: Callable[[], bool]) -> None:
        self._conn = conn
        self.healthy = healthy
        """Whether to beat (the start bound; once serving, the follower's health)."""
        self.serving = False
        """Set once the worker serves: its beats say so."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pineapple-heartbeat", daemon=True)

    def serve_while(self, healthy: Callable[[], bool]) -> None:
        """The worker serves: beat as serving while ``healthy()``."""
        self.healthy = healthy
        self.serving = True

    def start(self) -> None:
        """Beat now, then every ``HEARTBEAT_SECONDS``."""
        self._thread.start()

    def stop(self) -> None:
        """Stop beating (the supervisor then stops waiting for beats when the worker exits)."""
        self._stop.set()

    def _run(self) -> None:
        # Bounded: one wait of HEARTBEAT_SECONDS per beat; ends on stop() or a broken pipe.
        while not self._stop.is_set():
            if self.healthy():
                try:
                    self._conn.send_bytes(_BEAT if self.serving else _STARTING)
                except OSError:
                    return  # the supervisor is gone: the follower stops this worker
            self._stop.wait(HEARTBEAT_SECONDS)


class BeatClock:
    """Supervisor side: when one worker last beat, read from the pipe ``conn``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.last = time.monotonic()
        """Monotonic time of the last beat (the spawn time before the first one)."""
        self.beaten = False
        self.serving = False
        """Whether the last beat said the worker serves."""
        self.open = True
        """False once the worker's end closed (it exited): nothing more to wait for."""

    def hear(self) -> None:
        """Read the beats waiting on the pipe (at most ``MAX_BEATS_PER_PASS``)."""
        try:
            for _ in range(MAX_BEATS_PER_PASS):
                if not self.conn.poll(0):
                    return
                beat = self.conn.recv_bytes(16)
                self.last = time.monotonic()
                self.beaten = True
                self.serving = beat == _BEAT
        except (EOFError, OSError):
            self.open = False  # the worker exited: its sentinel says the rest

    def silent_for(self, now: float) -> float | None:
        """Seconds since the last beat when past its allowance, else None."""
        allowed = LIVENESS_TIMEOUT_SECONDS if self.beaten else FIRST_BEAT_SECONDS
        silent = now - self.last
        return silent if silent > allowed else None

    def close(self) -> None:
        """Close the supervisor's end of the pipe."""
        self.conn.close()
