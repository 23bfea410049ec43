"""Restart backoff and the heartbeat clock of ``--workers N``, inside one process."""

from __future__ import annotations

import multiprocessing
import time
from types import SimpleNamespace
from typing import Any, cast

from server.workers._liveness import (
    FIRST_BEAT_SECONDS,
    LIVENESS_TIMEOUT_SECONDS,
    MAX_BEATS_PER_PASS,
    BeatClock,
    Heartbeat,
)
from server.workers.supervisor._supervisor import (
    RESTART_BACKOFF_MAX_SECONDS,
    Supervisor,
    restart_delay,
)


def test_restarts_back_off_doubling_up_to_the_cap() -> None:
    delays = [restart_delay(n) for n in range(1, 10)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert restart_delay(10**9) == RESTART_BACKOFF_MAX_SECONDS  # no overflow, ever
    assert restart_delay(0) == restart_delay(1)


def test_the_clock_allows_a_first_beat_late_then_only_the_liveness_timeout() -> None:
    reader, writer = multiprocessing.Pipe(duplex=False)
    clock = BeatClock(reader)
    start = clock.last
    assert clock.silent_for(start + FIRST_BEAT_SECONDS - 1) is None
    assert clock.silent_for(start + FIRST_BEAT_SECONDS + 1) is not None
    for _ in range(MAX_BEATS_PER_PASS + 10):
        writer.send_bytes(b".")
    clock.hear()  # reads at most MAX_BEATS_PER_PASS: a flood cannot hold the loop
    assert clock.beaten and reader.poll(0)
    heard = clock.last
    assert clock.silent_for(heard + LIVENESS_TIMEOUT_SECONDS - 1) is None
    assert clock.silent_for(heard + LIVENESS_TIMEOUT_SECONDS + 1) is not None
    clock.hear()
    writer.close()
    clock.hear()  # end of file: the worker is gone, nothing more to wait for
    assert not clock.open
    clock.close()


def test_a_heartbeat_beats_only_while_healthy() -> None:
    reader, writer = multiprocessing.Pipe(duplex=False)
    healthy = [False]
    beat = Heartbeat(writer, lambda: healthy[0])
    beat.start()
    try:
        assert not reader.poll(0)
        healthy[0] = True
        assert reader.poll(5.0)  # bounded: a beat each second once healthy
        assert reader.recv_bytes(16) == b"s"  # starting
        beat.serving = True
        clock = BeatClock(reader)
        end = time.monotonic() + 10
        while not clock.serving:  # bounded: a beat each second
            assert time.monotonic() < end, "no serving beat"
            assert reader.poll(5.0)
            clock.hear()
        assert clock.beaten
    finally:
        beat.stop()
    reader.close()
    writer.close()


class _Beats:
    def __init__(self, silent: bool, serving: bool) -> None:
        self.silent, self.serving = silent, serving

    def silent_for(self, now: float) -> float | None:
        return LIVENESS_TIMEOUT_SECONDS + 1 if self.silent else None


class _Proc:
    def __init__(self, index: int) -> None:
        self.name, self.pid, self.kills = f"pineapple-worker-{index}", 1000 + index, 0

    def kill(self) -> None:
        self.kills += 1


def _pod(*workers: tuple[bool, bool]) -> tuple[Supervisor, list[_Proc]]:
    """A supervisor's kill decision over workers given as ``(silent, serving)``."""
    supervisor = Supervisor.__new__(Supervisor)  # its supervision state only, no processes
    procs = [_Proc(i) for i in range(len(workers))]
    supervisor.workers = [
        cast(Any, SimpleNamespace(proc=p, beats=_Beats(*w), killed=False))
        for p, w in zip(procs, workers, strict=True)
    ]
    supervisor._lone_kill_at = 0.0
    return supervisor, procs


def test_silent_workers_are_never_all_killed_together() -> None:
    supervisor, procs = _pod((True, True), (True, True))  # both fell silent at once
    supervisor._kill_silent()
    assert [p.kills for p in procs] == [1, 0]  # one; the other keeps its socket and pages
    supervisor._kill_silent()
    assert [p.kills for p in procs] == [1, 0]  # not within LIVENESS_TIMEOUT_SECONDS
    supervisor._lone_kill_at = time.monotonic() - 1  # that long later, still none serves
    supervisor._kill_silent()
    assert [p.kills for p in procs] == [1, 1]


def test_a_silent_worker_beside_a_serving_one_is_killed_at_once() -> None:
    supervisor, procs = _pod((True, True), (False, True), (True, True))
    supervisor._kill_silent()
    assert [p.kills for p in procs] == [1, 0, 1]
