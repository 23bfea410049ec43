"""``HistoryDecisions``: what the config-history routes ask, whatever process model runs.

``GET /config/history``, ``GET /config/diff``, ``POST
/admin/config/rollback/{revision}`` and ``POST /admin/config/unpin`` ask a
``HistoryDecisions``:

- the process that decides reloads (one process; under ``--workers N`` the
  supervisor) answers with :class:`LocalHistory`, over its
  :class:`~server._config_history.ConfigHistory` and its reload;
- a worker answers with ``HistoryLink`` (``server/workers/worker/_history_link.py``):
  reads from the pod's status and the state directory, decisions asked of the
  supervisor over the control channel (:data:`CONTROL_OPS`, answered by
  :meth:`LocalHistory.handle`).

A rollback pins the revision (the reload authority then reads its kept bytes,
not the file: a later edit of the file is not applied) and reloads; a
rollback whose reload fails is undone (the pin goes back to what it was) and
answered 422 with the reload's outcome. ``unpin`` drops the pin and reloads
from the file. Every refusal is a :class:`~server._decisions.Refused`.

:class:`RememberingDecisions` wraps a ``Decisions`` so that an admin's pin,
rollback and unpin of a resource are kept in the history, with the value
pinned when its type has a codec (``server/_kept_values.py``), and applied
again by :func:`restore_resource_pins` when the server starts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from pineapple import PineappleError, resource

from ._config_diff import config_diff
from ._config_history import ConfigHistory, HistoryError
from ._decisions import Action, Decisions, Refused
from ._kept_values import KeptValues
from ._reload_policy import ReloadOutcome, Trigger

__all__ = [
    "CONTROL_OPS",
    "HistoryDecisions",
    "LocalHistory",
    "RememberingDecisions",
    "diff_body",
    "restore_resource_pins",
]

CONTROL_OPS = ("config_rollback", "config_unpin")
"""The control requests a worker sends for the history's decisions."""

_log = logging.getLogger("pineapple.server")


class HistoryDecisions(Protocol):
    """What the history routes ask (see module docs). Blocking: call off the loop."""

    def history(self) -> dict[str, Any]:
        """``GET /config/history``."""
        ...

    def diff(self, old: str, new: str | None) -> dict[str, Any]:
        """``GET /config/diff?from=&to=`` (``to`` None: the serving revision)."""
        ...

    def rollback(self, revision: str) -> dict[str, Any]:
        """Pin ``revision`` and serve it."""
        ...

    def unpin(self) -> dict[str, Any]:
        """Drop the pin and serve the file's config."""
        ...


def refused(exc: HistoryError) -> Refused:
    """A history refusal as the routes answer it."""
    return Refused(exc.status, str(exc))


Reader = Callable[[str], tuple[str, Callable[[], bytes]]]
"""A revision (or a prefix) -> its content hash and a reader of its kept bytes."""

_DIFFS_KEPT = 16
_diffs: dict[tuple[str, str], dict[str, Any]] = {}
_diff_lock = threading.Lock()


def diff_body(old: str, new: str, read: Reader) -> dict[str, Any]:
    """The diff of two revisions (see :data:`Reader`).

    ``GET /config/diff`` needs no token, so its work is bounded: diffs are
    computed one at a time (``_diff_lock``), and the last ``_DIFFS_KEPT`` are
    kept (a revision names its content: a kept diff never goes stale).
    """
    try:
        (a, old_bytes), (b, new_bytes) = read(old), read(new)
        with _diff_lock:
            body = _diffs.get((a, b))
            if body is None:
                body = {"from": a[:12], "to": b[:12], **config_diff(old_bytes(), new_bytes())}
                if len(_diffs) >= _DIFFS_KEPT:
                    del _diffs[next(iter(_diffs))]  # the oldest
                _diffs[(a, b)] = body
            return body
    except HistoryError as exc:
        raise refused(exc) from None
    except ValueError as exc:
        raise Refused(422, str(exc)) from None


class LocalHistory:
    """:class:`HistoryDecisions` of the process that owns the history (see module docs)."""

    def __init__(
        self,
        history: ConfigHistory,
        reload: Callable[[Trigger, bool], ReloadOutcome],
        serving: Callable[[], str | None],
    ) -> None:
        self.store = history
        self._reload = reload
        self._serving = serving
        """The content hash of the config that serves (None: none yet)."""

    def history(self) -> dict[str, Any]:
        body = self.store.describe()
        serving = self._serving()
        body["serving"] = serving[:12] if serving is not None else None
        return body

    def _read(self, revision: str) -> tuple[str, Callable[[], bytes]]:
        entry = self.store.resolve(revision)
        return entry.content_hash, lambda: self.store.bytes_of(entry)

    def diff(self, old: str, new: str | None) -> dict[str, Any]:
        serving = self._serving()
        target = new if new is not None else (serving or "")
        return diff_body(old, target, self._read)

    def rollback(self, revision: str) -> dict[str, Any]:
        try:
            entry = self.store.resolve(revision)
            before = self.store.pin(entry)
        except HistoryError as exc:
            raise refused(exc) from None
        outcome = self._reload("admin", False)
        if outcome.result == "error":
            self.store.unpin(restore=before)
            _log.error("rollback to config revision %s failed: %s", entry.revision, outcome.error)
            raise Refused(
                422,
                f"rollback to revision {entry.revision} failed at step {outcome.step}: "
                f"{outcome.error}",
            )
        _log.info("config revision %s pinned by a rollback (%s)", entry.revision, outcome.result)
        return {
            "result": "rolled_back",
            "revision": entry.revision,
            "pinned": entry.revision,
            "reload": outcome.to_dict(),
        }

    def unpin(self) -> dict[str, Any]:
        before = self.store.unpin()
        if before is None:
            return {"result": "not_pinned"}
        outcome = self._reload("admin", False)
        _log.info("config revision %s unpinned; the file's config: %s", before[:12], outcome.result)
        return {"result": "unpinned", "revision": before[:12], "reload": outcome.to_dict()}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """A worker's control request (:data:`CONTROL_OPS`)."""
        if request.get("op") == "config_unpin":
            return self.unpin()
        revision = request.get("revision")
        if not isinstance(revision, str) or len(revision) > 64:
            raise Refused(400, "control request 'config_rollback': a revision is required")
        return self.rollback(revision)


class RememberingDecisions:
    """A ``Decisions`` whose resource pins, rollbacks and unpins are kept in ``history``,
    with the value each pin holds (``keep(name)``: its record, ``server/_kept_values.py``)."""

    def __init__(
        self,
        inner: Decisions,
        history: ConfigHistory,
        keep: Callable[[str], dict[str, Any] | None],
        values: KeptValues,
    ) -> None:
        self._inner = inner
        self._history = history
        self._keep = keep
        self._values = values

    def act(self, action: Action, name: str, force: bool = False) -> dict[str, Any]:
        body = self._inner.act(action, name, force)
        if action != "refresh":
            remember(self._history, self._values, action, name, body, self._keep)
        return body

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._inner, attribute)


def remember(
    history: ConfigHistory,
    values: KeptValues,
    action: str,
    name: str,
    body: dict[str, Any],
    keep: Callable[[str], dict[str, Any] | None],
) -> None:
    """Keep an admin's successful ``action`` on ``name`` (``body``: its answer, which is
    told whether the value is kept: ``value_kept``, and why not)."""
    status = body.get("status")
    version = body.get("version")
    if version is None and isinstance(status, dict):
        version = status.get("version")
    record = keep(name) if action in ("pin", "rollback") else None
    if record is not None:
        body["value_kept"] = record.get("kept") is True
        if record.get("kept") is not True:
            body["value_not_kept"] = record.get("why")
            _log.warning(
                "resource %r: %s kept across a restart, its value not (%s): a restart re-reads it",
                name,
                action,
                record.get("why"),
            )
    replaced = history.note_resource(
        name, action, version if isinstance(version, int) else None, record
    )
    values.drop(replaced)


def restore_resource_pins(
    history: ConfigHistory, values: KeptValues, manager: resource.Manager
) -> None:
    """Pin again what an admin pinned or rolled back before the server restarted: the value
    kept in the state directory when there is one (``server/_kept_values.py``), else the
    value its start read, and the ``Pinned`` condition says which."""
    names = set(manager.names())
    records: list[dict[str, Any]] = []
    for name, pin in sorted(history.resource_pins.items()):  # bounded: the kept pins
        record = pin.get("value")
        if isinstance(record, dict):
            records.append(record)
        if name not in names:
            continue
        was, version = pin.get("action"), pin.get("version")
        kept = f"kept across a restart ({was} of version {version})"
        why = (
            values.restore(manager, name, record, f"{kept}: the value kept in the state directory")
            if isinstance(record, dict)
            else "its value was not kept"
        )
        if why is None:
            _log.info("resource %r: the value kept before the restart serves, pinned", name)
            continue
        try:
            manager.pin(name, reason=f"{kept}; {why}: the value served was read at start")
        except PineappleError as exc:
            _log.warning("cannot pin resource %r again after the restart: %s", name, exc)
            continue
        _log.info(
            "resource %r pinned again after the restart (%s of version %s before it; %s: the "
            "value served is the one read at start)",
            name,
            was,
            version,
            why,
        )
    values.sweep(records)
