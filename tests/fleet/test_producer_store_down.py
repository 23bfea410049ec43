"""``pineapple publish`` whose NATS store is killed while it leads: it cannot renew its
lease, so it stops publishing and stands by; once the store is back it leads again and
publishes the change it missed, once. A ``nats-server -js`` of the test's own (it is
killed: never the shared one), real MariaDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.fleet import open_store

from ._nats import nats_cluster
from ._producer import (
    ROWS,
    WAIT,
    Publisher,
    Source,
    generations,
    wait_until,
    write_config,
)
from ._producer import source as source  # the fixture
from .conftest import LIMITS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def test_a_leader_whose_store_dies_stands_by_and_leads_again_when_it_returns(
    tmp_path: Path, source: Source
) -> None:
    config = tmp_path / "config.json"
    write_config(config, source.config())
    with nats_cluster(tmp_path / "nats") as cluster:
        (node,) = cluster.nodes
        store = open_store(cluster.url, timeout=2.0, limits=LIMITS)
        try:
            args = ("--no-watch", "--lease-ttl", "3", "--fleet-timeout", "1")
            with Publisher(config, cluster.url, *args) as producer:
                wait_until("generation 1", lambda: generations(store, "feed") == [1])
                node.kill()
                producer.wait_log("lost the producer lease", timeout=WAIT)
                producer.wait_log("standing by again after losing the lease")
                source.bump(4, ROWS)  # changed while no producer may publish
                node.start()
                cluster.wait_ready()
                producer.wait_log("leading: took the producer lease", times=2, timeout=WAIT)
                wait_until("the missed change", lambda: len(generations(store, "feed")) >= 2)
                assert generations(store, "feed") == [1, 2]  # published once, none twice
                assert producer.stop() == 0
        finally:
            store.close()
