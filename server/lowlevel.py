"""The server's plumbing: what code that assembles or embeds a server also builds on.

The face (:mod:`server`) holds the words a user types: ``Config``,
``Wiring``, ``HandResource``, ``run``, ``check``, ``create_app``,
``BuildError``, ``ADMIN_TOKEN_ENV``. This module holds the parts beneath
them, for tests, benchmarks and other engines:

- the engine contracts: ``EngineLike`` (what the server needs of an engine),
  ``EngineExtras`` (what it may also offer), ``Responder`` (``/execute``
  semantics);
- the serving state: ``Snapshot`` (an Engine and a Manager, served and
  retired together), ``SnapshotHolder``, ``ConfigInfo``;
- the moving parts: ``Service`` (one server's parts, started and stopped in
  order), ``Reloader`` and its ``ReloadOutcome``.

Same rules as the face: ``tests/server/test_face.py`` pins ``__all__``.
"""

from ._config import EngineLike as EngineLike
from ._config import Responder as Responder
from ._engine_extras import EngineExtras as EngineExtras
from ._reload_policy import ReloadOutcome as ReloadOutcome
from ._reloader import Reloader as Reloader
from ._service import Service as Service
from ._snapshot import ConfigInfo as ConfigInfo
from ._snapshot import Snapshot as Snapshot
from ._snapshot import SnapshotHolder as SnapshotHolder

__all__ = [
    "ConfigInfo",
    "EngineExtras",
    "EngineLike",
    "ReloadOutcome",
    "Reloader",
    "Responder",
    "Service",
    "Snapshot",
    "SnapshotHolder",
]
