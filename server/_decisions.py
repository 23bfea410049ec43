"""``Decisions``: the one interface for every decision and every status of a server.

Routes, the admin CLI (over HTTP) and signals ask a ``Decisions`` to reload
(``force``), refresh (``force``), roll back, pin or unpin a resource, and for
the status of the resources, of the config and of readiness. They never ask
which process model runs:

- one process: :class:`LocalDecisions` acts on this process's serving snapshot;
- ``--workers N``: ``SupervisorLink`` (``server/workers/worker/_supervisor_link.py``) asks the
  supervisor, which answers with :func:`act` and :func:`status_body` over its
  own Manager, the one that fetches what it shares; so a worker's answer is
  the single-process answer, about the pod.

The choice is made once, where a worker is assembled (its ``Role``, given to
its ``Service`` at construction).

Every refusal is a :class:`Refused`: an HTTP status from :data:`STATUS_OF_ERROR`
(one table, keyed by the exception class), the redacted message, and the
status of the resource it concerns (when there is one).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

import pineapple
from pineapple import PineappleError, resource
from pineapple._error_text import capped
from pineapple.resource import ResourceStatus

from ._config import source_view
from ._config_read import describe_path
from ._reload_policy import Trigger
from ._reloader import Reloader
from ._snapshot import Snapshot, SnapshotHolder

__all__ = [
    "ACTIONS",
    "STATUS_OF_ERROR",
    "Action",
    "Decisions",
    "LocalDecisions",
    "Refused",
    "act",
    "act_refused",
    "http_status",
    "readiness_of",
    "stale_sources",
    "status_body",
]

Action = Literal["refresh", "rollback", "pin", "unpin"]
ACTIONS: tuple[Action, ...] = ("refresh", "rollback", "pin", "unpin")

STATUS_OF_ERROR: dict[type[BaseException], int] = {
    resource.UnknownResourceError: 404,
    resource.PinnedError: 409,
    resource.NoPreviousValueError: 409,
    resource.ValidationRefusedError: 422,
    resource.MemoryBudgetExceededError: 507,
    resource.RefreshError: 502,
    resource.ManagerStateError: 503,
}
"""HTTP status of each refusal, by class (a subclass takes its nearest listed base)."""


def http_status(exc: BaseException, default: int = 502) -> int:
    """The status :data:`STATUS_OF_ERROR` gives ``exc`` (a :class:`Refused` carries its own)."""
    if isinstance(exc, Refused):
        return exc.status
    for cls in type(exc).__mro__:
        status = STATUS_OF_ERROR.get(cls)
        if status is not None:
            return status
    return default


class Refused(PineappleError):
    """A decision was refused: ``status`` (HTTP), the message (at most ``MAX_ERROR_BYTES``,
    cut here), and ``resource``'s status."""

    def __init__(self, status: int, message: str, resource: dict[str, Any] | None = None):
        super().__init__(capped(message))
        self.status = status
        self.resource = resource
        """The status of the resource concerned (``GET /resources/{name}``'s), if any."""

    def to_dict(self) -> dict[str, Any]:
        """The body of the HTTP answer (and of the control channel's error reply)."""
        body: dict[str, Any] = {"error": str(self)}
        if self.resource is not None:
            body["resource"] = self.resource
        return body


class Decisions(Protocol):
    """What routes, the CLI and signals ask (see module docs). Blocking: call off the loop."""

    def reload(self, trigger: Trigger, force: bool) -> dict[str, Any]:
        """Reload the config; the outcome (``result`` ``ok``/``unchanged``/``error``)."""
        ...

    def act(self, action: Action, name: str, force: bool = False) -> dict[str, Any]:
        """Refresh, roll back, pin or unpin ``name``; the answer with its ``status``."""
        ...

    def resources(self) -> dict[str, Any]:
        """``GET /resources``: every resource's status, and the memory in use."""
        ...

    def resource(self, name: str) -> dict[str, Any]:
        """``GET /resources/{name}``: its status and description."""
        ...

    def config(self) -> dict[str, Any]:
        """``GET /config``: what config serves and the last reloads."""
        ...

    def readiness(self) -> tuple[int, dict[str, Any]]:
        """``GET /readyz``: the HTTP status and body."""
        ...


def status_body(manager: resource.Manager, name: str) -> dict[str, Any]:
    """The status of ``name`` in ``manager``; :class:`Refused` (404) for an unknown name."""
    try:
        return manager.status_of(name).to_dict()
    except resource.UnknownResourceError as exc:
        raise Refused(http_status(exc), str(exc)) from None


def _answer(manager: resource.Manager, action: Action, name: str, force: bool) -> dict[str, Any]:
    if action == "refresh":
        return {"result": manager.refresh(name, force=force), "forced": force}
    if action == "rollback":
        return {"result": "rolled_back", "version": manager.rollback(name)}
    if action == "pin":
        manager.pin(name)
        return {"result": "pinned"}
    return {"result": "unpinned" if manager.unpin(name) else "not_pinned"}


def act(
    manager: resource.Manager, action: Action, name: str, force: bool = False
) -> dict[str, Any]:
    """Run ``action`` on ``name`` in ``manager``: the answer with the resource's status
    after it; a refusal is :class:`Refused` with the status it maps to and that status."""
    try:
        body = _answer(manager, action, name, force)
    except PineappleError as exc:
        raise act_refused(manager, name, exc) from None
    body["status"] = status_body(manager, name)
    return body


def act_refused(manager: resource.Manager, name: str, exc: PineappleError) -> Refused:
    """``exc`` of an action on ``name`` as its :class:`Refused`, with the resource's status
    after it (none for an unknown resource or a stopped manager)."""
    if isinstance(exc, Refused):
        return exc
    if isinstance(exc, (resource.UnknownResourceError, resource.ManagerStateError)):
        return Refused(http_status(exc), str(exc))  # no resource status to show
    return Refused(http_status(exc), str(exc), status_body(manager, name))


def stale_sources(manager: resource.Manager) -> dict[str, str]:
    """``name -> why`` of every resource whose source says its value is stale (a fleet pod
    serving its cache while the store is down): ready, but ``/readyz`` says so."""
    stale = {}
    for status in manager.status():  # bounded: the resources
        fresh = status.condition("Fresh")
        if status.source is not None and fresh is not None and fresh.status == "False":
            stale[status.name] = f"{fresh.reason}: {fresh.message}"
    return stale


def readiness_of(manager: resource.Manager, serial: int) -> tuple[int, dict[str, Any]]:
    """The single-process readiness rule over a loaded ``manager``."""
    halted = manager.halted_reason
    if halted is not None:  # values are served but will never refresh again
        return 503, {"status": "refresh stopped", "reason": halted}
    body: dict[str, Any] = {"status": "ready", "snapshot": serial}
    stale = stale_sources(manager)
    if stale:
        body["stale"] = stale
    return 200, body


class LocalDecisions:
    """:class:`Decisions` of one process: this process's snapshot, reloader and config."""

    def __init__(
        self,
        holder: SnapshotHolder,
        reloader: Reloader,
        config_path: Path,
        draining: Callable[[], bool],
    ) -> None:
        self.holder = holder
        """The serving snapshot's holder."""
        self.reloader = reloader
        """This process's reloads."""
        self._path = config_path
        self._draining = draining

    def _borrow(self) -> Snapshot:
        snap = self.holder.acquire()
        if snap is None:
            raise Refused(503, "no config is being served")
        return snap

    def reload(self, trigger: Trigger, force: bool) -> dict[str, Any]:
        return self.reloader.reload(trigger, force=force).to_dict()

    def act(self, action: Action, name: str, force: bool = False) -> dict[str, Any]:
        snap = self._borrow()
        try:
            return act(snap.manager, action, name, force)
        finally:
            snap.release()

    def resources(self) -> dict[str, Any]:
        snap = self._borrow()
        try:
            statuses = [st.to_dict() for st in snap.manager.status()]
            memory = snap.manager.memory()
        finally:
            snap.release()
        return {
            "snapshot": snap.serial,
            "worker": os.getpid(),
            "resources": statuses,
            "memory": memory,
        }

    def resource(self, name: str) -> dict[str, Any]:
        snap = self._borrow()
        try:
            status = status_body(snap.manager, name)
            description = snap.manager.describe(name)
        finally:
            snap.release()
        return {"status": status, "description": description, "worker": os.getpid()}

    def manager_of(self, name: str) -> tuple[Snapshot, ResourceStatus]:
        """The borrowed serving snapshot (release it) and the status of ``name`` in it."""
        snap = self._borrow()
        try:
            return snap, snap.manager.status_of(name)
        except resource.UnknownResourceError as exc:
            snap.release()
            raise Refused(http_status(exc), str(exc)) from None

    def config(self) -> dict[str, Any]:
        snap = self.holder.current
        reloader = self.reloader
        return {
            "pineapple_version": pineapple.__version__,
            "config": snap.info.to_dict() if snap is not None else None,
            # What the path is now (a FIFO or a directory is shown, never opened).
            "file": describe_path(self._path),
            "snapshot": snap.serial if snap is not None else None,
            "in_flight": max(0, snap.refs - 1) if snap is not None else 0,
            "reload_attempts": reloader.attempts,
            "last_reload": reloader.last.to_dict() if reloader.last else None,
            "last_reload_error": reloader.last_error.to_dict() if reloader.last_error else None,
            "config_source": source_view(reloader.config_source),
        }

    def readiness(self) -> tuple[int, dict[str, Any]]:
        if self._draining():
            return 503, {"status": "draining"}
        snap = self.holder.current
        if snap is None:
            return 503, {"status": "not loaded"}
        code, body = readiness_of(snap.manager, snap.serial)
        stale = (source_view(self.reloader.config_source) or {}).get("stale")
        if code == 200 and stale:  # the config itself serves from a cache (a fleet store down)
            body["config_stale"] = stale
        return code, body
