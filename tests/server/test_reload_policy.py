"""The reload policy over a fake target: what a trigger reads, checks and applies, exactly.

One :class:`ReloadPolicy` decides for one process, the supervisor and the
fleet producer; here it drives a target that counts every step, so each rule
of ``server/_reload_policy.py`` is shown by exact counts: unchanged bytes are
neither parsed nor applied, failed bytes are not retried by the watcher,
a busy policy answers ``busy``, a closing one ``shutting down``, and a
reload cancelled while it applies publishes nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from pineapple.resource.lowlevel import LoadedConfig, load_config
from server._build_error import BuildError
from server._reload_policy import ReloadOutcome, ReloadPolicy

GOOD_1 = b'{"v": 1}'
GOOD_2 = b'{"v": 2}'
BAD = b'{"v": "bad"}'


@dataclass
class FakeTarget:
    """A ``ReloadTarget`` that counts its steps; ``BAD`` fails the check at step ``engine``."""

    data: bytes = GOOD_1
    reads: int = 0
    checks: list[bytes] = field(default_factory=list)
    applied: list[bytes] = field(default_factory=list)
    serial: int = 0
    closing: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    gate: threading.Event | None = None
    """When set, :meth:`apply` waits on it (at most 10 s) before it applies."""
    unreadable: bool = False

    def read(self) -> bytes:
        self.reads += 1
        if self.unreadable:
            raise BuildError("read", "the file is gone")
        return self.data

    def check(self, data: bytes) -> LoadedConfig:
        self.checks.append(data)
        if data == BAD:
            raise BuildError("engine", "the engine refused it")
        return load_config(data)

    def apply(self, config: LoadedConfig) -> int | None:
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(10)  # bounded: every test opens it
        if self.closing.is_set():
            return None  # shutdown began meanwhile: nothing serves it
        self.applied.append(config.data)
        self.serial += 1
        return self.serial

    def describe(self, serial: int | None) -> str:
        return "nothing changed" if serial is None else f"serial {serial} serving"


def _policy(target: FakeTarget, *, refusals: bool = False, wait: float = 5.0) -> ReloadPolicy:
    return ReloadPolicy(target, wait=wait, closing=target.closing.is_set, records_refusals=refusals)


def test_the_start_reads_checks_and_applies_once() -> None:
    target = FakeTarget()
    policy = _policy(target)
    assert policy.start() == 1
    assert (target.reads, target.checks, target.applied) == (1, [GOOD_1], [GOOD_1])
    assert policy.last is not None and policy.last.trigger == "start"
    assert policy.attempts == 1


def test_a_start_that_is_not_recorded_leaves_no_outcome() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start(record=False)
    assert policy.last is None and policy.attempts == 0


def test_unchanged_bytes_are_neither_checked_nor_applied() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start()
    for trigger in ("watch", "poll", "signal", "admin"):
        outcome = policy.reload(trigger)
        assert outcome.result == "unchanged" and outcome.serial == 1
    assert target.reads == 5 and target.checks == [GOOD_1] and target.applied == [GOOD_1]
    # The watcher's and the poll's no-ops are quiet; SIGHUP's and admin's are recorded.
    assert policy.attempts == 3
    forced = policy.reload("admin", force=True)
    assert forced.result == "ok" and forced.serial == 2
    assert target.checks == [GOOD_1, GOOD_1] and len(target.applied) == 2


def test_failed_bytes_are_not_retried_by_the_watcher_but_are_by_an_admin() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start()
    target.data = BAD
    first = policy.reload("watch")
    assert first.result == "error" and first.step == "engine" and first.serial is None
    assert policy.reload("watch") is first  # reported once already: not checked again
    assert policy.reload("poll") is first
    assert target.checks == [GOOD_1, BAD]
    assert policy.reload("admin").result == "error"  # an admin asks again
    assert target.checks == [GOOD_1, BAD, BAD]
    assert target.applied == [GOOD_1]  # nothing of the bad bytes ever served
    assert policy.attempts == 3 and policy.last_error is not None


def test_restoring_the_served_bytes_after_an_error_records_unchanged() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start()
    target.data = BAD
    policy.reload("watch")
    target.data = GOOD_1
    outcome = policy.reload("watch")  # not quiet: it ends an error
    assert outcome.result == "unchanged" and policy.last is outcome
    assert policy.reload("watch").result == "unchanged" and policy.last is outcome  # quiet now
    assert policy.attempts == 3


def test_an_error_names_what_keeps_serving_when_asked() -> None:
    target = FakeTarget()
    policy = ReloadPolicy(target, wait=5.0, closing=target.closing.is_set, names_kept=True)
    policy.start()
    target.data = BAD
    assert policy.reload("admin").serial == 1


def test_a_read_failure_is_an_error_at_step_read() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start()
    target.unreadable = True
    outcome = policy.reload("signal")
    assert (outcome.result, outcome.step, outcome.content_hash) == ("error", "read", None)
    assert target.checks == [GOOD_1]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("refusals", [True, False], ids=["recorded", "answered only"])
def test_a_trigger_during_a_reload_is_answered_busy(refusals: bool) -> None:
    target = FakeTarget()
    policy = _policy(target, refusals=refusals, wait=0.2)
    policy.start()
    target.data, target.gate = GOOD_2, threading.Event()
    outcomes: list[ReloadOutcome] = []
    running = threading.Thread(target=lambda: outcomes.append(policy.reload("admin")))
    running.start()
    try:
        assert target.entered.wait(10)
        busy = policy.reload("signal")
        assert busy.result == "error" and busy.step == "busy"
        assert "another reload has been running for over 0.2s" in (busy.error or "")
        assert (policy.last is busy) is refusals
        assert target.reads == 2  # the busy trigger read nothing
    finally:
        target.gate.set()
        running.join(10)
    assert outcomes[0].result == "ok" and target.applied == [GOOD_1, GOOD_2]
    assert policy.attempts == (3 if refusals else 2)


def test_a_closing_policy_reads_nothing() -> None:
    target = FakeTarget()
    policy = _policy(target, refusals=True)
    policy.start()
    target.closing.set()
    target.data = GOOD_2
    outcome = policy.reload("admin")
    assert (outcome.result, outcome.error, outcome.step) == ("error", "shutting down", None)
    assert target.reads == 1 and target.checks == [GOOD_1]
    assert policy.apply(GOOD_2).error == "shutting down"
    assert target.applied == [GOOD_1]


@pytest.mark.timeout(30)
def test_a_reload_cancelled_while_it_applies_publishes_nothing() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start()
    target.data, target.gate = GOOD_2, threading.Event()
    outcomes: list[ReloadOutcome] = []
    running = threading.Thread(target=lambda: outcomes.append(policy.reload("watch")))
    running.start()
    try:
        assert target.entered.wait(10)
        target.closing.set()  # the shutdown's cancel, while the apply runs
    finally:
        target.gate.set()
        running.join(10)
    assert outcomes[0].error == "shutting down" and target.applied == [GOOD_1]
    assert policy.served is not None and policy.served[1] == 1  # still what serves
    assert policy.attempts == 1  # answered, not recorded (records_refusals=False)


def test_a_cancelled_start_raises() -> None:
    target = FakeTarget()
    target.closing.set()
    with pytest.raises(BuildError, match="shutdown began"):
        _policy(target).start()


def test_given_bytes_are_applied_without_a_read_or_an_unchanged_test() -> None:
    target = FakeTarget()
    policy = _policy(target)
    policy.start()
    same = policy.apply(GOOD_1)
    assert same.result == "ok" and same.trigger == "supervisor" and same.serial == 2
    assert target.reads == 1 and target.applied == [GOOD_1, GOOD_1]
    bad = policy.apply(BAD)
    assert bad.result == "error" and bad.step == "engine"


def test_listeners_see_quiet_outcomes_and_on_record_only_recorded_ones() -> None:
    target = FakeTarget()
    counted: list[str] = []
    shown: list[tuple[str, int]] = []
    policy = ReloadPolicy(
        target,
        wait=5.0,
        closing=target.closing.is_set,
        on_count=lambda o: counted.append(o.result),
        on_record=lambda o: shown.append((o.result, policy.attempts)),
    )
    heard: list[str] = []
    policy.listeners.append(lambda o: heard.append(o.result))
    policy.start()
    policy.reload("watch")  # quiet
    target.data = GOOD_2
    policy.reload("watch")
    assert heard == ["ok", "unchanged", "ok"]
    assert counted == ["ok", "ok"]
    assert shown == [("ok", 1), ("ok", 2)]  # after the outcome is kept
