"""The whole loop: a real ``pineapple publish`` and a real pod without a config file.

The producer reads a ``json_file`` source and publishes it and its config; the
pod (one process and ``--workers 2``, the same answers) serves that config and
that generation, never the file, and follows the next change the producer
publishes. Waits poll with deadlines.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ._nats import nats_cluster
from ._pods import IN_BOTH_MODES, Fleet, wait_until
from ._producer import ROWS, Publisher, Source, announcement, write_config
from ._producer import source as source  # the fixture

pytestmark = [pytest.mark.timeout(240), IN_BOTH_MODES]

FOLLOW_WITHIN = 30.0
"""Seconds from a source change to the pod serving it: the producer's 1 s interval, its
publish, the pod's watch and download, on a busy box."""


def _rows(generation: int) -> bytes:
    return orjson.dumps([{"id": f"g{generation}-{i}", "tag": "fleet"} for i in range(generation)])


def test_a_pod_serves_what_the_producer_publishes_and_follows_it(
    tmp_path: Path, mode: tuple[str, ...]
) -> None:
    with Fleet(tmp_path) as fleet:
        fleet.source.write_bytes(_rows(1))
        config = fleet.config("published")
        config["resource_config"]["cands"]["interval"] = 1
        # relative to the producer's config: a pod without a config resolves it elsewhere
        # (its cache), and must still take the announcement as its resource's
        config["resource_config"]["cands"]["params"]["path"] = fleet.source.name
        producer_config = tmp_path / "producer.json"
        write_config(producer_config, config)
        with Publisher(producer_config, fleet.url):
            wait_until(
                "generation 1 announced",
                lambda: (a := announcement(fleet.store, "cands")) is not None and a.generation >= 1,
                FOLLOW_WITHIN,
            )
            with fleet.pod(mode, own_config=False) as pod:
                assert pod.tag() == "published"
                assert pod.generations() == {1}
                assert pod.status()["source"] == "fleet"
                fleet.source.write_bytes(_rows(2))  # the producer reads it, the pod never
                wait_until("the pod serves the change", lambda: pod.serves(2), FOLLOW_WITHIN)


def test_a_mariadb_table_the_producer_reads_into_arrow_serves_on_every_pod(
    tmp_path: Path, mode: tuple[str, ...], source: Source
) -> None:
    """``feed_data`` with ``loader: "arrow"`` at the producer (connectorx, the mapped snapshot
    written by its loader child), over a real NATS JetStream: the pod (no config of its
    own, one process and ``--workers 2``) serves the table's rows, then the change."""
    config = source.config()
    config["resource_config"]["feed"]["params"]["loader"] = "arrow"
    producer_config = tmp_path / "producer.json"
    write_config(producer_config, config)
    with (
        nats_cluster(tmp_path / "nats") as nats,
        Fleet(tmp_path / "fleet", url=nats.url) as fleet,
        Publisher(producer_config, fleet.url),
    ):
        wait_until(
            "generation 1 announced",
            lambda: announcement(fleet.store, "feed") is not None,
            FOLLOW_WITHIN,
        )
        with fleet.pod(mode, own_config=False) as pod:

            def ids() -> list[int]:
                return [int(item["id"]) for item in pod.answer()]

            assert ids() == list(range(ROWS))
            response = pod.get("/resources/feed")
            assert response.json()["status"]["source"] == "fleet"
            source.bump(5, ROWS)  # five rows more, the version moved: one change
            wait_until(
                "the pod serves the change",
                lambda: all(ids() == list(range(ROWS + 5)) for _ in range(4)),
                FOLLOW_WITHIN,
            )
            assert (a := announcement(fleet.store, "feed")) is not None and a.generation == 2


def test_a_delta_read_at_the_producer_serves_on_every_pod_what_a_full_read_serves(
    tmp_path: Path, mode: tuple[str, ...], source: Source
) -> None:
    """``feed_data`` with a ``delta_query`` at the producer: a change (two rows updated,
    five added) is read as a delta, merged into the producer's table and published; the
    pod (one process and ``--workers 2``) then answers exactly the table read whole, and
    the producer logged one delta read for it."""
    with source.conn.cursor() as cur:
        cur.execute(f"ALTER TABLE `{source.table}` ADD updated_at BIGINT NOT NULL DEFAULT 0")
    config = source.config()
    params = config["resource_config"]["feed"]["params"]
    params["loader"] = "arrow"
    params["delta_query"] = f"SELECT * FROM `{source.table}` WHERE updated_at > %(since)s"
    params["delta_column"] = "updated_at"
    producer_config = tmp_path / "producer.json"
    write_config(producer_config, config)
    with (
        nats_cluster(tmp_path / "nats") as nats,
        Fleet(tmp_path / "fleet", url=nats.url) as fleet,
        Publisher(producer_config, fleet.url) as publisher,
    ):
        wait_until(
            "generation 1 announced",
            lambda: announcement(fleet.store, "feed") is not None,
            FOLLOW_WITHIN,
        )
        with fleet.pod(mode, own_config=False) as pod:

            def served() -> list[tuple[int, float]]:
                return [(int(item["id"]), float(item["score"])) for item in pod.answer()]

            assert served() == [(i, 1.0) for i in range(ROWS)]
            with source.conn.cursor() as cur:
                cur.execute(
                    f"UPDATE `{source.table}` SET score = 7.5, updated_at = 1 WHERE id IN (3, 17)"
                )
                cur.executemany(
                    f"INSERT INTO `{source.table}` VALUES (%s, 2.0, 2)",
                    [(i,) for i in range(ROWS, ROWS + 5)],
                )
                cur.execute(f"UPDATE `{source.version}` SET v = v + 1")
                cur.execute(f"SELECT id, score FROM `{source.table}` ORDER BY id")
                whole = [(int(i), float(s)) for i, s in cur.fetchall()]
            assert len(whole) == ROWS + 5 and whole[3] == (3, 7.5)
            wait_until(
                "the pod serves the change",
                lambda: all(served() == whole for _ in range(4)),
                FOLLOW_WITHIN,
            )
            assert (a := announcement(fleet.store, "feed")) is not None and a.generation == 2
            assert (
                publisher.count(r"delta read since updated_at=0 merged into 50 rows \(55 now\)")
                == 1
            )
