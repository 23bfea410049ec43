"""End to end: a real ``pineapple serve`` process under load while its config churns."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from .._serve import ROOT, Serve
from .fakes import dump, items_resource, unified_config
from .pod import serve_plugin

pytestmark = pytest.mark.e2e

BODY = b'{"common": {}, "items": []}'


@pytest.fixture
def close_log(tmp_path: Path) -> Path:
    return tmp_path / "closes.log"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    folder = tmp_path / "etc"
    folder.mkdir()
    return folder / "pineapple.json"


def _valid(tag: str) -> bytes:
    return dump(
        unified_config(tag, resources={"feed": items_resource("feed", tag)}, recall_from="feed")
    )


def _invalid(kind: int, tag: str) -> bytes:
    if kind == 0:
        return b'{"pipeline_config": {"operators": ' + tag.encode()  # truncated JSON
    if kind == 1:
        return dump(unified_config(tag, extra_ops={"bad": {"type_name": "no_such_operator"}}))
    if kind == 2:
        feed = items_resource("feed", tag, fail=True)  # the new resource cannot be fetched
        return dump(unified_config(tag, resources={"feed": feed}, recall_from="feed"))
    return dump(unified_config(tag, recall_from="undeclared"))  # operator needs a missing resource


def _write(path: Path, data: bytes, rename: bool) -> None:
    if rename:
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_bytes(data)
        os.replace(temp, path)
    else:
        with open(path, "r+b") as f:
            f.write(data)
            f.truncate()


def _wait_reload(client: httpx.Client, data: bytes, deadline: float = 15.0) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        last = client.get("/config").json()["last_reload"]
        if last is not None and last["content_hash"] == digest:
            return dict(last)
        time.sleep(0.02)  # polling another process's observable state, with a deadline
    raise AssertionError(f"no reload of {digest[:12]} within {deadline}s")


def _served_tags(client: httpx.Client) -> set[str]:
    response = client.post("/execute", content=BODY)
    assert response.status_code == 200, response.text
    return {item["tag"] for item in response.json()["items"]}


@pytest.fixture
def serving(config_file: Path, close_log: Path) -> Iterator[Serve]:
    config_file.write_bytes(_valid("v0"))
    server = serve_plugin(config_file, close_log)
    try:
        yield server
    finally:
        server.close()


def test_serve_under_config_churn(serving: Serve, config_file: Path, close_log: Path) -> None:
    stop = threading.Event()
    failures: list[str] = []
    answered = [0]
    counter_lock = threading.Lock()

    def load() -> None:
        with httpx.Client(base_url=serving.url, timeout=10) as http:
            while not stop.is_set():
                try:
                    response = http.post("/execute", content=BODY)
                except httpx.HTTPError as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                if response.status_code != 200:
                    failures.append(f"{response.status_code}: {response.text}")
                    continue
                tags = {item["tag"] for item in orjson.loads(response.content)["items"]}
                if len(tags) != 1:
                    failures.append(f"mixed configs in one response: {sorted(tags)}")
                with counter_lock:
                    answered[0] += 1

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    valid_tags, refused = ["v0"], 0
    with httpx.Client(base_url=serving.url, timeout=10) as http:
        assert _served_tags(http) == {"v0"}
        for n in range(1, 25):
            tag = f"v{n}"
            data = _invalid(n // 3 % 4, tag) if n % 3 == 0 else _valid(tag)
            _write(config_file, data, rename=n % 2 == 1)
            outcome = _wait_reload(http, data)
            if n % 3 == 0:
                assert outcome["result"] == "error", outcome
                refused += 1
                assert _served_tags(http) == {valid_tags[-1]}  # the previous config serves on
            else:
                assert outcome["result"] == "ok", outcome
                valid_tags.append(tag)
                assert _served_tags(http) == {tag}
        config = http.get("/config").json()
        metrics = http.get("/metrics").text
    stop.set()
    for thread in threads:
        thread.join(10)
    assert failures == []
    assert answered[0] > 0
    assert refused == 8 and len(valid_tags) == 17
    assert config["last_reload_error"]["result"] == "error"
    assert "hunter2" not in str(config)
    assert 'pineapple_config_reloads_total{result="error"} 8.0' in metrics

    assert serving.stop() == 0, "".join(serving.log)
    # Every value ever loaded was closed exactly once, the serving one included.
    lines = close_log.read_text().splitlines()
    ids = [line.split()[3] for line in lines]
    assert len(ids) == len(set(ids)), lines
    closed_tags = [line.split()[2] for line in lines]
    for tag in valid_tags:
        assert closed_tags.count(tag) == 1, (tag, lines)


def test_sighup_reloads_without_a_watcher(config_file: Path, close_log: Path) -> None:
    config_file.write_bytes(_valid("v0"))
    server = serve_plugin(config_file, close_log, "--no-watch")
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert _served_tags(http) == {"v0"}
            data = _valid("v1")
            _write(config_file, data, rename=True)
            server.proc.send_signal(signal.SIGHUP)
            outcome = _wait_reload(http, data)
            assert outcome["trigger"] == "signal" and outcome["result"] == "ok"
            assert _served_tags(http) == {"v1"}
        assert server.stop() == 0
    finally:
        server.close()


def test_workers_each_serve_their_own_snapshot(config_file: Path, close_log: Path) -> None:
    config_file.write_bytes(_valid("v0"))
    server = serve_plugin(config_file, close_log, "--workers", "2")
    try:
        pids = {
            m.group(1)
            for line in server.log
            if "listening on" in line and (m := re.search(r" (\d+) INFO ", line))
        }
        assert len(pids) == 2
        data = _valid("v1")
        _write(config_file, data, rename=True)
        # The supervisor accepts v1 once its trial build succeeded; then each worker builds
        # its own snapshot of it and logs so. Read from the log: which worker a fresh
        # connection reaches is the kernel's choice, so HTTP cannot ask each one.
        digest = hashlib.sha256(data).hexdigest()[:12]
        for pid in pids:
            server.wait_line(rf" {pid} INFO pineapple\.server: config {digest} reloaded", 30)
        for _ in range(20):  # then every fresh connection, whichever worker takes it, sees v1
            with httpx.Client(base_url=server.url, timeout=10) as http:
                assert _served_tags(http) == {"v1"}
        assert server.stop() == 0, "".join(server.log)
    finally:
        server.close()
    lines = close_log.read_text().splitlines()
    assert len(lines) == len(set(lines))
    # Both workers and one trial build (the supervisor accepts a config only once a worker
    # could build it) loaded v0 and v1 once each, and closed each exactly once.
    assert sorted(line.split()[2] for line in lines) == ["v0"] * 3 + ["v1"] * 3


def test_sigterm_lets_the_in_flight_request_finish(config_file: Path, close_log: Path) -> None:
    gate_dir = config_file.parent / "gate"
    gate_dir.mkdir()
    gated = unified_config(
        "v0",
        resources={"feed": items_resource("feed", "v0")},
        recall_from="feed",
        extra_ops={"hold": {"type_name": "test_file_gate", "folder": str(gate_dir)}},
    )
    config_file.write_bytes(dump(gated))
    server = serve_plugin(config_file, close_log)
    try:
        result: dict[str, httpx.Response] = {}

        def request() -> None:
            with httpx.Client(base_url=server.url, timeout=30) as http:
                result["r"] = http.post("/execute", content=BODY)

        thread = threading.Thread(target=request)
        thread.start()
        end = time.monotonic() + 15
        while not (gate_dir / "entered").exists():  # the request is inside the operator
            assert time.monotonic() < end and server.proc.poll() is None, "".join(server.log)
            time.sleep(0.01)
        server.proc.send_signal(signal.SIGTERM)
        server.wait_line("Shutting down", 15)
        # Shutting down, the feed value is still open: the request holds the snapshot.
        assert not close_log.exists()
        (gate_dir / "go").touch()
        thread.join(30)
        assert result["r"].status_code == 200
        assert {i["tag"] for i in result["r"].json()["items"]} == {"v0"}
        assert server.proc.wait(30) == 0, "".join(server.log)
    finally:
        server.close()
    assert [line.split()[:3] for line in close_log.read_text().splitlines()] == [
        ["close", "feed", "v0"]
    ]


def test_make_run_serves_the_demo(close_log: Path) -> None:
    server = serve_plugin(ROOT / "configs" / "demo.json", close_log)
    try:
        server.wait_line("try: curl", 10)  # logged right after listening
        [hint] = [line for line in server.log if "try: curl" in line]
        body = hint.split(" -d '", 1)[1].rstrip().rstrip("'")
        with httpx.Client(base_url=server.url, timeout=10) as http:
            response = http.post("/execute", content=body.encode())
            assert response.status_code == 200, response.text
            assert response.json()["items"]
            assert http.get("/readyz").status_code == 200
        assert server.stop() == 0
    finally:
        server.close()
