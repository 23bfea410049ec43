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

from ._pods import IN_BOTH_MODES, Fleet, wait_until
from ._producer import Publisher, announcement, write_config

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
