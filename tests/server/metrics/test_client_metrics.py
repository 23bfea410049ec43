"""Pool and command families of any value that reports a ``ClientReport`` (not only Redis)."""

from __future__ import annotations

from prometheus_client.core import Metric

from pineapple.resource import Manager
from pineapple.resource.lowlevel import ClientReport, CommandStats
from server.metrics._client_metrics import client_families


class _Client:
    """A plugin's client value: not a Redis type, it only has ``client_report``."""

    def __init__(self, label: str, total: int, idle: int) -> None:
        self.label, self.total, self.idle = label, total, idle
        self.stats = CommandStats()

    def client_report(self) -> ClientReport:
        return ClientReport(
            "memcache", self.label, self.total, self.idle, tuple(self.stats.report())
        )


def _samples(families: list[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_a_plugin_client_gets_its_kinds_families_summed_per_name() -> None:
    a, b = _Client("cache", 3, 1), _Client("", 2, 2)  # b has no label: its resource name
    a.stats.record("get", 0.002, "ok")
    a.stats.record("get", 0.5, "timeout")
    b.stats.record("set", 0.001, "ok")
    rm = Manager()
    rm.register("a", lambda: a, interval=-1)
    rm.register("b", lambda: b, interval=-1)
    rm.register("plain", lambda: {"not": "a client"}, interval=-1)
    rm.start()
    try:
        families = client_families(rm)
    finally:
        rm.stop()
    assert [f.name for f in families] == [
        "pine_memcache_pool_total_conns",
        "pine_memcache_pool_idle_conns",
        "pine_memcache_command_duration_seconds",
        "pine_memcache_command",
    ]
    got = _samples(families)
    assert got[("pine_memcache_pool_total_conns", (("name", "cache"),))] == 3
    assert got[("pine_memcache_pool_idle_conns", (("name", "b"),))] == 2
    ok = (("command", "GET"), ("name", "cache"), ("status", "ok"))
    assert got[("pine_memcache_command_total", ok)] == 1
    timeout = (("command", "GET"), ("name", "cache"), ("status", "timeout"))
    assert got[("pine_memcache_command_duration_seconds_sum", timeout)] == 0.5
    assert got[("pine_memcache_command_duration_seconds_count", timeout)] == 1
    assert (
        got[("pine_memcache_command_total", (("command", "SET"), ("name", "b"), ("status", "ok")))]
        == 1
    )


def test_no_client_no_families() -> None:
    rm = Manager()
    rm.register("plain", lambda: [1, 2], interval=-1)
    rm.start()
    try:
        assert client_families(rm) == []
    finally:
        rm.stop()
