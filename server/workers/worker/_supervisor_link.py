"""A worker's side of ``--workers N``: the config it is given, and the way to its supervisor.

A worker never reads the config file and never decides anything shared:

- :class:`SharedConfigSource` is its wiring's config source: the config bytes
  the supervisor accepted (the ``_config`` entry of the store's manifest), so
  every worker builds exactly the same bytes (its first config and each
  generation it follows are read from the store, ``_main.py``, ``_follower.py``);
- :class:`SupervisorChannel` asks the supervisor over the control channel;
- :class:`SupervisorLink` is the worker's ``Decisions`` (``server/_decisions.py``):
  ``POST /admin/reload``, SIGHUP and the admin actions on shared resources
  (refresh, rollback, pin, unpin) are the supervisor's, asked over the
  control channel; the worker then catches up with what it published before
  answering (the follower's pass, given at construction), so the answering
  worker already serves the result. The status
  of a shared resource (``/resources``, an admin answer) is the
  supervisor's, plus a ``worker`` block saying what this worker maps. A
  resource that is not shared is this worker's own (:class:`LocalDecisions`).
  Statuses (``/resources``, ``/config``, ``/readyz``) are read from the
  status the supervisor posts in the store (``server/workers/_pod_status.py``),
  never asked over the control channel, whose slots are the admin's.

Guarantees:
- Nothing here holds state that another thread writes: the generation shown
  is the follower's (``ConfigFollow.served``, written by its pass alone), the
  pod's statuses are read from the file the supervisor posts, and every call
  to the supervisor waits at most ``timeout``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pineapple import resource
from pineapple._error_text import capped

from ..._decisions import Action, LocalDecisions, Refused
from ..._reload_policy import Trigger
from .._control import CONTROL_SOCKET, ControlError, call, refusal_of
from .._pod_status import STATUS_FILE, StatusReader
from .._store_format import CONFIG_ENTRY, RELOAD_ENTRY, codec_of
from ._follower import Follower
from ._mapping import MappedStore

_log = logging.getLogger("pineapple.server")

__all__ = ["SharedConfigSource", "SupervisorChannel", "SupervisorLink"]


class SharedConfigSource:
    """The config bytes the supervisor accepted, read from the store (a ``ConfigSource``)."""

    def __init__(self, store: MappedStore) -> None:
        self._store = store

    def read(self, max_bytes: int) -> bytes:
        """The newest accepted config's bytes (``ConfigFileError`` when there is none)."""
        return self._store.read_config(max_bytes)[1]


class SupervisorChannel:
    """A worker's requests to its supervisor over the control channel."""

    def __init__(self, store: MappedStore, timeout: float) -> None:
        self._path = store.path / CONTROL_SOCKET
        self.timeout = timeout
        """Longest wait for the supervisor's answer (a reload may build for a while)."""

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The supervisor's answer to ``request`` within ``timeout``; :class:`Refused`
        when it refused or cannot be asked."""
        try:
            reply = call(self._path, request, self.timeout)
        except ControlError as exc:
            raise Refused(503, str(exc)) from None
        refused = refusal_of(reply)
        if refused is not None:
            raise refused
        return reply

    def cannot_build(self, generation: int, why: str) -> None:
        """Tell the supervisor this worker cannot build ``generation`` (it then rolls back).

        Bounded: one control call (at most ``timeout``); ``why`` is cut to
        ``MAX_ERROR_BYTES``. A supervisor that cannot be told is logged, not retried.
        """
        request = {"op": "cannot_build", "generation": generation, "error": capped(why)}
        try:
            self.ask(request)  # answered at once: the rollback runs on its own thread
        except Refused as exc:
            _log.warning("cannot tell the supervisor about generation %d: %s", generation, exc)


class SupervisorLink:
    """A worker's :class:`~server._decisions.Decisions` (see module docs)."""

    def __init__(
        self,
        store: MappedStore,
        channel: SupervisorChannel,
        local: LocalDecisions,
        follower: Follower,
        registry: resource.Registry | None = None,
    ) -> None:
        self._store = store
        self._registry = registry if registry is not None else resource.lowlevel.default_registry()
        """The worker's resource types: those with a codec are the shared ones."""
        self.channel = channel
        self.local = local
        """This worker's own decisions (for what it does not share)."""
        self.follower = follower
        """Maps what the supervisor published (its pass is this worker's catch-up)."""
        self.pod = StatusReader(store.path / STATUS_FILE)
        """The status the supervisor posts (shared resources, reloads, ``halted``)."""

    # -- decisions ----------------------------------------------------------------------

    def reload(self, trigger: Trigger, force: bool) -> dict[str, Any]:
        """Ask the supervisor to reload; its outcome, once this worker serves the result."""
        outcome = self.channel.ask({"op": "reload", "trigger": trigger, "force": force})
        if outcome.get("result") == "ok":
            self.follower.follow()
        return {**outcome, "worker": self.describe()}

    def act(self, action: Action, name: str, force: bool = False) -> dict[str, Any]:
        """A shared resource's action is the supervisor's, then mapped here; others local."""
        if not self._shares(name):
            return self.local.act(action, name, force)
        try:
            body = self.channel.ask({"op": action, "name": name, "force": force})
        except Refused as exc:
            if exc.resource is not None:
                exc.resource = self._merged(name, exc.resource)
            raise
        self.follower.follow()
        body["status"] = self._merged(name, body["status"])
        return body

    # -- statuses -----------------------------------------------------------------------

    def resources(self) -> dict[str, Any]:
        body = self.local.resources()
        local = body["resources"]
        if any(self._shared(st["type"]) for st in local):
            pod = self.pod.resources()
            body["resources"] = [
                _with_worker(pod[st["name"]], st) if st["name"] in pod else st for st in local
            ]
        return body

    def resource(self, name: str) -> dict[str, Any]:
        body = self.local.resource(name)
        if self._shared(body["status"]["type"]):
            pod = self.pod.resources()
            if name in pod:
                body["status"] = _with_worker(pod[name], body["status"])
        return body

    def config(self) -> dict[str, Any]:
        body = self.local.config()
        pod = self.pod.config()
        shared = self.describe()
        shared["worker_last_reload"] = body["last_reload"]  # this worker's switch
        for key in ("reload_attempts", "last_reload", "last_reload_error", "config_source"):
            body[key] = pod.get(key)
        body["shared"] = shared
        return body

    def readiness(self) -> tuple[int, dict[str, Any]]:
        code, body = self.local.readiness()
        if code != 200:
            return code, body
        try:  # what the supervisor last posted: no channel slot, whatever reads run
            pod = self.pod.config()
        except Refused as exc:
            return 503, {"status": "no supervisor", "reason": str(exc)}
        halted = pod.get("halted")
        if halted is not None:  # the one process that refreshes what it shares stopped
            return 503, {"status": "refresh stopped", "reason": halted}
        stale = {**body.get("stale", {}), **(pod.get("stale") or {})}
        if stale:  # what the supervisor shares and could not confirm (a fleet store down)
            body["stale"] = stale
        config_stale = (pod.get("config_source") or {}).get("stale")
        if config_stale:  # the supervisor's config serves from the fleet cache
            body["config_stale"] = config_stale
        return code, body

    def _shares(self, name: str) -> bool:
        """Whether ``name`` is a shared resource (its admin actions are the supervisor's)."""
        snap, status = self.local.manager_of(name)
        snap.release()
        return self._shared(status.type)

    def _shared(self, type_name: str) -> bool:
        """Whether resources of ``type_name`` are the supervisor's (their type has a codec)."""
        return codec_of(self._registry, type_name) is not None

    def _merged(self, name: str, pod: dict[str, Any]) -> dict[str, Any]:
        """The supervisor's status of ``name`` with what this worker maps of it."""
        snap, status = self.local.manager_of(name)
        snap.release()
        return _with_worker(pod, status.to_dict())

    def describe(self) -> dict[str, Any]:
        """What ``GET /config`` shows of the shared config in this worker."""
        manifest = self._store.manifest()
        latest = manifest.get(CONFIG_ENTRY) or {}
        return {
            "pid": os.getpid(),
            "config_generation": self.follower.generation,
            "latest_config_generation": latest.get("generation"),
            "supervisor_last_reload": manifest.get(RELOAD_ENTRY),
        }


def _with_worker(pod: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """``pod`` (the supervisor's status) plus ``worker``: what this worker maps."""
    return {
        **pod,
        "worker": {
            "pid": os.getpid(),
            "version": local["version"],
            "summary": local["summary"],
            "loaded_at": local["loaded_at"],
        },
    }
