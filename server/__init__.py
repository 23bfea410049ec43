"""The Pineapple server: a hot-reloading HTTP service around an Engine and a Manager.

    from server import Config, run
    run(Config(config_path="configs/demo.json", addr="127.0.0.1:8080"))

Layers (each imports only the ones above it):

    _config, _admin              Config (user settings), Wiring (injection points), the
                                 engine/responder contracts; who may use admin routes
    _snapshot                    Snapshot (Engine + Manager, ref-counted), SnapshotHolder
    _build                       building a snapshot step by step (Engine, Manager, checks)
    _metrics, _reload_policy     Prometheus metrics; the one reload decision over a target
                                 (ReloadPolicy, ReloadTarget, ReloadOutcome)
    _reloader                    one process's target: parse once, build, swap
    _decisions                   Decisions: every decision and status routes and signals ask for
    _watcher, _service           the directory watcher; the service that owns all of it
    _execute, _routes            HTTP: /execute, the other routes
    _direct                      small /execute requests answered by the protocol itself
    _app, _serving               the Starlette app; serving one process on a bound socket
    workers/                     ``--workers N``: ``supervisor/`` and ``worker/`` (a path
                                 says which process runs a line), ``_store_format``,
                                 ``_control``, ``_config_leases``, ``_liveness`` for both
    _run, _cli, _commands        run()/check() (the one place that picks the mode); the
                                 CLI subcommands

``import server`` loads all of it, ``workers/`` included (``_run`` imports
``run_supervisor``), but no pyarrow: the built-in resource types and their
codecs load with the first build (``pineapple.builtins``).

The face lists the words a user types; the plumbing beneath it (``Service``,
``Reloader``, ``ReloadOutcome``, ``Snapshot``, ``SnapshotHolder``, ``ConfigInfo``,
the engine contracts ``EngineLike``, ``EngineExtras``, ``Responder``) is
:mod:`server.lowlevel`.

Read the "Guarantees:" blocks of ``_snapshot``, ``_reload_policy``, ``_reloader`` and
``_watcher``.
"""

# First: decides, before any of it loads, whether the server's compiled group runs.
from . import _native as _native
from . import lowlevel as lowlevel
from ._build_error import BuildError as BuildError
from ._config import ADMIN_TOKEN_ENV as ADMIN_TOKEN_ENV
from ._config import Config as Config
from ._config import HandResource as HandResource
from ._config import Wiring as Wiring
from ._run import check as check
from ._run import run as run
from .http._app import create_app as create_app

__all__ = [
    "ADMIN_TOKEN_ENV",
    "BuildError",
    "Config",
    "HandResource",
    "Wiring",
    "check",
    "create_app",
    "run",
]
