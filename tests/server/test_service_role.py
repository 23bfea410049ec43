"""A ``Service`` is given its role at construction: decisions, first config, start and stop.

A worker of ``--workers N`` is such a service (``server/workers/worker/_role.py``);
here a recording role shows the order, exactly: the role is made once from
the service's own decisions, its first config is built without a read of the
file, it starts once the first snapshot serves and stops after the service.
"""

from __future__ import annotations

import orjson

from server._decisions import Decisions, LocalDecisions
from server.lowlevel import Service

from .conftest import MakeConfig, WriteConfig
from .fakes import unified_config


class RecordingRole:
    """A role that answers with the service's own decisions and records its calls."""

    def __init__(self, local: LocalDecisions, first: bytes | None, calls: list[str]) -> None:
        self.local = local
        self.first_config = first
        self.history = None  # no config history of its own
        self.calls = calls
        calls.append("made")

    @property
    def decisions(self) -> Decisions:
        return self.local

    def staging(self, shadow: object) -> None:
        return None  # no stage routes

    def start(self) -> None:
        snap = self.local.holder.current
        assert snap is not None  # the first snapshot serves before the role starts
        self.calls.append(f"start:{snap.serial}")

    def stop(self) -> None:
        self.calls.append("stop")


def test_a_role_is_made_once_and_started_after_the_first_snapshot(
    write_config: WriteConfig, make_config: MakeConfig
) -> None:
    on_disk = write_config(unified_config("file"))
    given = orjson.dumps(unified_config("given"))
    calls: list[str] = []
    roles: list[RecordingRole] = []

    def role(local: LocalDecisions) -> RecordingRole:
        roles.append(RecordingRole(local, given, calls))
        return roles[0]

    service = Service(make_config(), role)
    assert calls == ["made"] and service.decisions is service.local
    assert roles[0].local is service.local
    snap = service.start()
    try:
        assert calls == ["made", "start:1"]
        # Built from the bytes it was given, not from the file.
        assert snap.info.content_hash != service.builder.info(on_disk).content_hash
        assert snap.info.content_hash == service.builder.info(given).content_hash
    finally:
        service.stop()
        service.stop()  # the role is told each time (its stop is idempotent)
    assert calls == ["made", "start:1", "stop", "stop"]


def test_without_a_role_the_service_decides_and_reads_its_file(
    write_config: WriteConfig, make_config: MakeConfig
) -> None:
    on_disk = write_config(unified_config("file"))
    service = Service(make_config())
    snap = service.start()
    try:
        assert service.role is None and service.decisions is service.local
        assert snap.info.content_hash == service.builder.info(on_disk).content_hash
    finally:
        service.stop()
