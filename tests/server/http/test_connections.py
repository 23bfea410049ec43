"""The uvicorn internals the connection rules (``server/http/_connections.py``, applied by
``server/http/_protocol.py``) and ``server/http/_graceful.py`` rely on.

uvicorn is not pinned: these fail loudly when a release renames what the
drain, the write deadline, the probes' room or the shutdown sequence use.
"""

from __future__ import annotations

import inspect

import uvicorn
from uvicorn.protocols.http import flow_control, httptools_impl

from server.http._connections import PROBE_PATHS, is_probe


def test_uvicorn_internals_the_connection_rules_rely_on() -> None:
    protocol = httptools_impl.HttpToolsProtocol
    for name in ("shutdown", "pause_writing", "resume_writing", "connection_lost"):
        assert callable(getattr(protocol, name)), name
    init = inspect.getsource(protocol.__init__)
    for attr in ("self.limit_concurrency", "self.flow", "self.connections", "self.tasks"):
        assert f"{attr} =" in init or f"{attr}: " in init, attr
    # The request target: reset at each request's first byte, grown by on_url.
    assert 'self.url = b""' in inspect.getsource(protocol.on_message_begin)
    assert "self.url += url" in inspect.getsource(protocol.on_url)
    # uvicorn's 503 past the cap reads limit_concurrency when the headers are complete.
    assert "self.limit_concurrency" in inspect.getsource(protocol.on_headers_complete)
    assert "self.write_paused" in inspect.getsource(flow_control.FlowControl.__init__)
    cycle = inspect.getsource(httptools_impl.RequestResponseCycle.__init__)
    assert "self.keep_alive = keep_alive" in cycle


def test_uvicorn_internals_the_graceful_server_relies_on() -> None:
    server = uvicorn.Server
    for name in ("handle_exit", "on_tick", "shutdown", "startup"):
        assert callable(getattr(server, name)), name
    init = inspect.getsource(server.__init__)
    for attr in ("self.server_state", "self.should_exit", "self._captured_signals"):
        assert f"{attr} =" in init or f"{attr}: " in init, attr
    startup = inspect.getsource(server.startup)
    assert "self.servers" in startup and "app_state=self.lifespan.state" in startup
    assert "timeout_graceful_shutdown" in inspect.getsource(server.shutdown)


def test_probe_paths_match_with_a_query_and_nothing_else() -> None:
    assert PROBE_PATHS == (b"/healthz", b"/readyz")
    for url in (b"/healthz", b"/readyz", b"/healthz?x=1", b"/readyz?"):
        assert is_probe(url), url
    for url in (b"/healthzz", b"/readyz/x", b"/execute", b"/", b"/HEALTHZ"):
        assert not is_probe(url), url
