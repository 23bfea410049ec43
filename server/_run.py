"""``run(Config)``: serve until SIGTERM/SIGINT; ``check``: validate like ``nginx -t``.

One process: start the service (read -> Engine -> resources -> start ->
deps), bind the port, serve (``server/http/_serving.py``). Any failure before
listening returns exit code 1 with the reason logged, and leaves nothing
running. ``workers > 1``: the parent binds the port once and becomes the
supervisor of that many worker processes sharing the socket
(``server/workers/``): it reads, parses and validates the config once, loads
the data resources once, and the workers map them.

A pod in a fleet (``config.fleet``): the fleet's parts are assembled here
once (``server/fleet/_pod.py``), and the process that fetches shared
resources (the single process, or the supervisor) reads them from the fleet
and follows it.
"""

from __future__ import annotations

import dataclasses
import logging

from pineapple import PineappleError, resource

from ._admin import AdminTokenError
from ._build import Builder, import_plugins
from ._build_error import BuildError
from ._config import Config
from ._cpu_pin import cpu_for, pin_process
from ._history_pod import HistoryPod
from ._log_format import configure_logging
from .fleet._pod import FleetPod
from .http._serving import bind, serve
from .http._uvicorn_range import UnsupportedUvicornError, check_uvicorn
from .workers import run_supervisor

__all__ = ["check", "run"]

_log = logging.getLogger("pineapple.server")


def check(config: Config, *, fetch: bool = False) -> list[str]:
    """Validate ``config`` without serving: the resource names, or :class:`BuildError`.

    Reads the file, builds the Engine, registers every resource (fetching
    only with ``fetch``) and validates operator -> resource dependencies.
    """
    import_plugins(config.plugins)
    data = config.wiring.read_config(config.path, config.max_config_bytes)
    return Builder(config).check(data, fetch=fetch)


def run(config: Config) -> int:
    """Serve ``config`` until SIGTERM/SIGINT; the process exit code (0: clean shutdown)."""
    configure_logging(config.log_level, config.log_format)
    try:
        check_uvicorn()
        config.resolved_admin_token()
    except (UnsupportedUvicornError, AdminTokenError) as exc:
        _log.error("not serving %s: %s", config.path, exc)
        return 1
    if config.fleet is None:
        return _run(config, None)
    try:
        import_plugins(config.plugins)  # the fleet's registry wraps the types they add
        pod = FleetPod(config.fleet)
    except (PineappleError, OSError) as exc:
        _log.error("not serving in the fleet %s: %s", config.fleet.url, exc)
        return 1
    try:
        return _run(config, pod)
    finally:
        pod.close()


def _run(config: Config, pod: FleetPod | None) -> int:
    history = HistoryPod.open(config)  # None in a fleet: the fleet keeps its own
    if config.workers > 1:
        return _run_workers(config, pod, history)
    cpu = cpu_for(0) if config.pin_cpus else None
    if cpu is not None:
        pin_process(cpu, "the server")
    try:
        sock = bind(config.addr)
    except (OSError, ValueError) as exc:
        _log.error("cannot listen on %s: %s", config.addr, exc)
        return 1
    with sock:
        if history is not None:
            return serve(history.wired(config), sock, history.attach_service)
        if pod is None:
            return serve(config, sock)
        wired = dataclasses.replace(config, wiring=pod.wiring(config, _base(config)))
        return serve(wired, sock, pod.attach_service)


def _base(config: Config) -> resource.Registry:
    return config.resource_types()


def _run_workers(config: Config, pod: FleetPod | None, history: HistoryPod | None) -> int:
    try:
        import_plugins(config.plugins)
    except BuildError as exc:
        _log.error("not serving %s: %s", config.path, exc)
        return 1
    # A fleet pod's supervisor alone reads the fleet (its own wiring); workers map from it.
    # So does the history's source (a pinned revision): the supervisor alone reads it.
    wiring = None if pod is None else pod.wiring(config, _base(config))
    if history is not None:
        wiring = history.authority_wiring()
    try:
        sock = bind(config.addr)
    except (OSError, ValueError) as exc:
        _log.error("cannot listen on %s: %s", config.addr, exc)
        return 1
    with sock:  # the supervisor validates the config as it loads it (nothing listens yet)
        if history is not None:
            return run_supervisor(config, sock, wiring, history.attach_authority)
        if pod is None:
            return run_supervisor(config, sock)
        return run_supervisor(config, sock, wiring, pod.attach_authority)
