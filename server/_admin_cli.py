"""``pineapple admin``: the resource admin routes of a running server, from a shell.

    pineapple admin refresh NAME [--force] [--addr HOST:PORT]
    pineapple admin rollback NAME [--addr HOST:PORT]
    pineapple admin pin NAME [--addr HOST:PORT]
    pineapple admin unpin NAME [--addr HOST:PORT]

Each sends ``POST /admin/resources/NAME/ACTION`` with the bearer token of
``PINEAPPLE_ADMIN_TOKEN`` when it is set, prints the JSON answer and exits 0
on a 2xx answer, 1 on any other answer, 2 when the server cannot be reached.
Every request is bounded by ``--timeout`` seconds, and at most
``MAX_ANSWER_BYTES`` of the answer are read.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from pineapple._subcommand import Subparsers, add_subcommand

from ._config import ADMIN_TOKEN_ENV

__all__ = ["ACTIONS", "MAX_ANSWER_BYTES", "add_admin_command", "admin_command"]

ACTIONS = ("refresh", "rollback", "pin", "unpin")
MAX_ANSWER_BYTES = 1 << 20
"""Most bytes of a server's answer the command reads (a status is a few KiB)."""


_DESCRIPTION = (
    "POST /admin/resources/NAME/ACTION to a running server "
    f"(token from ${ADMIN_TOKEN_ENV} when set); exit 0 on 2xx, 1 otherwise, 2 unreachable."
)


def add_admin_command(subparsers: Subparsers) -> None:
    """``pineapple admin ACTION NAME [--addr HOST:PORT] [--force] [--timeout S]``."""
    parser = add_subcommand(subparsers, "admin", admin_command, description=_DESCRIPTION)
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("name", help="the resource's name")
    parser.add_argument("--addr", default="127.0.0.1:8080", help="HOST:PORT of the server")
    parser.add_argument(
        "--force",
        action="store_true",
        help="refresh only: accept a value the validators refuse (logged by the server)",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the answer"
    )


def admin_command(args: argparse.Namespace) -> int:
    """Refresh, roll back, pin or unpin a resource of a running server."""
    if args.force and args.action != "refresh":
        print("pineapple admin: --force goes only with refresh", file=sys.stderr)
        return 2
    name = urllib.parse.quote(args.name, safe="")
    url = f"http://{args.addr}/admin/resources/{name}/{args.action}"
    if args.force:
        url += "?force=1"
    request = urllib.request.Request(url, data=b"", method="POST")
    token = os.environ.get(ADMIN_TOKEN_ENV)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as answer:
            status, body = answer.status, answer.read(MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(MAX_ANSWER_BYTES)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        print(f"pineapple admin: cannot reach {args.addr}: {reason}", file=sys.stderr)
        return 2
    text = body.decode("utf-8", "replace")
    print(text, file=sys.stdout if 200 <= status < 300 else sys.stderr)
    return 0 if 200 <= status < 300 else 1
