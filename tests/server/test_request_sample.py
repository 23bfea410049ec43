"""The request sample's bounds (count, bytes, age), what it records, the pod's merge of
its workers' samples over their channel, and a config's ``warmup_requests``."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import orjson
import pytest

import server
from server import _request_sample
from server._build_error import BuildError
from server._replay import MAX_WARMUP_REQUESTS, warmup_requests
from server._request_sample import MIN_INTERVAL_SECONDS, RequestSample, decode_sample
from server._service import Service
from server.cli._cli import add_serve_command, serve_command
from server.http._execute import ExecuteEndpoint
from server.workers._sample_channel import SampleServer, collect_sample

from .fakes import unified_config


def test_the_sample_keeps_the_newest_requests_within_count_and_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sample = RequestSample(max_requests=3, max_bytes=10, max_age=60.0)
    monkeypatch.setattr(_request_sample, "MIN_INTERVAL_SECONDS", -1e9)
    for n in range(5):
        sample.record(f"r{n}".encode())
    assert [r.body for r in sample.requests()] == [b"r2", b"r3", b"r4"]
    sample.record(b"x" * 11)  # over the byte bound alone: never kept
    assert [r.body for r in sample.requests()] == [b"r2", b"r3", b"r4"]
    sample.record(b"y" * 8, "g")  # 2 + 2 + 8 > 10: the two oldest go
    assert [(r.body, r.group) for r in sample.requests()] == [(b"r4", None), (b"y" * 8, "g")]


def test_the_sample_forgets_requests_past_its_age(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(_request_sample, "_monotonic", lambda: now[0])
    sample = RequestSample(max_requests=10, max_bytes=100, max_age=5.0)
    sample.record(b"old")
    now[0] += 4.0
    sample.record(b"new")
    now[0] += 2.0  # "old" is 6 s old, "new" 2 s
    assert [r.body for r in sample.requests()] == [b"new"]
    assert [(r.body, age) for r, age in decode_sample(sample.encode())] == [(b"new", 2.0)]


def test_at_most_one_request_is_recorded_per_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(_request_sample, "_monotonic", lambda: now[0])
    sample = RequestSample(10, 1000, 60.0)
    sample.record(b"a")
    sample.record(b"b")  # within the interval of the last one kept
    now[0] += MIN_INTERVAL_SECONDS
    sample.record(b"c", "other")
    sample.record(b"d", None, now[0] + MIN_INTERVAL_SECONDS / 2)  # the caller's clock: too soon
    sample.record(b"e", None, now[0] + MIN_INTERVAL_SECONDS)
    assert [(r.body, r.group) for r in sample.requests()] == [
        (b"a", None),
        (b"c", "other"),
        (b"e", None),
    ]
    assert sample.next_at == now[0] + 2 * MIN_INTERVAL_SECONDS
    assert not RequestSample(0, 1000, 60.0).enabled


def test_the_pod_sample_is_the_newest_of_every_worker_within_the_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two "workers" in this process (pids 1 and 2 in their sockets' names), each
    # answering this process as its parent, so the test reads them as the supervisor.
    first, second = RequestSample(10, 1000, 60.0), RequestSample(10, 1000, 60.0)
    servers = []
    for sample, pid in ((first, 1), (second, 2)):
        monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
        servers.append(SampleServer(tmp_path, sample))
    monkeypatch.undo()
    now = [1000.0]
    monkeypatch.setattr(_request_sample, "_monotonic", lambda: now[0])
    for n in range(3):  # a0 b0 a1 b1 a2 b2, a second apart
        first.record(f"a{n}".encode())
        now[0] += 1.0
        second.record(f"b{n}".encode())
        now[0] += 1.0
    for s in servers:
        s._parent = os.getpid()
        s.start()
    try:
        config = server.Config(tmp_path / "c.json", replay_sample_requests=4)
        merged = collect_sample(config, tmp_path)  # the newest 4 of both, oldest first
        assert [r.body for r in merged] == [b"a1", b"b1", b"a2", b"b2"]
        small = server.Config(tmp_path / "c.json", replay_sample_bytes=4)
        assert [r.body for r in collect_sample(small, tmp_path)] == [b"a2", b"b2"]
        young = server.Config(tmp_path / "c.json", replay_sample_seconds=2.5)
        assert [r.body for r in collect_sample(young, tmp_path)] == [b"a2", b"b2"]
        servers[0]._parent = -1  # not its parent: the worker answers nothing
        assert {r.body for r in collect_sample(config, tmp_path)} == {b"b0", b"b1", b"b2"}
    finally:
        for s in servers:
            s.stop()
    assert not list(tmp_path.glob("sample-*.sock"))


def test_warmup_requests_are_read_from_the_config_and_checked() -> None:
    assert warmup_requests(b'{"pipeline_config": {}}') == []
    declared = warmup_requests(
        b'{"warmup_requests": [{"common": {}}, {"group": "g", "request": {"items": []}}]}'
    )
    assert [(r.body, r.group) for r in declared] == [
        (b'{"common":{}}', None),
        (b'{"items":[]}', "g"),
    ]
    for bad, words in (
        (b'{"warmup_requests": {}}', "must be a list"),
        (b'{"warmup_requests": [1]}', "warmup_requests[0] must be an object"),
        (b'{"warmup_requests": [{"group": 1, "request": {}}]}', "group must be a string"),
    ):
        with pytest.raises(BuildError, match="replay") as caught:
            warmup_requests(bad)
        assert words in caught.value.reason
    many = b'{"warmup_requests": [' + b",".join([b"{}"] * (MAX_WARMUP_REQUESTS + 1)) + b"]}"
    with pytest.raises(BuildError, match="more than"):
        warmup_requests(many)


def test_the_replay_flags_reach_the_config_and_refuse_negatives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser(prog="pineapple")
    add_serve_command(parser.add_subparsers())
    args = parser.parse_args(
        ["serve", "c.json", "--replay-sample-requests", "8", "--replay-seconds", "0.5"]
    )
    assert (args.replay_sample_requests, args.replay_seconds) == (8, 0.5)
    assert args.replay_sample_bytes == server.Config.replay_sample_bytes
    bad = parser.parse_args(["serve", "c.json", "--replay-sample-seconds", "-1"])
    assert serve_command(bad) == 2
    assert "--replay-sample-seconds must be >= 0" in capsys.readouterr().err


def test_only_requests_answered_200_are_recorded_by_the_answer_maker(tmp_path: Path) -> None:
    """The one answer maker of both paths (``ExecuteEndpoint.answer``) keeps a request in
    the sample only when the serving config answered it 200, with its group."""
    statuses = iter([200, 500, 200])

    def responder(engine: object, ctx: object, body: bytes, *group: str) -> tuple[int, bytes]:
        return next(statuses), b"{}"

    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps(unified_config("a")))
    wiring = server.Wiring(responder=responder)
    service = Service(server.Config(config_path=path, watch=False, wiring=wiring))
    service.start()
    try:
        endpoint = ExecuteEndpoint(service)
        sample = service.request_sample
        assert sample is not None
        at = time.monotonic()
        for n, (body, route) in enumerate(
            ((b"a", "/execute"), (b"b", "/execute"), (b"c", "/execute/g"))
        ):
            made = endpoint.answer(body, route, at + n * MIN_INTERVAL_SECONDS, f"id-{n}")
            assert made is not None and made[0] == (500 if body == b"b" else 200)
        assert [(r.body, r.group) for r in sample.requests()] == [(b"a", None), (b"c", "g")]
    finally:
        service.stop()
