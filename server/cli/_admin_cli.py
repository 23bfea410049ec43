"""``pineapple admin``: the resource admin routes of a running server, from a shell.

    pineapple admin refresh NAME [--force] [--addr HOST:PORT]...
    pineapple admin rollback NAME [--addr HOST:PORT]...
    pineapple admin pin NAME [--addr HOST:PORT]...
    pineapple admin unpin NAME [--addr HOST:PORT]...
    pineapple admin config rollback REVISION [--addr HOST:PORT]...
    pineapple admin config unpin [--addr HOST:PORT]...

``config rollback`` sends ``POST /admin/config/rollback/REVISION`` (a revision
of ``GET /config/history``, or a unique prefix of it): the server serves that
config again and keeps it, whatever the file says, until ``config unpin``
(``POST /admin/config/unpin``) hands it back to the file.

Each sends ``POST /admin/resources/NAME/ACTION`` with the bearer token of
``PINEAPPLE_ADMIN_TOKEN`` when it is set (surrounding whitespace stripped, as
the server does; a token it cannot send exits 2 before any request), prints
the JSON answer and exits 0 on a 2xx answer, 1 on any other answer, 2 when
the server cannot be reached.
Every request is bounded by ``--timeout`` seconds, and at most
``MAX_ANSWER_BYTES`` of the answer are read. A request goes to its ``--addr``
and nowhere else: a redirect is not followed (a 3xx exits 1, like any answer
but a 2xx, so the token never travels to the host a ``Location`` names), and
no ``http_proxy`` from the environment is used.

``--addr`` may be repeated (every replica of a Deployment, say): the servers
are asked one after another, each answer is printed on its own line after
``ADDR:``, and the exit code is the worst of theirs (2 if any was
unreachable, else 1 if any refused, else 0). One failure does not stop the
others from being asked. At most ``MAX_ADDRS`` addresses.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pineapple.commands import Subparsers, add_subcommand

from .._admin import AdminTokenError, clean_admin_token
from .._config import ADMIN_TOKEN_ENV

__all__ = ["ACTIONS", "MAX_ADDRS", "MAX_ANSWER_BYTES", "add_admin_command", "admin_command"]

ACTIONS = ("refresh", "rollback", "pin", "unpin")
MAX_ANSWER_BYTES = 1 << 20
"""Most bytes of a server's answer the command reads (a status is a few KiB)."""
MAX_ADDRS = 1000
"""Most ``--addr`` one command takes (each is asked in turn, each bounded by ``--timeout``)."""
DEFAULT_ADDR = "127.0.0.1:8080"


_DESCRIPTION = (
    "POST /admin/resources/NAME/ACTION to one or more running servers, one after another "
    f"(token from ${ADMIN_TOKEN_ENV} when set); exit 0 on 2xx, 1 otherwise, 2 unreachable "
    "(with several --addr: the worst of their codes)."
)


def add_admin_command(subparsers: Subparsers) -> None:
    """``pineapple admin ACTION NAME [--addr HOST:PORT] [--force] [--timeout S]``."""
    parser = add_subcommand(subparsers, "admin", admin_command, description=_DESCRIPTION)
    parser.add_argument("action", choices=(*ACTIONS, "config"), help="what to do")
    parser.add_argument("name", help="the resource's name; after config: rollback or unpin")
    parser.add_argument(
        "revision", nargs="?", help="config rollback: the revision (GET /config/history)"
    )
    parser.add_argument(
        "--addr",
        action=_Addrs,
        default=DEFAULT_ADDR,
        metavar="HOST:PORT",
        help="a server to act on; repeat it to act on several, one after another",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="refresh only: accept a value the validators refuse (logged by the server)",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the answer"
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
    """Refresh, roll back, pin or unpin a resource, or roll back or unpin the config, of
    one or more running servers."""
    if args.force and args.action != "refresh":
        print("pineapple admin: --force goes only with refresh", file=sys.stderr)
        return 2
    wrong = _wrong_config_words(args)
    if wrong is not None:
        print(f"pineapple admin: {wrong}", file=sys.stderr)
        return 2
    try:
        token = clean_admin_token(os.environ.get(ADMIN_TOKEN_ENV), ADMIN_TOKEN_ENV)
    except AdminTokenError as exc:
        print(f"pineapple admin: {exc}", file=sys.stderr)
        return 2
    addrs: list[str] = [args.addr] if isinstance(args.addr, str) else args.addr
    if len(addrs) == 1:
        return _act_on(args, token, addrs[0], prefix="")
    codes = [_act_on(args, token, a, prefix=f"{a}: ") for a in addrs]  # bounded: MAX_ADDRS
    worst = max(codes)
    if worst:
        failed = sum(1 for code in codes if code)
        print(f"pineapple admin: {failed} of {len(addrs)} servers failed", file=sys.stderr)
    return worst


def _wrong_config_words(args: argparse.Namespace) -> str | None:
    """What is wrong with the words after the action (None: nothing)."""
    if args.action != "config":
        return "a REVISION goes only with config rollback" if args.revision else None
    if args.name == "rollback":
        return None if args.revision else "config rollback needs a REVISION"
    if args.name == "unpin":
        return "config unpin takes no REVISION" if args.revision else None
    return f"config {args.name!r}: say rollback REVISION or unpin"


def _path(args: argparse.Namespace) -> str:
    """The admin route the command's words name."""
    if args.action == "config":
        if args.name == "unpin":
            return "/admin/config/unpin"
        return f"/admin/config/rollback/{urllib.parse.quote(args.revision, safe='')}"
    name = urllib.parse.quote(args.name, safe="")
    return f"/admin/resources/{name}/{args.action}"


def _act_on(args: argparse.Namespace, token: str | None, addr: str, prefix: str) -> int:
    """Send the action to the server at ``addr`` (with ``token``); print its answer after
    ``prefix``."""
    url = f"http://{addr}{_path(args)}"
    if args.force:
        url += "?force=1"
    request = urllib.request.Request(url, data=b"", method="POST")
    if token:
        request.add_unredirected_header("Authorization", f"Bearer {token}")
    try:
        with _OPENER.open(request, timeout=args.timeout) as answer:
            status, body = answer.status, answer.read(MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(MAX_ANSWER_BYTES)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        print(f"{prefix}pineapple admin: cannot reach {addr}: {reason}", file=sys.stderr)
        return 2
    text = body.decode("utf-8", "replace")
    print(prefix + text, file=sys.stdout if 200 <= status < 300 else sys.stderr)
    return 0 if 200 <= status < 300 else 1
