"""Restart backoff and the heartbeat clock of ``--workers N``, inside one process."""

from __future__ import annotations

import multiprocessing

from server.workers._liveness import (
    FIRST_BEAT_SECONDS,
    LIVENESS_TIMEOUT_SECONDS,
    MAX_BEATS_PER_PASS,
    BeatClock,
    Heartbeat,
)
from server.workers.supervisor._supervisor import RESTART_BACKOFF_MAX_SECONDS, restart_delay


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
        assert reader.recv_bytes(16) == b"."
    finally:
        beat.stop()
    reader.close()
    writer.close()
