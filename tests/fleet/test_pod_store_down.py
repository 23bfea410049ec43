"""A pod whose fleet store is down: it starts from its cache, says so, and catches up.

Against a real ``nats-server -js`` of the test's own (``tests/fleet/_nats.py``),
killed and started again on its ports and store directory; each test in one
process and with ``--workers 2``, with the same expected answers. The pods
have no config file: the config comes from the fleet too (and from the cache
while the store is down).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._nats import NatsCluster, nats_cluster
from ._pods import IN_BOTH_MODES, NAME, Fleet, wait_until

START_WITHIN = 5.0
"""Seconds from a pod's start (its process spawned) to serving its cached generation. On a
box so loaded that the same pod took longer to start with its store up, the bound is that
start with room for the load's own variation (half of it) plus ``STORE_DOWN_COSTS``; the
log shows the store itself was waited for 0.5 s only."""
STORE_DOWN_COSTS = 1.0
"""Seconds a store that does not answer may add to a pod's start (it waits 0.5 s for it)."""
SAYS_DOWN_WITHIN = 10.0
"""Seconds from the store's end to a running pod's ``Fresh=False`` (a heartbeat's deadline)."""
CATCH_UP_WITHIN = 15.0
"""Seconds from the store's return to the pod serving what it announced (retries back off
to 5 s, plus one reconnect)."""

pytestmark = [
    pytest.mark.timeout(300),
    IN_BOTH_MODES,  # nats-py's unclosed StreamWriter: tests/fleet/conftest.py
]


@pytest.fixture
def nats(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "nats") as cluster:
        yield cluster


@pytest.mark.parametrize("down", ["killed", "silent"])
def test_a_pod_restarted_while_the_store_is_down_serves_its_cache_then_catches_up(
    nats: NatsCluster, mode: tuple[str, ...], tmp_path: Path, down: str
) -> None:
    """``killed``: connections are refused; ``silent``: SIGSTOP, connections are accepted and
    nothing answers (the unbounded case: every wait must have its own deadline)."""
    fleet = Fleet(tmp_path / "fleet", url=nats.url)
    try:
        revision = fleet.put_config(fleet.config("fleet-config"))
        fleet.publish(1)
        cache = tmp_path / "cache"
        started = time.monotonic()
        node = nats.nodes[0]
        with fleet.pod(mode, own_config=False, cache=cache) as pod:
            assert pod.serves(1) and pod.tag() == "fleet-config"
            store_up_start = time.monotonic() - started
            assert pod.fresh()["status"] == "True"
            node.kill() if down == "killed" else node.pause()
            wait_until(  # its heartbeat (every 0.5 s here) finds the store gone
                "the running pod says its store is down",
                lambda: pod.fresh()["reason"] == "FleetStoreUnavailable",
                SAYS_DOWN_WITHIN,
            )
            assert pod.serves(1)

        started = time.monotonic()
        with fleet.pod(mode, own_config=False, cache=cache) as pod:
            assert pod.serves(1) and pod.tag() == "fleet-config"
            took = time.monotonic() - started
            bound = max(START_WITHIN, 1.5 * store_up_start + STORE_DOWN_COSTS)
            assert took < bound, (
                f"served its cache {took:.1f}s after its start (up: {store_up_start:.1f}s)"
            )
            assert pod.count("no answer within 0.5s; serving its cached generation 1") == 1
            fresh = pod.fresh()
            assert fresh["status"] == "False" and fresh["reason"] == "FleetStoreUnavailable"
            assert f"127.0.0.1:{node.port}" in fresh["message"], fresh
            ready = pod.get("/readyz")
            assert ready.status_code == 200
            assert "FleetStoreUnavailable" in ready.json()["stale"][NAME]
            # the config too serves from the cache, and both answers say so
            config_stale = ready.json()["config_stale"]
            assert config_stale.startswith("FleetStoreUnavailable: the fleet store "), config_stale
            assert config_stale.endswith(
                f"; serving config revision {revision} from the pod's cache"
            ), config_stale
            # With --workers the status is the supervisor's, posted every half second: the
            # revision it accepted may reach the post after the stale reason did.
            wait_until(
                "the cached revision shown",
                lambda: pod.get("/config").json()["config_source"]["revision"] == revision,
            )
            source = pod.get("/config").json()["config_source"]
            assert source["revision"] == revision and source["stale"] == config_stale, source

            node.start() if down == "killed" else node.resume()
            nats.wait_ready()
            fleet.publish(2)
            fleet.put_config(fleet.config("new-config"))
            wait_until("generation 2 served", lambda: pod.serves(2), CATCH_UP_WITHIN)
            wait_until("the new config served", lambda: pod.tag() == "new-config")
            # With --workers the status is the supervisor's, posted every half second.
            wait_until("Fresh again", lambda: pod.fresh()["status"] == "True")
            wait_until("/readyz stale no more", lambda: "stale" not in pod.get("/readyz").json())
            assert "config_stale" not in pod.get("/readyz").json()
            source = pod.get("/config").json()["config_source"]
            assert source["stale"] is None and source["revision"] > revision, source
    finally:
        fleet.close()
