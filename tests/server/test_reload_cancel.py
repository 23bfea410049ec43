"""Issue 33, item 8: SIGTERM during a reload's slow fetch cancels the reload and kills its query.

A config reload (SIGHUP) fetches a changed ``feed_data`` entry whose version
query hangs (``SLEEP(120)`` once a flag table has a row). SIGTERM then
cancels that reload: its fetch is cancelled and its query killed on MariaDB,
nothing is built during the shutdown, and the process exits within the
promised delay + drain (before, in one process, 2 s more: the exit guard cut a
shutdown that waited for the reload; with ``--workers 2`` the supervisor left
the query running). In one process and with ``--workers 2`` (where the
supervisor fetches), with the same expectations.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from .._mariadb import running
from .pod import MODES, Server
from .test_feed_query_kill import WAIT, hanging_config, until

pytestmark = [pytest.mark.e2e, pytest.mark.mysql]

DELAY, DRAIN = 1.0, 1.0
"""``--shutdown-delay-seconds`` and ``--drain-seconds`` of the server under test."""
SLACK = 1.5
"""Seconds past delay + drain an exit may take here (a busy test machine); under the
2 s of the exit guard, which a shutdown waiting for the reload used to reach."""


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", list(MODES))
def test_sigterm_during_a_reloads_slow_fetch_cancels_it_and_kills_its_query(
    mode: str, mysql_conn: Any, mysql_dsn: str, mysql_table: str, tmp_path: Path
) -> None:
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY)")
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(hanging_config(mysql_dsn, mysql_table, "first", interval=-1)))
    args = ("--shutdown-delay-seconds", str(DELAY), "--drain-seconds", str(DRAIN))
    server = Server(config, *args, mode=MODES[mode])
    try:
        marker = f"wb_{uuid.uuid4().hex[:12]}"
        with mysql_conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{mysql_table}` VALUES (1)")
        config.write_text(
            json.dumps(hanging_config(mysql_dsn, mysql_table, marker, interval=-1))
        )  # a changed entry
        server.proc.send_signal(signal.SIGHUP)
        until("the reload's fetch hangs in its query", lambda: running(mysql_conn, marker) == 1)
        asked = time.monotonic()
        assert server.terminate(WAIT) == 0, server.text()
        took = time.monotonic() - asked
        # KILL QUERY is asynchronous on the server: the statement ends within milliseconds.
        until("no query of the reload left", lambda: running(mysql_conn, marker) == 0, 3.0)
        server.wait_exit(WAIT)  # the log is complete
        assert took < DELAY + DRAIN + SLACK, f"exited {took:.1f}s after SIGTERM\n{server.text()}"
        assert server.count("exiting now") == 0, server.text()  # not cut by the exit guard
        assert server.count(r"config \w+ reloaded") == 0, server.text()  # nothing was built
    finally:
        server.close()
