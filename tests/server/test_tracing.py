"""Issue 37 item 2: opt-in OpenTelemetry tracing, seen by an OTLP collector.

Real ``pineapple serve`` processes (one process and ``--workers 2``) send
their spans by OTLP/HTTP to :class:`Collector`, a loopback HTTP server in this
test that decodes each export with ``opentelemetry-proto``. What must show:
the tree request -> operators -> borrows, the caller's ``traceparent`` as the
request span's parent, every worker exporting its own spans, and a second pod
called through ``transform_by_remote_pineapple`` joining the same trace.
Off (the default), nothing of OpenTelemetry is imported and ``/execute`` is
answered on the direct path.

Bounds: a collector's body is read up to ``MAX_EXPORT_BYTES``; every wait is
on a condition with ``WAIT`` seconds at most; every server is closed in a
``finally`` (its context manager).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from pineapple import resource
from pineapple.resource._provider import StaticHandle
from tests._serve import ROOT, Serve, cli_env, run_cli
from tests.reliability._deadline import PLUGIN as DEADLINE_PLUGIN

from ._modes import MODES, WORKERS
from .fakes import dump, items_resource, unified_config
from .pod import PLUGIN

pytestmark = pytest.mark.e2e

WAIT = 30.0
MAX_EXPORT_BYTES = 16 << 20
FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "50"}
"""The batch processor's delay in ms (the SDK's default is 5 s)."""


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    attributes: dict[str, Any]
    service: str
    pid: int


class Collector:
    """An OTLP/HTTP traces receiver on a free loopback port: every span it was sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._changed = threading.Condition()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                if self.path != "/v1/traces" or length > MAX_EXPORT_BYTES:
                    self.send_error(404 if self.path != "/v1/traces" else 413)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(self.rfile.read(length))
                collector._add(request)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _add(self, request: ExportTraceServiceRequest) -> None:
        found: list[Span] = []
        for resource_spans in request.resource_spans:
            res = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        Span(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            service=str(res.get("service.name")),
                            pid=int(res.get("process.pid", 0)),
                        )
                    )
        with self._changed:
            self.spans.extend(found)
            self._changed.notify_all()

    def wait_for(self, done: Callable[[list[Span]], bool]) -> list[Span]:
        """The spans once ``done`` holds for them (``AssertionError`` after ``WAIT`` s)."""
        deadline = time.monotonic() + WAIT
        with self._changed:
            while not done(self.spans):
                left = deadline - time.monotonic()
                assert left > 0, f"spans never complete: {self.spans}"
                self._changed.wait(left)
            return list(self.spans)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind is not None else None


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    try:
        yield c
    finally:
        c.close()


def _traceparent() -> tuple[str, str, str]:
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{parent}-01", trace_id, parent


def _trace(spans: list[Span], trace_id: str) -> list[Span]:
    return [s for s in spans if s.trace_id == trace_id]


def _tree_complete(trace_id: str) -> Callable[[list[Span]], bool]:
    return lambda spans: (
        {"POST /execute", "static", "from_resource", "borrow feed"}
        <= {s.name for s in _trace(spans, trace_id)}
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_span_tree_per_request_under_the_callers_traceparent(
    mode: str, tmp_path: Path, collector: Collector
) -> None:
    config = tmp_path / "pineapple.json"
    feed = items_resource("feed", "t")
    config.write_bytes(dump(unified_config("t", resources={"feed": feed}, recall_from="feed")))
    extra = ["--no-watch", "--otel-endpoint", collector.url]
    if WORKERS[mode] > 1:
        (tmp_path / "shm").mkdir()
        extra += ["--workers", "2", "--shared-dir", str(tmp_path / "shm")]
    env = cli_env({"PINEAPPLE_TEST_CLOSE_LOG": str(tmp_path / "closes.log"), **FAST_EXPORT})
    with Serve(config, "--plugin", PLUGIN, *extra, env=env) as server:
        pids: set[int] = set()
        sent = 0
        # Every process exports its own spans: requests on new connections until each
        # serving process has sent a request span (bounded: 200 requests).
        while len(pids) < WORKERS[mode]:
            assert sent < 200, f"request spans came from {pids} only"
            header, trace_id, parent = _traceparent()
            reply = httpx.post(
                f"{server.url}/execute",
                content=b'{"common": {}, "items": []}',
                headers={"traceparent": header},
                timeout=WAIT,
            )
            sent += 1
            assert reply.status_code == 200, reply.text
            spans = _trace(collector.wait_for(_tree_complete(trace_id)), trace_id)
            by_name = {s.name: s for s in spans}
            request = by_name["POST /execute"]
            assert request.parent_id == parent  # the caller's span
            assert request.attributes["http.response.status_code"] == 200
            assert request.attributes["url.path"] == "/execute"
            for name, type_name in (
                ("static", "recall_static"),
                ("from_resource", "recall_resource"),
            ):
                op = by_name[name]
                assert op.parent_id == request.span_id
                assert op.attributes["pineapple.operator.name"] == name
                assert op.attributes["pineapple.operator.type"] == type_name
            borrow = by_name["borrow feed"]
            assert borrow.parent_id == by_name["from_resource"].span_id
            assert borrow.attributes["pineapple.resource.name"] == "feed"
            assert borrow.attributes["pineapple.resource.version"] >= 1
            assert {s.service for s in spans} == {"pineapple"}
            assert len({s.pid for s in spans}) == 1  # one process answered it
            pids.add(request.pid)
        if WORKERS[mode] > 1:
            assert server.proc.pid not in pids  # the workers answer, not the supervisor


def test_a_request_without_traceparent_starts_a_trace(tmp_path: Path, collector: Collector) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    env = cli_env({"PINEAPPLE_TEST_CLOSE_LOG": str(tmp_path / "c.log"), **FAST_EXPORT})
    with Serve(
        config,
        "--plugin",
        PLUGIN,
        "--no-watch",
        "--tracing",
        env=env
        | {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url  # the standard variable, with --tracing
        },
    ) as server:
        reply = httpx.post(f"{server.url}/execute", content=b'{"common": {}}', timeout=WAIT)
        assert reply.status_code == 200, reply.text
        spans = collector.wait_for(lambda s: any(x.name == "POST /execute" for x in s))
        request = next(s for s in spans if s.name == "POST /execute")
        assert request.parent_id == ""  # a root
        static = collector.wait_for(lambda s: any(x.name == "static" for x in s))
        assert next(s for s in static if s.name == "static").trace_id == request.trace_id


def _downstream_config() -> dict[str, Any]:
    return {
        "pipeline_config": {
            "operators": {
                "copy": {
                    "type_name": "transform_copy",
                    "direction": "common_to_common",
                    "$metadata": {"common_input": ["user"], "common_output": ["greeting"]},
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["copy"]}},
        "flow_contract": {"common_input": ["user"], "common_output": ["greeting"]},
    }


def _upstream_config(port: int) -> dict[str, Any]:
    meta = {"common_input": ["uid"], "common_output": ["hello"]}
    remote = {
        "type_name": "transform_by_remote_pineapple",
        "host": "127.0.0.1",
        "port": port,
        "allow_private": True,
        "common_request": ["user"],
        "common_response": ["greeting"],
        "$metadata": meta,
    }
    return {
        "pipeline_config": {"operators": {"remote": remote}},
        "pipeline_group": {"main": {"pipeline": ["remote"]}},
        "flow_contract": meta,
    }


def test_a_downstream_pod_joins_the_callers_trace(tmp_path: Path, collector: Collector) -> None:
    down_config = tmp_path / "down.json"
    down_config.write_bytes(orjson.dumps(_downstream_config()))
    args = ("--plugin", DEADLINE_PLUGIN, "--no-watch", "--otel-endpoint", collector.url)
    env = cli_env(FAST_EXPORT)
    with Serve(down_config, *args, env=env) as downstream:
        port = urlsplit(downstream.url).port
        assert port is not None
        up_config = tmp_path / "up.json"
        up_config.write_bytes(orjson.dumps(_upstream_config(port)))
        with Serve(up_config, *args, env=env) as upstream:
            header, trace_id, parent = _traceparent()
            reply = httpx.post(
                f"{upstream.url}/execute",
                content=b'{"common": {"uid": "u7"}, "items": []}',
                headers={"traceparent": header},
                timeout=WAIT,
            )
            assert reply.status_code == 200, reply.text
            assert reply.json()["common"] == {"hello": "u7"}
            spans = _trace(
                collector.wait_for(
                    lambda s: (
                        sum(x.name == "POST /execute" for x in _trace(s, trace_id)) == 2
                        and any(x.name == "copy" for x in _trace(s, trace_id))
                    )
                ),
                trace_id,
            )
    requests = {s.pid: s for s in spans if s.name == "POST /execute"}
    up = requests[upstream.proc.pid]
    down = requests[downstream.proc.pid]
    assert up.parent_id == parent
    remote = next(s for s in spans if s.name == "remote")
    assert remote.parent_id == up.span_id
    assert down.parent_id == remote.span_id  # the traceparent the operator sent on
    copy = next(s for s in spans if s.name == "copy")
    assert copy.parent_id == down.span_id


def test_off_by_default_imports_nothing_of_opentelemetry(tmp_path: Path) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    code = (
        "import sys\n"
        "from server import Config\n"
        "from server.http._app import create_app, direct_route\n"
        f"app = create_app(Config({str(config)!r}))\n"
        "assert direct_route(app, access_log=False) is not None\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_tracing_takes_the_asgi_path(tmp_path: Path) -> None:
    from server import Config
    from server._tracing import TracingSettings
    from server.http._app import create_app, direct_route

    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    app = create_app(Config(config, tracing=TracingSettings(endpoint="http://127.0.0.1:9")))
    assert direct_route(app, access_log=False) is None
    app.state.service.tracing.close()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--trace-sample-ratio", "2"), "the trace sample ratio must be in [0, 1], got 2.0"),
        (("--otel-endpoint", "collector:4318"), "the OTLP endpoint must be an http(s) URL"),
    ],
)
def test_bad_tracing_flags_are_refused(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    done = run_cli("serve", str(config), "--tracing", *flags)
    assert done.returncode == 2
    assert message in done.stderr


class _Manager:
    """What a traced provider asks of a Manager: ``get`` and ``version_of``."""

    def __init__(self) -> None:
        self.values = resource.Static({"feed": [1, 2]})

    def get(self, name: str) -> StaticHandle | None:
        return self.values.get(name)

    def version_of(self, name: str) -> int | None:
        return 7 if name == "feed" else None


def test_borrows_are_spans_inside_a_traced_request_only() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from server._tracing import _TracedProvider

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    traced = _TracedProvider(_Manager(), tracer)  # type: ignore[arg-type]
    outside = traced.get("feed")
    assert outside is not None
    with outside as value:  # outside any span: no trace of its own
        assert value == [1, 2]
    assert exporter.get_finished_spans() == ()
    with tracer.start_as_current_span("request") as request:
        handle = traced.get("feed")
        assert handle is not None
        assert exporter.get_finished_spans() == ()  # the span lasts until the release
        with handle as value:
            assert value == [1, 2]
        assert traced.get("absent") is None
    borrow, absent, _ = exporter.get_finished_spans()
    assert borrow.name == "borrow feed"
    assert borrow.parent is not None and borrow.parent.span_id == request.get_span_context().span_id
    assert dict(borrow.attributes or {}) == {
        "pineapple.resource.name": "feed",
        "pineapple.resource.version": 7,
    }
    assert absent.name == "borrow absent"
    assert dict(absent.attributes or {})["pineapple.resource.found"] is False
    provider.shutdown()


def test_a_collector_that_does_not_answer_fails_no_request_and_holds_no_stop(
    tmp_path: Path,
) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"
    # Exports retry for 30 s: a stop that waited them out would take that long.
    env = cli_env({**FAST_EXPORT, "OTEL_EXPORTER_OTLP_TIMEOUT": "30"})
    with Serve(config, "--no-watch", "--otel-endpoint", nowhere, env=env) as server:
        for _ in range(5):
            reply = httpx.post(f"{server.url}/execute", content=b'{"common": {}}', timeout=WAIT)
            assert reply.status_code == 200, reply.text
        server.wait_line("Transient error", WAIT)  # an export is retrying
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(WAIT) == 0
        assert time.monotonic() - started < 15.0
        server.wait_line("spans not exported within 2000 ms dropped", WAIT)
