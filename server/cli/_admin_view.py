"""What ``pineapple admin`` prints for people: the status table and one line per answer.

Everything here formats answers the server already gave (``GET /config``,
``GET /resources``, the workers' families of ``GET /metrics``, the body of an
admin action); it asks nothing. ``-o json`` prints the answers themselves.
A message is cut to ``MESSAGE_CHARS`` so a row stays one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CONDITIONS",
    "MESSAGE_CHARS",
    "age",
    "answer_line",
    "candidate_line",
    "config_line",
    "stage_line",
    "status_text",
]

CONDITIONS = ("Ready", "Fresh", "Valid", "Pinned")
"""The conditions the table has a column for (``Reachable`` shows in MESSAGE when False)."""
_GOOD = {"Ready": "True", "Fresh": "True", "Valid": "True", "Pinned": "False", "Reachable": "True"}
"""The status of each condition when nothing needs a person's eye."""
MESSAGE_CHARS = 72


def age(seconds: float | None) -> str:
    """``seconds`` as ``kubectl get`` shows an age: ``42s``, ``5m3s``, ``2h7m``, ``3d4h``."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"


def _cut(text: str, chars: int = MESSAGE_CHARS) -> str:
    text = " ".join(text.split())  # one line
    return text if len(text) <= chars else text[: chars - 3] + "..."


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    conditions = status.get("conditions") or []
    return {c["type"]: c for c in conditions if isinstance(c, Mapping) and "type" in c}


def _attention(status: Mapping[str, Any]) -> str:
    """The reason and message of the first condition not in its good state ("" if none)."""
    for kind, cond in _conditions(status).items():
        if cond.get("status") != _GOOD.get(kind, cond.get("status")):
            return _cut(f"{kind}={cond.get('status')} {cond.get('reason')}: {cond.get('message')}")
    return ""


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, three spaces apart (as ``kubectl get``)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _generation(config: Mapping[str, Any]) -> str:
    shared = config.get("shared")
    if isinstance(shared, Mapping) and shared.get("latest_config_generation") is not None:
        return str(shared["latest_config_generation"])  # the pod's (the supervisor's)
    return str(config.get("snapshot", "-"))


def _last_reload(config: Mapping[str, Any], now: float) -> str:
    last = config.get("last_reload")
    if not isinstance(last, Mapping):
        return "none since start"
    at = last.get("at")
    when = f"{age(now - at)} ago" if isinstance(at, int | float) else "-"
    text = f"{last.get('result')} ({last.get('trigger')}, {when})"
    if last.get("result") == "error":
        text += f" at step {last.get('step')}"
    return text


def _workers(workers: Mapping[str, float] | None) -> str:
    if not workers or "pineapple_workers" not in workers:
        return "1 process"
    wanted = int(workers["pineapple_workers"])
    serving = int(workers.get("pineapple_workers_serving", 0))
    restarts = int(workers.get("pineapple_worker_restarts_total", 0))
    return f"{serving}/{wanted} serving, {restarts} restart{'' if restarts == 1 else 's'}"


def status_text(
    config: Mapping[str, Any],
    resources: Mapping[str, Any],
    workers: Mapping[str, float] | None,
    now: float,
) -> str:
    """The config line and the resource table of one server, as ``pineapple admin status``
    prints them."""
    served = config.get("config") if isinstance(config.get("config"), Mapping) else {}
    assert isinstance(served, Mapping)
    loaded = served.get("loaded_at")
    head = [
        ("CONFIG", "REVISION", "GENERATION", "LOADED", "LAST RELOAD", "WORKERS"),
        (
            os.path.basename(str(served.get("path", "-"))),
            str(served.get("revision", "-")),
            _generation(config),
            age(now - loaded) if isinstance(loaded, int | float) else "-",
            _last_reload(config, now),
            _workers(workers),
        ),
    ]
    rows: list[tuple[str, ...]] = [
        ("NAME", "TYPE", *(c.upper() for c in CONDITIONS), "VERSION", "GEN", "AGE", "MESSAGE")
    ]
    for st in resources.get("resources") or []:  # bounded: the server's resources
        conds = _conditions(st)
        at = st.get("loaded_at")
        rows.append(
            (
                str(st.get("name")),
                str(st.get("type")),
                *(str(conds[c]["status"]) if c in conds else "-" for c in CONDITIONS),
                str(st.get("version")),
                str(st.get("generation")),
                age(now - at) if isinstance(at, int | float) else "-",
                _attention(st),
            )
        )
    lines = _table(head)
    lines.append("")
    lines += _table(rows) if len(rows) > 1 else ["no resources"]
    return "\n".join(lines)


def answer_line(what: str, status: int, body: Any) -> str:
    """One line for an admin answer: ``what`` (a resource's name, or ``config``), what
    happened, and the resource's conditions; a refusal with its HTTP status and error."""
    if not isinstance(body, Mapping):
        return f"{what}: HTTP {status}: {_cut(str(body))}"
    if what == "config" and body.get("result") == "error":
        step, error = body.get("step"), _cut(str(body.get("error")), 400)
        return f"config: error at step {step} (HTTP {status}), the served config stays: {error}"
    if not 200 <= status < 300:
        return f"{what}: refused (HTTP {status}): {_cut(str(body.get('error', body)), 400)}"
    if what == "config":
        revision = str(body.get("content_hash") or "")[:12] or "-"
        seconds = body.get("duration_seconds")
        applied = body.get("result") == "ok" and isinstance(seconds, int | float)
        took = f", {seconds:.3g}s" if applied else ""
        return f"config: {body.get('result')} (snapshot {body.get('snapshot')}, {revision}{took})"
    text = f"{what}: {body.get('result')}"
    st = body.get("status")
    if isinstance(st, Mapping):
        conds = _conditions(st)
        shown = " ".join(f"{c}={conds[c]['status']}" for c in CONDITIONS if c in conds)
        text += f" (version {st.get('version')}; {shown})"
    return text


def config_line(status: int, body: Any) -> str:
    """One line for an answer of ``admin config rollback|unpin``: what happened to the pin,
    then the reload it made (as :func:`answer_line` says a reload); a refusal as there."""
    if not isinstance(body, Mapping) or not 200 <= status < 300:
        return answer_line("config", status, body)
    result = body.get("result")
    reload = body.get("reload")
    then = ""
    if isinstance(reload, Mapping):
        then = "; reload " + answer_line("config", status, reload).removeprefix("config: ")
    if result == "rolled_back":
        return f"config: rolled back to {body.get('revision')}, pinned until unpinned{then}"
    if result == "unpinned":
        return f"config: {body.get('revision')} unpinned, the file's config serves{then}"
    if result == "not_pinned":
        return "config: not pinned, the file's config serves"
    return f"config: {result}{then}"


def stage_line(status: int, body: Any) -> str:
    """One line for an answer of ``admin stage|promote|abort``: the candidate's revision and
    what happened to it; a refusal or a failed build as :func:`answer_line` says them."""
    if not isinstance(body, Mapping) or not 200 <= status < 300 or body.get("result") == "error":
        return answer_line("config", status, body)
    result = body.get("result")
    if result == "staged":
        staged = body.get("candidate")
        staged = staged if isinstance(staged, Mapping) else {}
        if staged.get("resource") is not None:
            return f"resource {staged['resource']}: staged a refresh (share {staged.get('share')})"
        return f"config: staged {staged.get('revision')} (share {staged.get('share')})"
    if body.get("resource") is not None:
        what = f"resource {body['resource']}: refresh {result}"
        return f"{what} ({body.get('by')}: {body.get('reason')})"
    return f"config: {result} {body.get('revision')} ({body.get('by')}: {body.get('reason')})"


_DONE = {"promote": "promoted", "abort": "aborted"}


def _staged_name(staged: Mapping[str, Any]) -> str:
    """A config's revision, or a staged refresh's ``refresh of NAME``."""
    name = staged.get("resource")
    return f"refresh of {name}" if name is not None else str(staged.get("revision"))


def candidate_line(status: int, body: Any) -> str:
    """One line for ``admin candidate``: the staged candidate's counts and ratios, or the
    last decision when none is staged."""
    if not isinstance(body, Mapping):
        return f"candidate: HTTP {status}: {_cut(str(body))}"
    staged, last = body.get("staged"), body.get("last_decision")
    if isinstance(staged, Mapping):
        summary = staged.get("summary")
        s = summary if isinstance(summary, Mapping) else {}
        return (
            f"candidate {_staged_name(staged)} (share {staged.get('share')}): "
            f"{s.get('requests')} compared, {s.get('changed')} changed, {s.get('errors')} "
            f"errors, {s.get('dropped')} dropped; changed_ratio {s.get('changed_ratio')}, "
            f"p99 {s.get('live_p99_seconds')}s live vs {s.get('candidate_p99_seconds')}s"
        )
    if isinstance(last, Mapping):
        return (
            f"candidate: none staged; {_staged_name(last)} was "
            f"{_DONE.get(str(last.get('decision')), last.get('decision'))} "
            f"({last.get('by')}: {last.get('reason')})"
        )
    if status == 404:
        return "candidate: none staged"
    return f"candidate: HTTP {status}: {_cut(str(body.get('error', body)))}"
