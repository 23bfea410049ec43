"""Serving one process's HTTP: bind, start the service, run uvicorn until shutdown.

What both a single ``pineapple serve`` process (``server/_run.py``) and each
worker of ``--workers N`` (``server/workers/worker/_main.py``) run once they
hold a listening socket: the service, the graceful uvicorn server, the
signal handlers, and the exit guard.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType

import uvicorn

from pineapple import PineappleError

from .._build_error import BuildError
from .._config import Config, parse_addr
from .._config_read import example_request, read_config_file
from .._decisions import LocalDecisions
from .._logmask import install_log_mask, remove_log_mask
from .._service import Role, Service
from ._access_log import AccessLog
from ._app import create_app, direct_route
from ._connections import ConnectionRules, Drain
from ._graceful import GracefulServer
from ._protocol import edge_protocol
from ._read_timeouts import ReadTimeouts

__all__ = ["EXIT_GRACE_SECONDS", "bind", "exit_within", "serve", "uvicorn_config"]

EXIT_GRACE_SECONDS = 2.0
"""Once serving has ended, the ``serve`` process is gone within this many seconds."""

_log = logging.getLogger("pineapple.server")


def bind(addr: str) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: any free port), not yet listening.

    Binding first reserves the port (a conflict fails before anything is
    loaded); uvicorn calls ``listen`` once the first snapshot is serving, so
    no connection is accepted while the server is still starting.

    Created with ``proto=IPPROTO_TCP``: asyncio turns Nagle off (TCP_NODELAY) only
    on connections of such sockets, and uvicorn writes a response's head and
    body separately, so with ``proto=0`` every keep-alive response would wait
    ~40 ms for the client's delayed ACK.
    """
    host, port = parse_addr(addr)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Server(GracefulServer):
    """The graceful server, saying where it listens (and what to try) once it really does."""

    def __init__(
        self, config: uvicorn.Config, service: Service, drain: Drain, example: bytes
    ) -> None:
        super().__init__(config, service, drain, service.config.shutdown_delay_seconds)
        self._example = example.decode()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and sockets:
            host, port = sockets[0].getsockname()[:2]
            url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
            _log.info("listening on %s", url)
            _log.info("try: curl -s -X POST %s/execute -d '%s'", url, self._example)


def serve(
    config: Config,
    sock: socket.socket,
    attach: Callable[[Service], None] | None = None,
    *,
    role: Callable[[LocalDecisions], Role] | None = None,
) -> int:
    """Serve on ``sock`` until shutdown; ``attach`` runs once the service has started (a
    fleet pod follows it); ``role``: what the service is given at construction (a worker's)."""
    service = Service(config, role)
    mask = install_log_mask(service.holder)  # log lines never show the config's secrets
    try:
        return _serve_service(config, service, sock, attach)
    finally:
        remove_log_mask(mask)


def _freeze_startup_heap() -> None:
    """Move everything alive after start-up out of the cyclic collector's reach.

    Imports, the first snapshot and its tables are hundreds of thousands of
    long-lived objects that every full collection would walk again, holding
    the GIL for 40-100 ms (seen as /healthz spikes beside a large request).
    ``gc.freeze()`` after a collection leaves them to reference counting; the
    price is that a cycle made at start-up and dropped later is never freed
    (start-up happens once).
    """
    gc.collect()
    gc.freeze()


def _serve_service(
    config: Config,
    service: Service,
    sock: socket.socket,
    attach: Callable[[Service], None] | None = None,
) -> int:
    try:
        service.start()
        if attach is not None:
            attach(service)
    except BuildError as exc:
        _log.error("not serving %s: %s", config.path, exc)
        service.stop()
        return 1
    drain = Drain()
    server = _Server(uvicorn_config(config, service, drain), service, drain, _example_for(config))
    previous = _install_signal_handlers(service, server)
    _freeze_startup_heap()
    try:
        server.run(sockets=[sock])
    finally:
        service.stop()  # idempotent: a no-op after the lifespan's shutdown
        _restore(previous)
    return 0 if server.started else 1


def uvicorn_config(config: Config, service: Service, drain: Drain) -> uvicorn.Config:
    """uvicorn's settings for ``config``: the app, and every bound on a connection."""
    timeouts = ReadTimeouts(
        header_seconds=config.read_header_timeout_ms / 1000,
        read_seconds=config.read_timeout_ms / 1000,
        on_timeout=service.metrics.observe_read_timeout,
    )
    rules = ConnectionRules(write_seconds=config.write_timeout_ms / 1000)
    app = create_app(service)
    direct = direct_route(app, access_log=config.access_log)
    return uvicorn.Config(
        AccessLog(app) if config.access_log else app,
        http=edge_protocol(timeouts, rules, drain, direct),
        lifespan="on",
        # The peer is never rewritten from proxy headers (not even with env
        # FORWARDED_ALLOW_IPS): _admin reads X-Forwarded-For from --trust-proxy peers only.
        proxy_headers=False,
        access_log=False,
        log_config=None,
        log_level=config.log_level,
        timeout_graceful_shutdown=int(config.drain_seconds),
        # uvicorn types it int, but only hands it to loop.call_later: milliseconds hold.
        timeout_keep_alive=config.idle_timeout_ms / 1000,  # type: ignore[arg-type]
        # uvicorn answers 503 once open connections (the asking one included) reach the
        # limit: + 1 serves exactly max_connections of them (probes: always, _protocol).
        limit_concurrency=config.max_connections + 1 if config.max_connections > 0 else None,
    )


def _example_for(config: Config) -> bytes:
    try:
        return example_request(read_config_file(config.path, config.max_config_bytes))
    except BuildError:
        return b'{"common": {}, "items": []}'


def _install_signal_handlers(service: Service, server: uvicorn.Server) -> dict[int, object]:
    """SIGHUP reloads; SIGTERM/SIGINT ask ``server`` to exit.

    uvicorn installs its own handlers while it runs and re-raises a captured
    signal after it; before that (a worker whose supervisor died while it was
    starting) ``should_exit`` makes the server stop as soon as it has started,
    so no SIGTERM is ever lost.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}

    def on_hup(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=_reload_on_signal, args=(service,), name="pineapple-sighup").start()

    def after_shutdown(signum: int, frame: FrameType | None) -> None:
        server.should_exit = True
        _log.info("shut down after %s", signal.Signals(signum).name)

    previous: dict[int, object] = {}
    for signum, handler in (
        (signal.SIGHUP, on_hup),
        (signal.SIGTERM, after_shutdown),
        (signal.SIGINT, after_shutdown),
    ):
        previous[signum] = signal.signal(signum, handler)
    return previous


def _reload_on_signal(service: Service) -> None:
    """SIGHUP: reload (``service.decisions`` decides where)."""
    try:
        service.decisions.reload("signal", force=False)
    except PineappleError as exc:
        _log.error("SIGHUP: cannot reload: %s", exc)


def _restore(previous: dict[int, object]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


def exit_within(code: int, seconds: float = EXIT_GRACE_SECONDS) -> None:
    """Arm a last resort: if the process still runs ``seconds`` from now, end it with ``code``.

    For the ``serve`` command only, once ``run`` has returned: the interpreter's
    exit joins every non-daemon thread (a refresh thread still in a fetch that
    could not be cancelled, e.g. a TCP connect to an unreachable host), which
    would make shutdown as long as that fetch. The timer thread is a daemon,
    so a normal exit never waits for it.
    """

    def force() -> None:
        busy = sorted(t.name for t in threading.enumerate() if not t.daemon and t.is_alive())
        _log.warning("still running %.1fs after shutdown (%s); exiting now", seconds, busy)
        logging.shutdown()
        os._exit(code)

    timer = threading.Timer(seconds, force)
    timer.daemon = True
    timer.name = "pineapple-exit-guard"
    timer.start()
