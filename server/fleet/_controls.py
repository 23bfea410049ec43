"""The fleet's controls: pins, rollbacks and config rollbacks, written once to the store.

Each acts once for every pod: a pod serves the pinned generation of a
resource (``PINS[name]``) instead of the announced one, and the config of
``CONFIG["current"]`` when it runs without its own CONFIG. Nothing here talks
to a pod or to the producer; pods follow the store.

- :func:`pin`: pin a resource at a kept generation (default: the announced one).
- :func:`unpin`: remove the pin; pods go back to the announced generation.
- :func:`previous_generation`: the kept generation before the one pods serve
  now (the pinned one, else the announced one): ``fleet rollback`` pins it,
  or a named kept generation.
- :func:`config_rollback`: put the bytes of a kept config revision as the
  current config (a new revision, so every pod follows it).

A generation is *kept* while its snapshot object is in the store (the producer
deletes all but the newest ``keep_generations`` of a resource, and never the
pinned one); pinning a generation that is no longer kept is refused, named.
Every call is a bounded number of store operations, each with the store's
deadline.
"""

from __future__ import annotations

import getpass
import socket
import time
from dataclasses import dataclass
from typing import Any

import orjson

from ._errors import AnnouncementError, FleetError
from ._snapshots import Announcement, announced
from ._store import ANNOUNCEMENTS, CONFIG, CONFIG_KEY, PINS, FleetStore

__all__ = [
    "ControlError",
    "Pin",
    "config_rollback",
    "current_pin",
    "kept_generations",
    "operator_name",
    "pin",
    "previous_generation",
    "unpin",
]

_MAX_REASON = 1024
"""The longest pin reason kept (characters)."""


class ControlError(FleetError):
    """A fleet control was refused (no such resource, generation or revision); it names it."""


@dataclass(frozen=True)
class Pin:
    """A fleet pin (the value of ``PINS[name]``)."""

    generation: int
    reason: str
    by: str
    time: float

    def to_json(self) -> bytes:
        """The record's bytes."""
        return orjson.dumps(
            {"generation": self.generation, "reason": self.reason, "by": self.by, "time": self.time}
        )

    @classmethod
    def from_json(cls, name: str, data: bytes) -> Pin:
        """A pin record; :class:`ControlError` naming the resource when it is malformed."""
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            doc = None
        generation = doc.get("generation") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or type(generation) is not int or generation < 1:
            raise ControlError(f"resource {name!r}: the pin record is malformed")
        return cls(
            generation,
            str(doc.get("reason") or "")[:_MAX_REASON],
            str(doc.get("by") or "")[:_MAX_REASON],
            float(doc["time"]) if isinstance(doc.get("time"), int | float) else 0.0,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (``fleet status --json``)."""
        return {
            "generation": self.generation,
            "reason": self.reason,
            "by": self.by,
            "time": self.time,
        }


def operator_name() -> str:
    """Who acts: ``user@host`` of this process."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _announced(store: FleetStore, name: str) -> Announcement:
    _, announcement = announced(store, name)
    if announcement is None:
        raise ControlError(f"resource {name!r}: nothing is announced for it in {store.url}")
    return announcement


def kept_generations(store: FleetStore, name: str) -> dict[int, Announcement]:
    """``generation -> announcement`` of every generation of ``name`` whose object is in
    the store, from the announcement history (bounded by the bucket's kept history)."""
    objects = {info.name for info in store.objects()}
    kept: dict[int, Announcement] = {}
    for record in store.history(ANNOUNCEMENTS, name):  # bounded: the kept history
        if record.deleted:
            continue
        try:
            announcement = Announcement.from_json(record.value)
        except AnnouncementError:
            continue  # a malformed revision names no object we could serve
        if announcement.object in objects:
            kept[announcement.generation] = announcement
    return kept


def current_pin(store: FleetStore, name: str) -> Pin | None:
    """The pin of ``name`` (None: not pinned)."""
    record = store.get(PINS, name)
    return None if record is None else Pin.from_json(name, record.value)


def _kept_or_refuse(store: FleetStore, name: str, generation: int) -> None:
    kept = kept_generations(store, name)
    if generation not in kept:
        have = ", ".join(str(g) for g in sorted(kept)) or "none"
        raise ControlError(
            f"resource {name!r}: generation {generation} is no longer kept in {store.url}"
            f" (kept: {have})"
        )


def pin(
    store: FleetStore,
    name: str,
    generation: int | None = None,
    *,
    reason: str = "",
    by: str | None = None,
) -> Pin:
    """Pin ``name`` at ``generation`` (default: the announced one) for every pod."""
    if generation is None:
        generation = _announced(store, name).generation
    _kept_or_refuse(store, name, generation)
    record = Pin(generation, reason[:_MAX_REASON], by or operator_name(), time.time())
    store.put(PINS, name, record.to_json())
    return record


def unpin(store: FleetStore, name: str) -> bool:
    """Remove the pin of ``name``; False when it was not pinned."""
    if store.get(PINS, name) is None:
        return False
    store.delete(PINS, name)
    return True


def previous_generation(store: FleetStore, name: str) -> int:
    """The kept generation of ``name`` before the one pods serve (the pinned one, else the
    announced one): what ``fleet rollback`` pins."""
    serving = current_pin(store, name)
    now = serving.generation if serving is not None else _announced(store, name).generation
    earlier = [g for g in kept_generations(store, name) if g < now]
    if not earlier:
        raise ControlError(f"resource {name!r}: no generation before {now} is kept in {store.url}")
    return max(earlier)


def config_rollback(store: FleetStore, revision: int) -> int:
    """Put the bytes of config revision ``revision`` as the current config; the new
    revision (``revision`` itself when it is the current one already)."""
    history = store.history(CONFIG, CONFIG_KEY)  # bounded: the kept history
    found = next((r for r in history if r.revision == revision and not r.deleted), None)
    if found is None:
        have = ", ".join(str(r.revision) for r in history if not r.deleted) or "none"
        raise ControlError(f"config revision {revision} is not kept in {store.url} (kept: {have})")
    current = store.get(CONFIG, CONFIG_KEY)
    if current is not None and current.revision == revision:
        return revision
    return store.update(
        CONFIG, CONFIG_KEY, found.value, revision=current.revision if current is not None else 0
    )
