"""``pineapple publish``: a real producer process, real MariaDB, the fleet store's backends.

What it publishes is read from the store; what it reads from MariaDB is
counted on MariaDB's side (``TABLE_STATISTICS`` under ``userstat_on``): the
version table is read one row per refresh, so its count says how many
refreshes ran, and the data table's count how many full reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks._mariadb import rows_read, userstat_on
from server.fleet import CONFIG, LEASES, FleetStore
from tests.server.pod import pipeline_config

from .._mariadb import waiting_for_lock
from ._producer import (
    ROWS,
    WAIT,
    Publisher,
    Source,
    announcement,
    generations,
    wait_until,
    write_config,
)
from ._producer import source as source  # the fixture

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.mark.parametrize("loader", ["thread", "arrow"])
def test_one_publish_and_one_full_read_per_change_and_none_when_unchanged(
    store: FleetStore, store_url: str, tmp_path: Path, source: Source, loader: str
) -> None:
    config = tmp_path / "config.json"
    entry = source.config()
    entry["resource_config"]["feed"]["params"]["loader"] = loader
    data = write_config(config, entry)
    with userstat_on(source.conn):
        before = rows_read(source.conn, source.table)
        checks = rows_read(source.conn, source.version)

        def reads() -> int:
            return rows_read(source.conn, source.table) - before

        def refreshes() -> int:
            return rows_read(source.conn, source.version) - checks

        with Publisher(config, store_url, "--no-watch") as producer:
            wait_until("generation 1", lambda: announcement(store, "feed") is not None)
            first = announcement(store, "feed")
            assert first is not None and first.generation == 1
            assert first.type == "feed_data" and first.source_version == "[1]"
            # The config goes after the announcements it names.
            wait_until("the config", lambda: store.get(CONFIG, "current") is not None)
            current = store.get(CONFIG, "current")
            assert current is not None and current.value == data  # the config it was given
            assert announcement(store, "flags") is None  # static: no codec, not loaded
            wait_until("the first full read counted", lambda: reads() >= ROWS)

            # Unchanged: every refresh reads the version (one row) and publishes nothing.
            seen = refreshes()
            wait_until("three more refreshes", lambda: refreshes() >= seen + 3)
            assert reads() == ROWS
            assert generations(store, "feed") == [1]

            source.bump(10, ROWS)
            wait_until("generation 2", lambda: generations(store, "feed") == [1, 2])
            wait_until("the second full read counted", lambda: reads() >= 2 * ROWS + 10)
            seen = refreshes()
            wait_until("three more refreshes", lambda: refreshes() >= seen + 3)
            assert reads() == 2 * ROWS + 10  # exactly one full read for the change
            assert generations(store, "feed") == [1, 2]  # one publish for the change
            second = announcement(store, "feed")
            assert second is not None and second.source_version == "[2]"
            assert second.object != first.object and second.digest != first.digest
            assert store.get(CONFIG, "current") == current  # the same bytes: not put again
            assert producer.stop() == 0


def test_a_value_the_validators_refuse_is_not_published(
    store: FleetStore, store_url: str, tmp_path: Path, source: Source
) -> None:
    config = tmp_path / "config.json"
    write_config(
        config,
        source.config(validate={"max_change_ratio": 0.5}),
    )
    with Publisher(config, store_url, "--no-watch") as producer:
        wait_until("generation 1", lambda: announcement(store, "feed") is not None)
        before = store.get("pineapple-announcements", "feed")
        source.bump(ROWS, ROWS)  # twice the rows: refused
        producer.wait_log(r"refresh of feed_data/feed refused \(Valid=False\)")
        assert store.get("pineapple-announcements", "feed") == before  # unchanged
        assert generations(store, "feed") == [1]
        source.bump(10, 2 * ROWS)  # 110 vs 50 rows: still refused
        producer.wait_log(r"refresh of feed_data/feed refused", times=2)
        assert generations(store, "feed") == [1]
        assert producer.stop() == 0


def test_a_config_change_is_published_and_a_bad_one_refused(
    store: FleetStore, store_url: str, tmp_path: Path, source: Source
) -> None:
    config = tmp_path / "config.json"
    body = source.config()
    write_config(config, body)
    with Publisher(config, store_url, "--poll-seconds", "1") as producer:
        wait_until("generation 1", lambda: announcement(store, "feed") is not None)
        wait_until("the config", lambda: _current(store) is not None)  # after the announcement
        body["pipeline_config"]["operators"]["recall"]["max_size"] = 99
        changed = write_config(config, body)
        wait_until("the changed config", lambda: _current(store) == changed)
        assert generations(store, "feed") == [1]  # its feed entry is unchanged: carried over

        config.write_text('{"resource_config": {"feed": {"type": "nope"}}')  # not JSON
        producer.wait_log(r"config reload \(\w+\) refused, the producer keeps producing")
        assert _current(store) == changed
        source.bump(5, ROWS)  # the last good config still produces
        wait_until("generation 2", lambda: generations(store, "feed") == [1, 2])
        assert producer.stop() == 0


def _current(store: FleetStore) -> bytes | None:
    record = store.get(CONFIG, "current")
    return None if record is None else record.value


def _holder(store: FleetStore) -> str:
    import orjson

    record = store.get(LEASES, "producer")
    assert record is not None
    doc = orjson.loads(record.value)
    return str(doc["holder"]) if doc["expires"] > 0 else ""


def test_the_standby_leads_when_the_leader_is_killed_and_no_generation_is_published_twice(
    store: FleetStore, store_url: str, tmp_path: Path, source: Source
) -> None:
    import time

    ttl = 4.0  # short for the test; long enough that a busy machine renews in time
    config = tmp_path / "config.json"
    write_config(config, source.config())
    args = ("--no-watch", "--lease-ttl", str(ttl))
    with (
        Publisher(config, store_url, *args) as first,
        Publisher(config, store_url, *args) as second,
    ):
        wait_until("generation 1", lambda: announcement(store, "feed") is not None)
        leader, standby = (first, second) if first.count("leading: took") else (second, first)
        assert leader.count("leading: took") == 1
        standby.wait_log("standing by: another producer holds the lease")
        assert standby.count("leading: took") == 0
        assert generations(store, "feed") == [1]

        leader.kill()  # SIGKILL: the lease is not released, it lapses
        killed = time.monotonic()
        standby.wait_log("leading: took the producer lease", timeout=ttl + WAIT)
        took = time.monotonic() - killed
        # The lease lapses ttl after the leader's last renewal (at most ttl ago);
        # the standby tries every ttl / 4; the rest is process and log latency.
        assert took < ttl + ttl / 4 + 5.0, f"the standby took {took:.1f}s to lead"

        # Its first read finds the version generation 1 holds: nothing announced again.
        standby.wait_log(r"generation 1 already holds source version \[1\]; not announced again")
        source.bump(7, ROWS)
        wait_until("the new leader's generation", lambda: len(generations(store, "feed")) >= 2)
        assert generations(store, "feed") == [1, 2]  # none announced twice, none skipped

        assert standby.stop() == 0  # SIGTERM: the lease is released at once
        assert _holder(store) == ""


def test_sigterm_releases_the_lease_so_the_standby_leads_at_once(
    store: FleetStore, store_url: str, tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    config = tmp_path / "config.json"
    body = pipeline_config(
        {"type": "json_file", "interval": 600, "params": {"path": str(feed)}},
        {"type_name": "recall_resource", "resource_name": "feed"},
    )
    write_config(config, body)
    ttl = "600"  # a lapse would take ten minutes: only a release lets the standby lead
    with Publisher(config, store_url, "--lease-ttl", ttl) as first:
        first.wait_log("leading: took")
        wait_until("generation 1", lambda: announcement(store, "feed") is not None)
        with Publisher(config, store_url, "--lease-ttl", ttl) as second:
            second.wait_log("standing by")
            assert first.stop() == 0
            first.wait_log("released the producer lease")
            second.wait_log("leading: took", timeout=WAIT)
            # The new leader fetched json_file anew; same rows, so the same bytes.
            second.wait_log(r"published the fleet config|config \w+ reloaded")
            assert second.stop() == 0


def test_sigterm_during_a_first_load_that_never_ends_stops_it_and_releases_the_lease(
    store: FleetStore,
    store_url: str,
    tmp_path: Path,
    source: Source,
    mysql_params: dict[str, Any],
) -> None:
    import time

    import pymysql

    config = tmp_path / "config.json"
    write_config(config, source.config())
    locker = pymysql.connect(autocommit=True, **mysql_params)
    try:
        with locker.cursor() as cur:
            cur.execute(f"LOCK TABLES `{source.table}` WRITE")  # the first read waits
        with Publisher(config, store_url, "--start-timeout", "600") as producer:
            producer.wait_log("leading: took")
            wait_until("the read waits", lambda: waiting_for_lock(source.conn, source.table))
            asked = time.monotonic()
            assert producer.stop() == 0
            stopped = time.monotonic() - asked
            assert stopped < 15.0, f"SIGTERM took {stopped:.1f}s with a load in flight"
            assert _holder(store) == ""  # released
            assert announcement(store, "feed") is None  # nothing of it published
            assert store.get(CONFIG, "current") is None
    finally:
        with locker.cursor() as cur:
            cur.execute("UNLOCK TABLES")
        locker.close()
