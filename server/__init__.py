"""The Pineapple server: a hot-reloading HTTP service around an Engine and a Manager.

    from server import Config, run
    run(Config(config_path="configs/demo.json", addr="127.0.0.1:8080"))

Floors, bottom up (each imports only its own and the ones below; ``README.md`` draws
them and ``tests/test_import_graph.py`` checks them):

    ground       _native, _atomic_file, _log_format, _build_error, _admin,
                 _engine_extras, _parse_budget, _secret_files
    metrics/     the Prometheus registry and its families (reads the snapshot as Served)
    model        _config_read, _config, _snapshot, _build
    lifecycle    _logmask, _reload_policy, _reloader, _decisions, _watcher, _service
    http/        the edge: one protocol class, /execute, the routes, the app, serving
    processes    workers/ (``--workers N``), fleet/ (``--fleet URL``), _run (picks the mode)
    cli/         the subcommands, and the Go server's command lines
    faces        this module, lowlevel

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
