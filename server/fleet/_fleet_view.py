"""``fleet status``: what the fleet publishes and what each pod serves, read from the store.

:func:`fleet_view` collects it (a dict, ``--json`` prints it as it is);
:func:`render` lays it out as tables for a terminal:

- per resource: the announced generation, the generations kept, the pin;
- per pod (``PODS`` heartbeats): the config revision and the generation of
  each resource it serves, since when, and how old its heartbeat is. A pod
  off the generation the fleet serves (the pinned one, else the announced one)
  or off the current config revision is marked ``*``; a heartbeat older than
  ``stale_seconds`` is marked ``STALE``.

Bounded: at most ``MAX_PODS`` heartbeats and ``MAX_RESOURCES`` resources are
read (the rest are counted, not shown); each record is bounded by the store.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from ._controls import current_pin, kept_generations
from ._errors import FleetError
from ._snapshots import Announcement
from ._store import ANNOUNCEMENTS, CONFIG, CONFIG_KEY, PODS, FleetStore

__all__ = ["MAX_PODS", "MAX_RESOURCES", "fleet_view", "render"]

MAX_PODS = 10_000
"""Most pod heartbeats ``fleet status`` reads."""
MAX_RESOURCES = 10_000
"""Most resources ``fleet status`` reads."""


def fleet_view(
    store: FleetStore, *, stale_seconds: float, now: float | None = None
) -> dict[str, Any]:
    """The fleet's state: ``{"store", "config", "resources", "pods", "left_out"}``."""
    now = time.time() if now is None else now
    config = store.get(CONFIG, CONFIG_KEY)
    resources = [
        _resource(store, name) for name in sorted(store.keys(ANNOUNCEMENTS))[:MAX_RESOURCES]
    ]
    serving = {r["name"]: r["serving"] for r in resources if r.get("serving") is not None}
    revision = config.revision if config is not None else None
    pod_ids = sorted(store.keys(PODS))
    pods = [_pod(store, pod, serving, revision, stale_seconds, now) for pod in pod_ids[:MAX_PODS]]
    return {
        "store": store.url,
        "time": now,
        "config": None
        if config is None
        else {"revision": config.revision, "time": config.time, "size": len(config.value)},
        "resources": resources,
        "pods": [p for p in pods if p is not None],
        "left_out": {"pods": max(0, len(pod_ids) - MAX_PODS)},
    }


def _resource(store: FleetStore, name: str) -> dict[str, Any]:
    record = store.get(ANNOUNCEMENTS, name)
    row: dict[str, Any] = {"name": name}
    if record is None:
        return {**row, "error": "no announcement (deleted meanwhile)"}
    try:
        announcement = Announcement.from_json(record.value)
    except FleetError as exc:
        return {**row, "error": str(exc)}
    try:
        pin = current_pin(store, name)
    except FleetError as exc:
        row["pin_error"], pin = str(exc), None
    kept = sorted(kept_generations(store, name))
    return {
        **row,
        "type": announcement.type,
        "generation": announcement.generation,
        "announcement": {
            "time": announcement.time,
            "size": announcement.size,
            "digest": announcement.digest,
            "source_version": announcement.source_version,
            "object": announcement.object,
        },
        "kept": kept,
        "pin": pin.to_dict() if pin is not None else None,
        "serving": pin.generation if pin is not None else announcement.generation,
    }


def _pod(
    store: FleetStore,
    pod: str,
    serving: dict[str, int],
    revision: int | None,
    stale_seconds: float,
    now: float,
) -> dict[str, Any] | None:
    record = store.get(PODS, pod)
    if record is None:
        return None  # gone meanwhile
    try:
        beat = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        beat = None
    if not isinstance(beat, dict) or not isinstance(beat.get("resources"), dict):
        return {"pod": pod, "error": "malformed heartbeat", "stale": True, "skew": []}
    served = {str(k): v for k, v in beat["resources"].items()}
    stamp = beat.get("time")
    beat_time = float(stamp) if isinstance(stamp, int | float) else record.time
    skew = sorted(n for n, g in serving.items() if n in served and served[n] != g)
    return {
        "pod": pod,
        "resources": served,
        "config_revision": beat.get("config_revision"),
        "since": beat.get("since"),
        "time": beat_time,
        "age": max(0.0, now - beat_time),
        "stale": now - beat_time > stale_seconds,
        "skew": skew,
        "config_skew": revision is not None
        and beat.get("config_revision") is not None
        and beat.get("config_revision") != revision,
    }


def _clock(t: Any) -> str:
    if not isinstance(t, int | float) or t <= 0:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    units = ("KiB", "MiB", "GiB")
    for index, unit in enumerate(units):  # bounded: three units
        value /= 1024
        if value < 1024 or index == len(units) - 1:
            return f"{value:.1f} {unit}"
    return f"{n} B"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *rows)
    ]


def render(view: dict[str, Any]) -> str:
    """``view`` as text tables (what ``fleet status`` prints without ``--json``)."""
    config = view["config"]
    lines = [f"fleet store: {view['store']}"]
    if config is None:
        lines.append("config: none published")
    else:
        lines.append(
            f"config: revision {config['revision']} ({_size(config['size'])},"
            f" published {_clock(config['time'])})"
        )
    lines.append("")
    rows = []
    for r in view["resources"]:
        if "error" in r:
            rows.append([r["name"], "-", "-", "-", "-", "-", r["error"]])
            continue
        pin = r["pin"]
        pinned = "-" if pin is None else f"{pin['generation']} by {pin['by']}"
        if pin is not None and pin["reason"]:
            pinned += f" ({pin['reason']})"
        a = r["announcement"]
        rows.append(
            [
                r["name"],
                r["type"],
                str(r["generation"]),
                ",".join(str(g) for g in r["kept"]) or "-",
                pinned,
                _size(a["size"]),
                _clock(a["time"]),
            ]
        )
    header = ["RESOURCE", "TYPE", "ANNOUNCED", "KEPT", "PINNED", "SIZE", "PUBLISHED"]
    lines += _table(header, rows) if rows else ["no resource announced"]
    lines.append("")
    rows = []
    for p in view["pods"]:
        if "error" in p:
            rows.append([p["pod"], "-", "-", "-", p["error"]])
            continue
        served = " ".join(
            f"{name}={gen}{'*' if name in p['skew'] else ''}"
            for name, gen in sorted(p["resources"].items())
        )
        rev = p["config_revision"]
        rows.append(
            [
                p["pod"],
                f"{rev}{'*' if p['config_skew'] else ''}" if rev is not None else "-",
                _clock(p["since"]),
                f"{p['age']:.0f}s ago" + (" STALE" if p["stale"] else ""),
                served or "-",
            ]
        )
    header = ["POD", "CONFIG", "SINCE", "HEARTBEAT", "SERVES"]
    lines += _table(header, rows) if rows else ["no pod heartbeat"]
    skewed = sum(1 for p in view["pods"] if p.get("skew") or p.get("config_skew"))
    stale = sum(1 for p in view["pods"] if p.get("stale"))
    lines.append("")
    lines.append(
        f"{len(view['pods'])} pod(s): {skewed} off what the fleet serves (*), {stale} stale"
        + (f"; {view['left_out']['pods']} more not shown" if view["left_out"]["pods"] else "")
    )
    return "\n".join(lines) + "\n"
