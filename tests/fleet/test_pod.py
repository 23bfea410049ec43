"""A pod in the fleet (``serve --fleet``), against real processes and a directory store
(the fleet-wide tests, several pods and a fleet pin, on a real nats-server too).

Each test runs in one process and with ``--workers 2`` and expects the same
answers. The source of the fleet resource is deleted as soon as a generation
is published (``tests/fleet/_pods.py``): every row a pod serves came from the
fleet. Waits poll with a deadline; the pods' fallback poll (60 s) is past
every bound, so only the watch can make them change in time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from server.fleet import ANNOUNCEMENTS, PINS, PODS

from ._nats import nats_cluster
from ._pods import IN_BOTH_MODES, NAME, Fleet, wait_until

FOLLOW_WITHIN = 30.0
"""Seconds from an announcement to every pod serving it (the watch polls every 50 ms). The
watch itself answers in well under a second; the rest is a reload's build on a CI machine
that may run several suites at once."""

pytestmark = [pytest.mark.timeout(240), IN_BOTH_MODES]


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    """A fleet on a directory store, or (``indirect`` param ``nats``) on a real nats-server."""
    if getattr(request, "param", "directory") == "directory":
        with Fleet(tmp_path) as made:
            yield made
        return
    with nats_cluster(tmp_path / "nats") as nats, Fleet(tmp_path / "fleet", url=nats.url) as made:
        yield made


ON_BOTH_STORES = pytest.mark.parametrize("fleet", ["directory", "nats"], indirect=True)
"""The fleet-wide tests run on both store backends."""


def test_a_published_generation_is_served_within_the_bound(
    fleet: Fleet, mode: tuple[str, ...]
) -> None:
    fleet.publish(1)
    with fleet.pod(mode) as pod:
        assert pod.serves(1)
        status = pod.status()
        assert status["source"] == "fleet"
        assert status["source_detail"]["generation"] == 1
        assert status["source_detail"]["announcement"]["params_hash"] == fleet.params_hash()
        announced = fleet.publish(2)
        started = time.monotonic()
        wait_until("generation 2 served", lambda: pod.serves(2), FOLLOW_WITHIN)
        assert time.monotonic() - started < FOLLOW_WITHIN
        # With --workers the status is the supervisor's, posted every half second.
        wait_until(
            "the status names generation 2",
            lambda: pod.status()["source_detail"]["generation"] == 2,
        )
        assert pod.status()["source_detail"]["announcement"]["digest"] == announced.digest
        assert pod.fresh()["status"] == "True"


@ON_BOTH_STORES
def test_several_pods_serve_the_same_generation_and_say_so(
    fleet: Fleet, mode: tuple[str, ...]
) -> None:
    fleet.publish(1)
    with fleet.pod(mode, pod_id="pod-a") as a, fleet.pod(mode, pod_id="pod-b") as b:
        fleet.publish(2)
        for pod in (a, b):
            wait_until("generation 2 served", lambda p=pod: p.serves(2), FOLLOW_WITHIN)

        def beats() -> dict[str, dict[str, object]]:
            records = {k: fleet.store.get(PODS, k) for k in fleet.store.keys(PODS)}
            return {k: orjson.loads(r.value) for k, r in records.items() if r is not None}

        wait_until(
            "both heartbeats name generation 2",
            lambda: (
                {k: v["resources"] for k, v in beats().items()}
                == {"pod-a": {NAME: 2}, "pod-b": {NAME: 2}}
            ),
        )
        beat = beats()["pod-a"]
        assert beat["pod"] == "pod-a" and beat["config_revision"] is None  # its own file
        assert float(str(beat["since"])) <= float(str(beat["time"]))
    assert fleet.store.keys(PODS) == []  # a clean stop deletes its heartbeat


@ON_BOTH_STORES
def test_a_pin_is_served_by_every_pod_and_survives_a_restart(
    fleet: Fleet, mode: tuple[str, ...], tmp_path: Path
) -> None:
    fleet.publish(1)
    fleet.publish(2)
    cache = tmp_path / "kept-cache"
    with fleet.pod(mode, cache=cache) as pod:
        assert pod.serves(2)
        fleet.pin(1, reason="generation 2 is wrong")
        wait_until("the pinned generation 1 served", lambda: pod.serves(1), FOLLOW_WITHIN)
        wait_until(
            "the status names the pin", lambda: pod.status()["source_detail"]["pin"] is not None
        )
        pin = pod.status()["source_detail"]["pin"]
        assert pin["generation"] == 1 and pin["reason"] == "generation 2 is wrong"
        fleet.publish(3)  # a newer announcement does not move a pinned pod
        wait_until(
            "the pod has seen generation 3's announcement",
            lambda: pod.count("serving fleet generation") >= 2,
        )
    with fleet.pod(mode, cache=cache) as restarted:
        assert restarted.serves(1)
        fleet.store.delete(PINS, NAME)
        wait_until("unpinned: generation 3 served", lambda: restarted.serves(3), FOLLOW_WITHIN)


def test_a_corrupted_snapshot_is_refused_and_the_old_one_serves(
    fleet: Fleet, mode: tuple[str, ...], tmp_path: Path
) -> None:
    fleet.publish(1)
    with fleet.pod(mode) as pod:
        assert pod.serves(1)
        # Generation 2 published elsewhere, its object stored here with one byte flipped.
        elsewhere = Fleet(tmp_path / "elsewhere", source=fleet.source)
        try:
            announcement = elsewhere.publish(2)
            bundle = tmp_path / "bundle"
            elsewhere.store.get_object(announcement.object, bundle, max_bytes=1 << 20)
        finally:
            elsewhere.close()
        data = bytearray(bundle.read_bytes())
        data[len(data) // 2] ^= 0xFF
        bundle.write_bytes(bytes(data))
        fleet.store.put_object(announcement.object, bundle)
        fleet.store.put(ANNOUNCEMENTS, NAME, announcement.to_json())
        wait_until(
            "the pod refused generation 2",
            lambda: "DigestMismatchError" in str(pod.status()["last_error"]),
            FOLLOW_WITHIN,
        )
        assert pod.serves(1)
        assert pod.status()["source_detail"]["generation"] == 1
        fleet.publish(3)  # the next good generation is served
        wait_until("generation 3 served", lambda: pod.serves(3), FOLLOW_WITHIN)


def test_an_announcement_for_other_params_is_refused_by_name(
    fleet: Fleet, mode: tuple[str, ...]
) -> None:
    fleet.publish(1)
    with fleet.pod(mode) as pod:
        assert pod.serves(1)
        record = fleet.store.get(ANNOUNCEMENTS, NAME)
        assert record is not None
        other = orjson.loads(record.value)
        other.update(generation=2, params_hash="json_file-000000000000000000000000")
        fleet.store.put(ANNOUNCEMENTS, NAME, orjson.dumps(other))
        wait_until(
            "the pod refused the announcement",
            lambda: "ParamsMismatchError" in str(pod.status()["last_error"]),
            FOLLOW_WITHIN,
        )
        error = str(pod.status()["last_error"])
        assert f"resource '{NAME}'" in error and "json_file-000000000000000000000000" in error
        assert pod.serves(1)
