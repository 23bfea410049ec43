"""What the producer and fleet-CLI tests share: a real ``pineapple publish`` process, the
``pineapple fleet`` command, and reads of the store's announcements.

:class:`Publisher` starts ``pineapple publish CONFIG --fleet URL`` with its
stderr read on a thread (:attr:`Publisher.log`, :meth:`Publisher.wait_log`
waits, bounded, for a line), and stops it: SIGTERM (or SIGKILL when the test
kills it), then SIGKILL at a deadline.

Guarantees: every wait here has a deadline; the reader thread ends at the
process's end of file and ``close`` joins it with a timeout.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import orjson
import pytest

from server.fleet import ANNOUNCEMENTS, Announcement, FleetLimits, FleetStore
from tests._serve import ROOT, cli_env, run_cli
from tests.server.pod import feed_config, fill

from .conftest import LIMITS

__all__ = [
    "FLEET_CLI",
    "ROWS",
    "WAIT",
    "Publisher",
    "Source",
    "announcement",
    "fleet_cli",
    "generations",
    "limit_flags",
    "source",
    "wait_until",
    "write_config",
]

WAIT = 60.0
"""Seconds: the bound of every wait below (Python processes on a busy 2-core box)."""

# The venv's entry-point metadata may predate `fleet = server.fleet._commands:add_commands`
# in pyproject.toml (an editable install reads it at install time): then the fleet's
# commands are added by hand, exactly as the entry point adds them.
FLEET_CLI = """
import importlib.metadata, sys
from pineapple import cli
from pineapple.commands import COMMANDS_GROUP
if not any(e.name == "fleet" for e in importlib.metadata.entry_points(group=COMMANDS_GROUP)):
    from server.fleet._commands import add_commands as add_fleet
    add_all = cli.add_commands
    def add_commands(subparsers):
        add_all(subparsers)
        add_fleet(subparsers)
    cli.add_commands = add_commands
sys.exit(cli.main())
"""


def limit_flags(limits: FleetLimits) -> list[str]:
    """The ``--fleet-*`` limit flags that give ``limits``."""
    return [
        arg
        for field in dataclasses.fields(limits)
        for arg in (f"--fleet-{field.name.replace('_', '-')}", str(getattr(limits, field.name)))
    ]


def wait_until(what: str, check: Callable[[], bool], timeout: float = WAIT) -> None:
    """Poll ``check`` every 50 ms until it is true; fail naming ``what`` at ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():  # bounded by the deadline
        assert time.monotonic() < deadline, f"timed out after {timeout:g}s waiting for {what}"
        time.sleep(0.05)


def fleet_cli(*args: str, timeout: float = WAIT) -> subprocess.CompletedProcess[str]:
    """``pineapple ARGS`` (``publish`` or ``fleet ...``) to its end."""
    return run_cli(*args, timeout=timeout, main=FLEET_CLI)


def write_config(path: Path, config: Mapping[str, Any]) -> bytes:
    """Write ``config`` as JSON at ``path`` (replaced by a rename); the bytes."""
    data = orjson.dumps(config)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.rename(tmp, path)
    return data


def announcement(store: FleetStore, name: str) -> Announcement | None:
    """The announcement of ``name`` now (None: none)."""
    record = store.get(ANNOUNCEMENTS, name)
    return None if record is None else Announcement.from_json(record.value)


def generations(store: FleetStore, name: str) -> list[int]:
    """Every generation of ``name`` in the announcement history, oldest first."""
    return [
        Announcement.from_json(r.value).generation
        for r in store.history(ANNOUNCEMENTS, name)
        if not r.deleted
    ]


class Publisher:
    """``pineapple publish CONFIG --fleet URL ARGS...`` as a process."""

    def __init__(self, config: Path, url: str, *args: str, env: dict[str, str] | None = None):
        self.config = config
        self.log: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                FLEET_CLI,
                "publish",
                str(config),
                "--fleet",
                url,
                "--log-level",
                "debug",
                *limit_flags(LIMITS),
                *args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(env),
            cwd=ROOT,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # ends at the process's end of file
            with self._cond:
                self.log.append(line.rstrip("\n"))
                self._cond.notify_all()

    def count(self, pattern: str) -> int:
        """How many log lines match ``pattern`` so far."""
        regex = re.compile(pattern)
        with self._cond:
            return sum(1 for line in self.log if regex.search(line))

    def wait_log(self, pattern: str, *, times: int = 1, timeout: float = WAIT) -> None:
        """Wait until ``times`` log lines match ``pattern`` (fail at ``timeout``)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(1 for line in self.log if regex.search(line)) < times:  # bounded
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    tail = "\n".join(self.log[-30:])
                    raise AssertionError(f"no {times}x {pattern!r} in the producer's log:\n{tail}")
                self._cond.wait(min(left, 0.5))

    def kill(self) -> None:
        """SIGKILL (a crash: no lease released)."""
        self.proc.kill()
        self.proc.wait(WAIT)

    def stop(self) -> int:
        """SIGTERM and wait for the exit (SIGKILL at the deadline); the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(WAIT)
            raise

    def close(self) -> None:
        """Stop it (if still running) and join the log reader."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        self._reader.join(WAIT)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close()
        if kind is not None:  # a failing test shows what the producer said
            print(f"--- pineapple publish {self.config} (exit {self.proc.returncode}):")
            print("\n".join(self.log[-60:]))


ROWS = 50
"""Rows of the :class:`Source` table at the start."""


@dataclass(frozen=True)
class Source:
    """A MariaDB table of ``ROWS`` rows and its version table (one row, ``v``)."""

    conn: Any
    dsn: str
    table: str
    version: str

    def config(self, **entry: Any) -> dict[str, Any]:
        """``feed`` (feed_data with a version query, refreshed every second) and ``flags``
        (``static``: no codec, so never loaded by the producer)."""
        config = feed_config(self.dsn, self.table, interval=1, **entry)
        params = config["resource_config"]["feed"]["params"]
        params["version_query"] = f"SELECT v FROM `{self.version}`"
        config["resource_config"]["flags"] = {"type": "static", "params": {"value": {"on": 1}}}
        return config

    def bump(self, add: int, start: int) -> None:
        """Add ``add`` rows (ids from ``start``) and move the version: one change."""
        fill(self.conn, self.table, add, start=start)
        with self.conn.cursor() as cur:
            cur.execute(f"UPDATE `{self.version}` SET v = v + 1")


@pytest.fixture
def source(mysql_conn: Any, mysql_dsn: str, mysql_table: str) -> Iterator[Source]:
    fill(mysql_conn, mysql_table, ROWS)
    version = f"{mysql_table}_v"
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{version}` (v INT)")
        cur.execute(f"INSERT INTO `{version}` VALUES (1)")
    try:
        yield Source(mysql_conn, mysql_dsn, mysql_table, version)
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{version}`")
