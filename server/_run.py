"""``run(Config)``: serve until SIGTERM/SIGINT; ``check``: validate like ``nginx -t``.

One process: start the service (read -> Engine -> resources -> start ->
deps), bind the port, serve (``server/_serving.py``). Any failure before
listening returns exit code 1 with the reason logged, and leaves nothing
running. ``workers > 1``: the parent validates the config, binds the port
once and becomes the supervisor of that many worker processes sharing the
socket (``server/workers/``): it loads the data resources once and the
workers map them.
"""

from __future__ import annotations

import logging

from ._admin import AdminTokenError
from ._build import Builder, import_plugins
from ._build_error import BuildError
from ._config import Config
from ._config_read import read_config_file
from ._log_format import configure_logging
from ._serving import bind, serve
from ._uvicorn_range import UnsupportedUvicornError, check_uvicorn
from .workers import run_supervisor

__all__ = ["check", "run"]

_log = logging.getLogger("pineapple.server")


def check(config: Config, *, fetch: bool = False) -> list[str]:
    """Validate ``config`` without serving: the resource names, or :class:`BuildError`.

    Reads the file, builds the Engine, registers every resource (fetching
    only with ``fetch``) and validates operator -> resource dependencies.
    """
    import_plugins(config.plugins)
    data = read_config_file(config.path, config.max_config_bytes)
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
    if config.workers > 1:
        return _run_workers(config)
    try:
        sock = bind(config.addr)
    except (OSError, ValueError) as exc:
        _log.error("cannot listen on %s: %s", config.addr, exc)
        return 1
    with sock:
        return serve(config, sock)


def _run_workers(config: Config) -> int:
    try:
        names = check(config)
    except BuildError as exc:
        _log.error("not serving %s: %s", config.path, exc)
        return 1
    try:
        sock = bind(config.addr)
    except (OSError, ValueError) as exc:
        _log.error("cannot listen on %s: %s", config.addr, exc)
        return 1
    _log.info("config ok (%d resources); %d workers", len(names), config.workers)
    with sock:
        return run_supervisor(config, sock)
