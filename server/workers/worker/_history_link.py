"""``HistoryLink``: a worker's config-history routes under ``--workers N``.

The supervisor owns the history (``server/_history_pod.py``). A worker reads
it from the pod's status (``history``, posted with every decision, as the
other statuses are read), the kept configs a diff compares from the state
directory the status names (read only), and asks the supervisor over the
control channel for a rollback or an unpin, then catches up with what it
published before answering, so the answering worker already serves it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..._config_history import HistoryEntry, HistoryError, read_kept, resolve
from ..._decisions import Refused
from ..._history_decisions import diff_body
from ..._snapshot import SnapshotHolder
from ._supervisor_link import SupervisorLink

__all__ = ["HistoryLink"]


class HistoryLink:
    """A worker's ``HistoryDecisions`` (see module docs)."""

    def __init__(self, link: SupervisorLink, holder: SnapshotHolder, max_config_bytes: int):
        self._link = link
        self._holder = holder
        self._max_bytes = max_config_bytes

    def _posted(self) -> dict[str, Any]:
        history = self._link.pod.read().get("history")
        if not isinstance(history, dict):
            raise Refused(404, "this server keeps no config history (--state-dir '')")
        return history

    def history(self) -> dict[str, Any]:
        body = dict(self._posted())
        snap = self._holder.current
        body["worker_serving"] = snap.info.revision if snap is not None else None
        return body

    def diff(self, old: str, new: str | None) -> dict[str, Any]:
        posted = self._posted()
        state_dir = posted.get("state_dir")
        if not isinstance(state_dir, str):
            raise Refused(409, "the history is kept in the supervisor's memory only: no diff")
        raw = posted.get("revisions")
        entries = [HistoryEntry.parse(e) for e in raw] if isinstance(raw, list) else []
        known = [e for e in entries if e is not None]

        def read(revision: str) -> tuple[str, Callable[[], bytes]]:
            entry = resolve(known, revision)
            if not entry.kept:
                raise HistoryError(409, f"revision {entry.revision} is listed, not kept")
            digest, folder, limit = entry.content_hash, Path(state_dir), self._max_bytes
            return digest, lambda: read_kept(folder, digest, limit)

        target = new if new is not None else str(posted.get("serving") or "")
        return diff_body(old, target, read)

    def rollback(self, revision: str) -> dict[str, Any]:
        return self._decide({"op": "config_rollback", "revision": revision})

    def unpin(self) -> dict[str, Any]:
        return self._decide({"op": "config_unpin"})

    def _decide(self, request: dict[str, Any]) -> dict[str, Any]:
        self._posted()  # 404 when the supervisor keeps none
        answer = self._link.decide(request)
        return {**answer, "worker": self._link.describe()}
