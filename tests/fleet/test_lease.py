"""``Lease`` on every backend: one holder wins, an expired one is taken over, a lost one knows."""

from __future__ import annotations

import threading

import orjson
import pytest

from server.fleet import LEASES, FleetStore, Lease

pytestmark = pytest.mark.timeout(120)


class Clock:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_two_candidates_one_wins(store: FleetStore) -> None:
    clock = Clock()
    a, b = (Lease(store, name, ttl=30.0, clock=clock) for name in ("a", "b"))
    won: list[str] = []
    both_ready = threading.Barrier(2, timeout=30)

    def race(lease: Lease) -> None:
        both_ready.wait()
        if lease.acquire():
            won.append(lease.holder)

    threads = [threading.Thread(target=race, args=(lease,)) for lease in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(won) == 1
    winner, loser = (a, b) if won == ["a"] else (b, a)
    assert winner.held() and not loser.held()
    assert not loser.acquire()  # not expired
    assert winner.renew() and winner.held()
    record = store.get(LEASES, "producer")
    assert record is not None and orjson.loads(record.value)["holder"] == winner.holder


def test_an_expired_holder_is_taken_over_and_its_renew_is_false(store: FleetStore) -> None:
    clock = Clock()
    a = Lease(store, "a", ttl=10.0, clock=clock)
    b = Lease(store, "b", ttl=10.0, clock=clock)
    assert a.acquire()
    assert not b.acquire()
    clock.now += 10.5  # a did not renew in time
    assert b.acquire() and b.held()
    assert not a.renew()
    assert not a.held()
    assert b.renew()


def test_release_frees_the_lease_at_once(store: FleetStore) -> None:
    clock = Clock()
    a = Lease(store, "a", ttl=60.0, clock=clock)
    b = Lease(store, "b", ttl=60.0, clock=clock)
    assert a.acquire()
    a.release()
    assert not a.held() and not a.renew()
    assert b.acquire()
    a.release()  # not held: nothing happens
    assert b.renew()


def test_a_holder_restarted_under_its_name_takes_its_lease_back(store: FleetStore) -> None:
    clock = Clock()
    assert Lease(store, "a", ttl=60.0, clock=clock).acquire()
    again = Lease(store, "a", ttl=60.0, clock=clock)
    assert again.acquire() and again.renew()
    assert not Lease(store, "b", ttl=60.0, clock=clock).acquire()
