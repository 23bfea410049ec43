"""A worker's side of ``--workers N``: the config it is given, and the way to its supervisor.

A worker never reads the config file and never decides anything shared:

- :class:`SharedConfigSource` hands its Reloader the config bytes the
  supervisor accepted (the ``_config`` entry of the store's manifest), so
  every worker builds exactly the same bytes;
- :class:`SupervisorLink` forwards ``POST /admin/reload``, SIGHUP and the
  admin actions on shared resources (refresh, pin, unpin) to the supervisor
  over the control channel, then catches up with what it published before
  answering, so the answering worker already serves the result.

``rollback`` of a shared resource is refused with ``--workers``: the
supervisor does not keep a previous snapshot (its files are unlinked once a
newer generation is published), and a rollback in one worker alone would
make workers disagree. Pin the resource and fix the source instead.

Guarantees:
- ``served`` and ``last_read`` are written only by the follower's pass
  (one at a time, under the follower's pass lock) and by the worker's start,
  before the follower runs; other threads only read them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pineapple import PineappleError, resource

from ._control import CONTROL_SOCKET, ControlError, call
from ._shared import CONFIG_ENTRY, RELOAD_ENTRY, SharedStore, codec_of

__all__ = ["REFUSAL_STATUS", "SharedConfigSource", "SupervisorLink", "SupervisorRefusal"]

REFUSAL_STATUS: dict[str, int] = {
    "UnknownResourceError": 404,
    "PinnedError": 409,
    "NoPreviousValueError": 409,
    "RollbackUnsupported": 409,
    "ValidationRefusedError": 422,
    "MemoryBudgetExceededError": 507,
    "RefreshError": 502,
    "ManagerStateError": 503,
    "Busy": 503,
    "ControlError": 503,
}
"""HTTP status of each refusal kind the supervisor answers (other kinds: 502)."""


class SupervisorRefusal(PineappleError):
    """The supervisor refused (or could not be asked); ``kind`` names why, ``status`` maps it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = REFUSAL_STATUS.get(kind, 502)


class SharedConfigSource:
    """The config bytes the supervisor accepted, read from the store (a ``ConfigSource``)."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store
        self.last_read = 0
        """Generation of the bytes last handed out."""
        self.served = 0
        """Generation of the config this worker serves (0 before its first build)."""

    def read(self, max_bytes: int) -> bytes:
        """The newest accepted config's bytes (``ConfigFileError`` when there is none)."""
        generation, data = self._store.read_config(max_bytes)
        self.last_read = generation
        return data


class SupervisorLink:
    """A worker's requests to its supervisor (see module docs)."""

    def __init__(
        self,
        store: SharedStore,
        source: SharedConfigSource,
        timeout: float,
        registry: resource.Registry | None = None,
    ) -> None:
        self._store = store
        self._registry = registry if registry is not None else resource.default_registry()
        """The worker's resource types: those with a codec are the shared ones."""
        self.source = source
        self.timeout = timeout
        """Longest wait for the supervisor's answer (a reload may build for a while)."""
        self.catch_up: Callable[[], None] = lambda: None
        """Maps what the supervisor published (set to the follower's pass once it runs)."""

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = call(self._store.path / CONTROL_SOCKET, request, self.timeout)
        except ControlError as exc:
            raise SupervisorRefusal("ControlError", str(exc)) from None
        error = reply.get("error")
        if isinstance(error, dict):
            raise SupervisorRefusal(str(error.get("kind")), str(error.get("message")))
        return reply

    def reload(self, trigger: str, force: bool) -> dict[str, Any]:
        """Ask the supervisor to reload; its outcome, once this worker serves the result."""
        outcome = self._call({"op": "reload", "trigger": trigger, "force": force})
        if outcome.get("result") == "ok":
            self.catch_up()
        return {**outcome, "worker": self.describe()}

    def shares(self, manager: resource.Manager, name: str) -> bool:
        """Whether ``name`` is a shared resource (its admin actions are the supervisor's)."""
        return codec_of(self._registry, manager.status_of(name).type) is not None

    def resource_action(self, action: str, name: str, force: bool = False) -> dict[str, Any]:
        """``refresh``/``pin``/``unpin`` decided by the supervisor, then mapped here."""
        if action == "rollback":
            raise SupervisorRefusal(
                "RollbackUnsupported",
                f"resource {name!r} is shared by every worker: rollback is not supported with "
                "--workers (the supervisor keeps no previous snapshot); pin it and fix the source",
            )
        reply = self._call({"op": action, "name": name, "force": force})
        self.catch_up()
        return reply

    def describe(self) -> dict[str, Any]:
        """What ``GET /config`` shows of the shared config in this worker."""
        manifest = self._store.manifest()
        latest = manifest.get(CONFIG_ENTRY) or {}
        return {
            "pid": os.getpid(),
            "config_generation": self.source.served,
            "latest_config_generation": latest.get("generation"),
            "supervisor_last_reload": manifest.get(RELOAD_ENTRY),
        }
