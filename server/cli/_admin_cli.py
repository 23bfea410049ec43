"""``pineapple admin``: a running server's status and admin routes, from a shell.

    pineapple admin status [--addr HOST:PORT]... [-o table|json]
    pineapple admin reload [--force] [--addr HOST:PORT]... [-o text|json]
    pineapple admin refresh NAME [--force] [--addr HOST:PORT]... [-o text|json]
    pineapple admin rollback|pin|unpin NAME [--addr HOST:PORT]... [-o text|json]
    pineapple admin config rollback REVISION [--addr HOST:PORT]... [-o text|json]
    pineapple admin config unpin [--addr HOST:PORT]... [-o text|json]
    pineapple admin stage [--resource NAME] [--share R] [--min-requests N] [--max-error-ratio R]
                          [--max-changed-ratio R] [--max-p99-growth R] [--addr ...] [-o text|json]
    pineapple admin promote|abort|candidate [--addr HOST:PORT]... [-o text|json]

``status`` reads ``GET /config``, ``GET /resources`` and the workers' families
of ``GET /metrics`` and prints a table as ``kubectl get`` does: the config
(revision, generation, when loaded, the last reload, the workers), then one
row per resource (its conditions, version, generation, the age of its
value, and the first condition that needs a look). ``reload`` sends ``POST
/admin/reload``; the resource actions ``POST /admin/resources/NAME/ACTION``.
``config rollback`` sends ``POST /admin/config/rollback/REVISION`` (a revision
of ``GET /config/history``, or a unique prefix of it): the server serves that
config again and keeps it, whatever the file says, until ``config unpin``
(``POST /admin/config/unpin``) hands it back to the file.
``stage`` sends ``POST /admin/reload?stage=1`` with its settings: the server
builds the config as a reload would but keeps it as a shadow that answers a
share of live requests beside the serving one (``--resource NAME``: ``POST
/admin/resources/NAME/refresh?stage=1``, a new value of that resource fetched
and shadowed beside the serving one, the rest of the config as it serves);
``promote`` and ``abort``
(``POST /admin/config/promote``, ``/abort``) end it, ``candidate`` prints
``GET /config/candidate`` (how its answers differ; with none staged, the last
decision, exit 0).
People get one line per answer (``server/cli/_admin_view.py``); ``-o json``
prints the server's JSON answer itself, for scripts (``status``: one JSON
document of the three answers).

Each request carries the bearer token of ``PINEAPPLE_ADMIN_TOKEN`` when it is
set (surrounding whitespace stripped, as the server does; a token it cannot
send exits 2 before any request). Exit 0 on a 2xx answer, 1 on any other
answer, 2 when the server cannot be reached.
Every request is bounded by ``--timeout`` seconds, and at most
``MAX_ANSWER_BYTES`` of the answer are read. A request goes to its ``--addr``
and nowhere else: a redirect is not followed (a 3xx exits 1, like any answer
but a 2xx, so the token never travels to the host a ``Location`` names), and
no ``http_proxy`` from the environment is used.

``--addr`` may be repeated (every replica of a Deployment, say): the servers
are asked one after another, each answer is printed after ``ADDR:`` (a
status: under a ``== ADDR`` line), and the exit code is the worst of theirs (2
if any was unreachable, else 1 if any refused, else 0). One failure does not
stop the others from being asked. At most ``MAX_ADDRS`` addresses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pineapple.commands import Subparsers, add_subcommand

from .._admin import AdminTokenError, clean_admin_token
from .._config import ADMIN_TOKEN_ENV
from ._admin_view import answer_line, candidate_line, config_line, stage_line, status_text

__all__ = ["ACTIONS", "MAX_ADDRS", "MAX_ANSWER_BYTES", "add_admin_command", "admin_command"]

ACTIONS = ("refresh", "rollback", "pin", "unpin")
WORKER_FAMILIES = ("pineapple_workers", "pineapple_workers_serving", "pineapple_worker_restarts")
"""The families of ``GET /metrics`` that ``status`` reads (a pod's workers)."""
MAX_ANSWER_BYTES = 8 << 20
"""Most bytes of a server's answer the command reads (a status is a few KiB a resource;
``/metrics`` of a pod with many resources a few MiB)."""
MAX_ADDRS = 1000
"""Most ``--addr`` one command takes (each is asked in turn, each bounded by ``--timeout``)."""
DEFAULT_ADDR = "127.0.0.1:8080"
STAGE_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("share", float, "the share (0 to 1) of live requests the candidate also answers"),
    ("min_requests", int, "decide automatically once this many requests are compared"),
    ("max_error_ratio", float, "abort when more requests fail on the candidate only"),
    ("max_changed_ratio", float, "abort when more answers differ"),
    ("max_p99_growth", float, "abort when the candidate's p99 grows more (0.2: 20%%)"),
)
"""``pineapple admin stage``'s settings: the query parameters of ``/admin/reload?stage=1``."""
STAGE_ACTIONS = {
    "promote": ("POST", "/admin/config/promote"),
    "abort": ("POST", "/admin/config/abort"),
    "candidate": ("GET", "/config/candidate"),
}


_DESCRIPTION = (
    "A running server's status, reload, resource actions and config rollback, for people "
    "(a table, one line an answer) or scripts (-o json); token from $"
    + ADMIN_TOKEN_ENV
    + " when set; exit 0 "
    "on 2xx, 1 otherwise, 2 unreachable (with several --addr: the worst of their codes)."
)


def add_admin_command(subparsers: Subparsers) -> None:
    """``pineapple admin status|reload|refresh|rollback|pin|unpin|config ...``."""
    parser = add_subcommand(subparsers, "admin", admin_command, description=_DESCRIPTION)
    actions = parser.add_subparsers(
        dest="admin_action",
        required=True,
        metavar="ACTION",
        help="status, reload, refresh, rollback, pin, unpin, config, stage, promote, abort or "
        "candidate (each: --help)",
    )
    status = add_subcommand(actions, "status", admin_status_command)
    _common(status, ("table", "json"))
    reload = add_subcommand(actions, "reload", admin_reload_command)
    _common(reload, ("text", "json"))
    reload.add_argument(
        "--force", action="store_true", help="build the config even when it is unchanged"
    )
    for name in ACTIONS:
        action = add_subcommand(actions, name, admin_action_command)
        action.add_argument("name", help="the resource's name")
        _common(action, ("text", "json"))
        if name == "refresh":
            action.add_argument(
                "--force",
                action="store_true",
                help="accept a value the validators refuse (logged by the server)",
            )
    config = add_subcommand(actions, "config", admin_config_command)
    config_actions = config.add_subparsers(
        dest="config_action",
        required=True,
        metavar="ACTION",
        help="rollback REVISION or unpin (each: --help)",
    )
    rollback = add_subcommand(config_actions, "rollback", admin_config_rollback_command)
    rollback.add_argument(
        "revision", metavar="REVISION", help="a revision of GET /config/history (or its prefix)"
    )
    _common(rollback, ("text", "json"))
    unpin = add_subcommand(config_actions, "unpin", admin_config_unpin_command)
    _common(unpin, ("text", "json"))
    stage = add_subcommand(actions, "stage", admin_stage_command)
    _common(stage, ("text", "json"))
    stage.add_argument(
        "--resource",
        metavar="NAME",
        help="stage a refresh of this resource (its new value shadowed) instead of the config",
    )
    for flag, kind, meaning in STAGE_FLAGS:
        stage.add_argument(f"--{flag.replace('_', '-')}", type=kind, help=meaning)
    for name in STAGE_ACTIONS:
        _common(add_subcommand(actions, name, admin_stage_action_command), ("text", "json"))


def _common(parser: argparse.ArgumentParser, outputs: tuple[str, ...]) -> None:
    parser.add_argument(
        "--addr",
        action=_Addrs,
        default=DEFAULT_ADDR,
        metavar="HOST:PORT",
        help="a server to ask; repeat it to ask several, one after another",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=outputs,
        default=outputs[0],
        help="for people, or json (the server's answer) for scripts",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for each answer"
    )


class _Addrs(argparse.Action):
    """``--addr``, repeatable: a list of every one given (the default is one string)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = getattr(namespace, self.dest)
        addrs = [] if isinstance(given, str) else list(given)
        if len(addrs) >= MAX_ADDRS:
            parser.error(f"at most {MAX_ADDRS} --addr")
        setattr(namespace, self.dest, [*addrs, values])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the 3xx answer itself reaches the caller (as an ``HTTPError``)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
"""The admin command's only way out: to ``--addr`` itself (no proxy, no redirect)."""


def admin_command(args: argparse.Namespace) -> int:
    """Ask a running server for its status, a reload, a resource action or a config rollback."""
    print("pineapple admin: an action is required", file=sys.stderr)  # argparse asks first
    return 2


def admin_status_command(args: argparse.Namespace) -> int:
    """The config, workers and resources of one or more servers, as a table.

    Per resource: its conditions (READY, FRESH, VALID, PINNED), version,
    generation, the age of its value and the first condition that needs a
    look; above it, the config's revision and generation, when it loaded,
    the last reload and the workers.
    """
    return _each(args, lambda token, addr: _status_of(args, token, addr))


def admin_reload_command(args: argparse.Namespace) -> int:
    """Reload the config of one or more servers (POST /admin/reload)."""
    query = "?force=1" if args.force else ""
    return _each(args, lambda token, addr: _post(args, token, addr, f"/admin/reload{query}"))


def admin_action_command(args: argparse.Namespace) -> int:
    """Refresh, roll back, pin or unpin a resource of one or more servers."""
    name = urllib.parse.quote(args.name, safe="")
    query = "?force=1" if getattr(args, "force", False) else ""
    path = f"/admin/resources/{name}/{args.admin_action}{query}"
    return _each(args, lambda token, addr: _post(args, token, addr, path))


def admin_config_command(args: argparse.Namespace) -> int:
    """Roll back the config of one or more servers to a revision of their history, or unpin it.

    rollback REVISION: the server serves that config again and keeps it,
    whatever the file says and across a restart, until unpin hands the
    config back to the file.
    """
    print("pineapple admin config: rollback REVISION or unpin", file=sys.stderr)  # argparse asks
    return 2


def admin_config_rollback_command(args: argparse.Namespace) -> int:
    """Serve a revision of the config history again, pinned against the file until unpinned.

    REVISION is one that GET /config/history lists (each server keeps its
    history in its --state-dir), or a unique prefix of it.
    """
    path = f"/admin/config/rollback/{urllib.parse.quote(args.revision, safe='')}"
    return _each(args, lambda token, addr: _post(args, token, addr, path))


def admin_config_unpin_command(args: argparse.Namespace) -> int:
    """Take a rollback's pin away: the config file's config serves again (reloaded now)."""
    return _each(args, lambda token, addr: _post(args, token, addr, "/admin/config/unpin"))


def admin_stage_command(args: argparse.Namespace) -> int:
    """Stage the config file's config: built and warmed as a reload would, it answers a share
        of live requests beside the serving config until promoted or aborted (by hand, or by
        the thresholds given here once --min-requests are compared); with --resource, a refreshed
    value of that resource instead."""
    given = {f: getattr(args, f) for f, _, _ in STAGE_FLAGS if getattr(args, f) is not None}
    query = urllib.parse.urlencode({"stage": "1", **given})
    path = "/admin/reload"
    if args.resource is not None:
        path = f"/admin/resources/{urllib.parse.quote(args.resource, safe='')}/refresh"
    return _each(args, lambda token, addr: _post(args, token, addr, f"{path}?{query}"))


def admin_stage_action_command(args: argparse.Namespace) -> int:
    """Promote or abort the staged candidate, or print how its answers differ."""
    method, path = STAGE_ACTIONS[args.admin_action]
    if method == "POST":
        return _each(args, lambda token, addr: _post(args, token, addr, path))
    return _each(args, lambda token, addr: _get(args, token, addr, path))


@dataclass(frozen=True)
class _Said:
    """What one server said: the exit code it earns, and the text for stdout or stderr."""

    code: int
    text: str


def _each(args: argparse.Namespace, ask: Callable[[str | None, str], _Said]) -> int:
    """Ask every ``--addr`` in turn (with the token); print each answer; the worst code."""
    try:
        token = clean_admin_token(os.environ.get(ADMIN_TOKEN_ENV), ADMIN_TOKEN_ENV)
    except AdminTokenError as exc:
        print(f"pineapple admin: {exc}", file=sys.stderr)
        return 2
    addrs: list[str] = [args.addr] if isinstance(args.addr, str) else args.addr
    codes = []
    for addr in addrs:  # bounded: MAX_ADDRS
        said = ask(token, addr)
        codes.append(said.code)
        text = said.text
        if len(addrs) > 1:
            table = args.admin_action == "status" and args.output == "table" and not said.code
            text = f"== {addr}\n{text}" if table else f"{addr}: {text}"
        print(text, file=sys.stderr if said.code else sys.stdout)
    worst = max(codes)
    if worst and len(addrs) > 1:
        failed = sum(1 for code in codes if code)
        print(f"pineapple admin: {failed} of {len(addrs)} servers failed", file=sys.stderr)
    return worst


class _Unreachable(Exception):
    """The server at an address could not be reached (the reason is the message)."""


def _request(
    args: argparse.Namespace, token: str | None, addr: str, path: str, method: str
) -> tuple[int, bytes]:
    """``method path`` to the server at ``addr``: its status and at most
    ``MAX_ANSWER_BYTES`` of its body; :class:`_Unreachable` when it cannot be reached."""
    request = urllib.request.Request(
        f"http://{addr}{path}", data=b"" if method == "POST" else None, method=method
    )
    if token:
        request.add_unredirected_header("Authorization", f"Bearer {token}")
    try:
        with _OPENER.open(request, timeout=args.timeout) as answer:
            return answer.status, answer.read(MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(MAX_ANSWER_BYTES)
    except (urllib.error.URLError, OSError) as exc:
        raise _Unreachable(str(getattr(exc, "reason", exc))) from None


def _unreachable(addr: str, exc: _Unreachable) -> _Said:
    return _Said(2, f"pineapple admin: cannot reach {addr}: {exc}")


def _post(args: argparse.Namespace, token: str | None, addr: str, path: str) -> _Said:
    """Send an action; its answer as the server said it (json) or as one line (text)."""
    try:
        status, body = _request(args, token, addr, path, "POST")
    except _Unreachable as exc:
        return _unreachable(addr, exc)
    code = 0 if 200 <= status < 300 else 1
    text = body.decode("utf-8", "replace")
    if args.output == "json":
        return _Said(code, text)
    parsed = _json_or_text(text)
    if args.admin_action == "config":
        return _Said(code, config_line(status, parsed))
    if args.admin_action in ("stage", "promote", "abort"):
        return _Said(code, stage_line(status, parsed))
    what = getattr(args, "name", "config")
    return _Said(code, answer_line(what, status, parsed))


def _get(args: argparse.Namespace, token: str | None, addr: str, path: str) -> _Said:
    """Read ``path`` (``GET /config/candidate``); its answer as the server said it (json) or
    as one line (text). A 404 there (none staged) is an answer, not a failure: exit 0."""
    try:
        status, body = _request(args, token, addr, path, "GET")
    except _Unreachable as exc:
        return _unreachable(addr, exc)
    code = 0 if 200 <= status < 300 or status == 404 else 1
    text = body.decode("utf-8", "replace")
    if args.output == "json":
        return _Said(code, text)
    return _Said(code, candidate_line(status, _json_or_text(text)))


def _json_or_text(text: str) -> Any:
    """An answer's JSON, or its text when it is not JSON (a proxy's page, say)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _status_of(args: argparse.Namespace, token: str | None, addr: str) -> _Said:
    """``GET /config``, ``/resources`` and ``/metrics`` of ``addr``: a table or JSON."""
    answers: dict[str, Any] = {}
    try:
        for key, path in (("config", "/config"), ("resources", "/resources")):
            status, body = _request(args, token, addr, path, "GET")
            if not 200 <= status < 300:
                return _Said(1, f"GET {path}: HTTP {status}: {body.decode('utf-8', 'replace')}")
            answers[key] = json.loads(body)
        status, body = _request(args, token, addr, "/metrics", "GET")
    except _Unreachable as exc:
        return _unreachable(addr, exc)
    except ValueError as exc:  # not JSON: not a Pineapple server
        return _Said(1, f"pineapple admin: {addr} answered something that is not JSON: {exc}")
    answers["workers"] = _workers(body.decode("utf-8", "replace")) if status == 200 else None
    if args.output == "json":
        return _Said(0, json.dumps({"addr": addr, **answers}))
    table = status_text(answers["config"], answers["resources"], answers["workers"], time.time())
    return _Said(0, table)


def _workers(exposition: str) -> dict[str, float]:
    """The workers' families of a ``/metrics`` answer (none in one process)."""
    found: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(exposition):
            if family.name in WORKER_FAMILIES:
                for sample in family.samples:  # bounded: the answer's size
                    if not sample.name.endswith("_created"):
                        found[sample.name] = float(sample.value)
    except ValueError:  # not an exposition we can read: no workers shown
        return {}
    return found
