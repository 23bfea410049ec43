"""``server/http/_answer_batch.py``: answers held to the end of the loop's turn, and its bounds.

The clock is given (``now``), so each bound is checked at its edge; the
protocol's side (what a connection writes before anything else) is in
``tests/server/http/test_direct.py``. Runs compiled and pure (the module is in
the compiled group).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from server.http._answer_batch import HOLD_BYTES, HOLD_SECONDS, AnswerBatch


class _Transport:
    def __init__(self, name: str, log: list[tuple[str, bytes]]) -> None:
        self.name, self.log, self.closing = name, log, False

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        self.log.append((self.name, data))


def test_held_answers_are_written_once_each_in_order_at_the_turns_end() -> None:
    async def scenario() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[tuple[str, bytes]]()
        a, b = _Transport("a", log), _Transport("b", log)
        for transport, answer in ((a, b"1"), (b, b"2"), (a, b"3")):
            assert batch.hold(transport, answer, loop, 0.0, 0.0)
        during = list(log)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return during, log

    during, after = asyncio.run(scenario())
    assert during == [] and after == [("a", b"1"), ("b", b"2"), ("a", b"3")]


@pytest.mark.parametrize(("later", "written"), [(HOLD_SECONDS * 0.99, False), (HOLD_SECONDS, True)])
def test_a_hold_that_finds_the_batch_old_writes_it_at_once(later: float, written: bool) -> None:
    async def scenario() -> int:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[tuple[str, bytes]]()
        batch.hold(_Transport("a", log), b"1", loop, 0.0, 0.0)
        batch.hold(_Transport("b", log), b"2", loop, later, later)
        return len(log)

    assert asyncio.run(scenario()) == (2 if written else 0)


@pytest.mark.parametrize(
    ("latest_run", "written"),
    [(0.0, False), (HOLD_SECONDS * 0.99, False), (HOLD_SECONDS * 1.01, True)],
)
def test_a_run_after_a_slow_one_starts_after_the_held_answers_are_written(
    latest_run: float, written: bool
) -> None:
    """The coming run may be as slow as the latest: the held answers do not wait for it."""

    async def scenario() -> int:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[tuple[str, bytes]]()
        later = time.monotonic() + 60  # the age bound far off: only the run's matters
        batch.hold(_Transport("a", log), b"1", loop, later, later)
        batch.hold(_Transport("b", log), b"2", loop, later - latest_run, later)
        batch.before_run()
        return len(log)

    assert asyncio.run(scenario()) == (2 if written else 0)


def test_a_run_starts_after_a_batch_held_too_long_is_written() -> None:
    """The age bound at a run's start, on the real clock: held at a time long past."""

    async def scenario() -> int:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[tuple[str, bytes]]()
        batch.hold(_Transport("a", log), b"1", loop, -1.0, -1.0)  # monotonic() is far later
        batch.before_run()
        return len(log)

    assert asyncio.run(scenario()) == 1


def test_the_size_bound_writes_what_is_held_and_leaves_a_big_answer_to_the_caller() -> None:
    async def scenario() -> tuple[list[tuple[str, int]], bool, bool]:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[tuple[str, bytes]]()
        a, b = _Transport("a", log), _Transport("b", log)
        batch.hold(a, b"x" * (HOLD_BYTES - 10), loop, 0.0, 0.0)
        batch.hold(b, b"y" * 11, loop, 0.0, 0.0)  # past the bound: "a" is written first
        first = [(name, len(data)) for name, data in log]
        big = batch.hold(a, b"z" * (HOLD_BYTES + 1), loop, 0.0, 0.0)
        await asyncio.sleep(0)
        return first + [(name, len(data)) for name, data in log[1:]], big, batch.holding

    sizes, big_held, holding = asyncio.run(scenario())
    assert sizes == [("a", HOLD_BYTES - 10), ("b", 11)]
    assert big_held is False and holding is False  # "b" went before the big one's write


def test_a_closing_transport_drops_its_held_answer() -> None:
    async def scenario() -> list[tuple[str, bytes]]:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[tuple[str, bytes]]()
        lost, kept = _Transport("lost", log), _Transport("kept", log)
        batch.hold(lost, b"1", loop, 0.0, 0.0)
        batch.hold(kept, b"2", loop, 0.0, 0.0)
        lost.closing = True
        await asyncio.sleep(0)
        return log

    assert asyncio.run(scenario()) == [("kept", b"2")]


def test_a_transport_of_another_loop_is_not_held() -> None:
    other = asyncio.new_event_loop()
    try:

        async def scenario() -> tuple[bool, list[tuple[str, bytes]]]:
            loop = asyncio.get_running_loop()
            batch, log = AnswerBatch(), list[tuple[str, bytes]]()
            batch.hold(_Transport("a", log), b"1", loop, 0.0, 0.0)
            refused = batch.hold(_Transport("b", log), b"2", other, 0.0, 0.0)
            await asyncio.sleep(0)
            return refused, log

        refused, log = asyncio.run(scenario())
    finally:
        other.close()
    assert refused is False and log == [("a", b"1")]  # "b" is the caller's to write


def test_an_empty_batch_writes_nothing_and_holds_nothing() -> None:
    batch = AnswerBatch()
    batch.before_run()
    batch.write()
    assert not batch.holding
