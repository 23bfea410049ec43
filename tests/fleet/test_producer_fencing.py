"""The producer's fencing, in one process against the store's backends: no publish without
the lease, one generation announced once when two producers race (the interleaving
forced by a codec that blocks), a lost lease noticed, a failed publish retried."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

import resources
from resources.lowlevel import FILE_CODEC
from server.fleet import LEASES, FleetStore, RevisionConflictError, open_store
from server.fleet._leadership import Leadership
from server.fleet._publishing import Announcer, FleetPublishingFetcher, NotLeaderError

from ._producer import announcement, generations

pytestmark = pytest.mark.timeout(120)

WAIT = 30.0


def _value(n: int) -> resources.FileMapping:
    value = resources.FileMapping({"k": {"n": n}})
    value.source = "feed.json"
    return value


def _publish(announcer: Announcer, n: int) -> None:
    announcer.publish("feed", "json_file", "json_file-abc", FILE_CODEC, _value(n))


def test_a_producer_without_the_lease_publishes_nothing(store: FleetStore, tmp_path: Path) -> None:
    leading = [True]
    announcer = Announcer(store, tmp_path, lambda: leading[0])
    _publish(announcer, 1)
    leading[0] = False
    with pytest.raises(NotLeaderError, match="resource 'feed': not published"):
        _publish(announcer, 2)
    assert generations(store, "feed") == [1]
    assert len(store.objects()) == 1


class _BlockingCodec:
    """FILE_CODEC that waits in ``write`` until released (after the rival published)."""

    def __init__(self) -> None:
        self.writing = threading.Event()
        self.release = threading.Event()

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        self.writing.set()
        assert self.release.wait(WAIT)
        return FILE_CODEC.write(value, stem)

    def open(self, stem: Path, generation: int) -> Any:
        return FILE_CODEC.open(stem, generation)


def test_two_producers_racing_announce_one_generation_once(
    store: FleetStore, tmp_path: Path
) -> None:
    slow, fast = (Announcer(store, tmp_path / n, lambda: True) for n in ("slow", "fast"))
    for announcer in (slow, fast):
        announcer.workdir.mkdir()
    codec = _BlockingCodec()
    failed: list[BaseException] = []

    def publish_slowly() -> None:
        try:
            slow.publish("feed", "json_file", "json_file-abc", codec, _value(1))
        except BaseException as exc:
            failed.append(exc)

    racer = threading.Thread(target=publish_slowly)
    racer.start()
    assert codec.writing.wait(WAIT)  # slow read "no generation yet" and is writing 1
    _publish(fast, 2)  # fast announces generation 1 meanwhile
    codec.release.set()
    racer.join(WAIT)
    assert not racer.is_alive()
    (error,) = failed
    assert isinstance(error, RevisionConflictError)
    assert generations(store, "feed") == [1]  # announced once, by the fast one
    current = announcement(store, "feed")
    assert current is not None
    assert [info.name for info in store.objects()] == [current.object]  # the loser's went


class _Inner:
    """A fetcher that records what a carry-over told it."""

    def __init__(self) -> None:
        self.resumed: list[Any] = []

    def __call__(self) -> Any:
        return _value(0)

    def carry_over(self, value: Any) -> None:
        self.resumed.append(value)


def test_a_failed_publish_rewinds_the_fetcher_to_what_was_announced(
    store: FleetStore, tmp_path: Path
) -> None:
    leading = [True]
    inner = _Inner()
    fetcher = FleetPublishingFetcher(
        inner,
        Announcer(store, tmp_path, lambda: leading[0]),
        "feed",
        "json_file",
        "json_file-abc",
        FILE_CODEC,
    )
    first, second = _value(1), _value(2)
    fetcher.commit(first)
    assert fetcher.announced is not None and fetcher.announced.generation == 1
    leading[0] = False
    with pytest.raises(NotLeaderError):
        fetcher.commit(second)
    # Its change detection starts again from the value announced: the change is read again.
    assert inner.resumed == [first]
    leading[0] = True
    fetcher.commit(second)
    assert generations(store, "feed") == [1, 2]


def test_a_lease_taken_by_another_is_noticed_and_never_held_again(store: FleetStore) -> None:
    lost = threading.Event()
    leading = Leadership(store, "producer-a", ttl=0.6, on_lost=lost.set)
    assert leading.acquire() and leading.held()
    record = store.get(LEASES, "producer")
    assert record is not None
    # Another producer takes it over (as after a lapse): a compare-and-set at its revision.
    store.update(
        LEASES,
        "producer",
        orjson.dumps({"holder": "producer-b", "expires": 4e9}),
        revision=record.revision,
    )
    assert lost.wait(WAIT)  # the next renewal (every ttl / 3) is refused
    assert not leading.held()
    assert not leading.acquire()  # producer-b holds it
    leading.stop(release=True)  # not held: nothing released
    record = store.get(LEASES, "producer")
    assert record is not None and orjson.loads(record.value)["holder"] == "producer-b"


def test_a_standby_without_a_store_says_so_once_and_takes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = open_store("nats://127.0.0.1:20698", timeout=0.5)  # nothing listens there
    try:
        leading = Leadership(store, "producer-a", ttl=2.0)
        with caplog.at_level(logging.WARNING, logger="pineapple.fleet"):
            assert not leading.acquire()
            assert not leading.acquire()
        assert not leading.held()
        said = [r.getMessage() for r in caplog.records if "lease" in r.getMessage()]
        assert len(said) == 1 and said[0].startswith("cannot take the producer lease: ")
        assert "127.0.0.1:20698" in said[0]
    finally:
        store.close()


class _StalledLease:
    """A lease whose renewal hangs until released; ``held`` is the test's to say."""

    def __init__(self) -> None:
        self.holding = True
        self.renewing = threading.Event()
        self.answer = threading.Event()

    def acquire(self) -> bool:
        return True

    def held(self) -> bool:
        return self.holding

    def renew(self) -> bool:
        self.renewing.set()
        assert self.answer.wait(WAIT)
        return False

    def release(self) -> None:  # pragma: no cover - never held when released here
        raise AssertionError("released a lapsed lease")


@pytest.mark.parametrize("first", ["the leader's loop", "the renew thread"])
def test_a_lapsed_lease_is_said_lost_once_whoever_finds_it_first(
    first: str, caplog: pytest.LogCaptureFixture
) -> None:
    lost = threading.Event()
    leading = Leadership(None, "producer-a", ttl=0.3, on_lost=lost.set)  # type: ignore[arg-type]
    lease = _StalledLease()
    leading._lease = lease  # type: ignore[assignment]
    caplog.set_level(logging.ERROR, "pineapple.fleet")
    assert leading.acquire() and leading.held()
    thread = leading._thread
    assert thread is not None
    assert lease.renewing.wait(WAIT)  # the renewal hangs (the store went away)
    lease.holding = False  # and meanwhile the lease lapses
    assert not leading.held()
    if first == "the renew thread":
        lease.answer.set()  # the renewal fails; the thread finds the lease gone
        assert lost.wait(WAIT)
        leading.stop(release=False)
    else:
        leading.stop(release=False)  # the loop saw it first; the thread still hangs
        assert leading.lost.is_set() and not lost.is_set()  # said, not woken: it stops
        lease.answer.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    said = [r.getMessage() for r in caplog.records if "lost the producer lease" in r.getMessage()]
    assert len(said) == 1, said
    assert not leading.held() and leading.lost.is_set()
