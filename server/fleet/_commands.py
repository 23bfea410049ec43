"""The fleet's ``pineapple`` subcommands: ``publish`` (the producer) and ``fleet`` (its view
and controls).

    pineapple publish CONFIG --fleet URL [--lease-ttl S] [--workdir DIR] [--fleet-* limits]
    pineapple fleet status --fleet URL [--json]
    pineapple fleet pin RESOURCE [GENERATION] --fleet URL [--reason TEXT]
    pineapple fleet unpin RESOURCE --fleet URL
    pineapple fleet rollback RESOURCE [GENERATION] --fleet URL [--reason TEXT]
    pineapple fleet config-rollback REVISION --fleet URL

Named in the ``pineapple.commands`` entry-point group (``pyproject.toml``:
``fleet = "server.fleet._commands:add_commands"``). Exit codes of ``fleet``:
0 done, 1 refused (the message names the resource, generation or revision),
2 the store cannot be reached or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import orjson

from pineapple.commands import Subparsers, add_subcommand

from .._build import import_plugins
from .._build_error import BuildError
from .._config import Config
from .._log_format import add_log_flags, configure_logging
from .._secret_files import add_secrets_dir_flag
from .._watcher import add_watch_flags
from ..http._serving import exit_within
from ._controls import Pin, config_rollback, pin, previous_generation, unpin
from ._errors import FleetError, StoreUnavailableError
from ._flags import add_store_flags, open_store_of
from ._fleet_view import fleet_view, render
from ._producer import STOP_SECONDS, Producer
from ._store import FleetStore

__all__ = ["DEFAULT_LEASE_TTL", "DEFAULT_STALE_SECONDS", "add_commands"]

DEFAULT_LEASE_TTL = 10.0
"""Seconds the producer's lease lasts unrenewed (``--lease-ttl``); a standby takes over
within about this plus a quarter of it after the leader stops renewing."""
DEFAULT_STALE_SECONDS = 30.0
"""A pod heartbeat older than this is marked stale by ``fleet status``."""

_log = logging.getLogger("pineapple.fleet")


def add_commands(subparsers: Subparsers) -> None:
    """Register ``publish`` and ``fleet``."""
    add_publish_command(subparsers)
    add_fleet_command(subparsers)


# -- publish ------------------------------------------------------------------------------


def add_publish_command(subparsers: Subparsers) -> None:
    """``pineapple publish CONFIG --fleet URL [...]``."""
    parser = add_subcommand(subparsers, "publish", publish_command, config=True, plugins=True)
    add_store_flags(parser, limits=True)
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=DEFAULT_LEASE_TTL,
        metavar="S",
        help="seconds the leader's lease lasts unrenewed (renewed every third of it); a "
        "standby takes over this long after the leader stops",
    )
    parser.add_argument(
        "--workdir",
        default=None,
        metavar="DIR",
        help="where snapshots are written before upload (default: a new temporary directory)",
    )
    add_watch_flags(parser)
    add_secrets_dir_flag(parser)
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=Config.start_timeout,
        metavar="S",
        help="seconds the first fetch of each resource may take (a config's load)",
    )
    parser.add_argument(
        "--resource-memory-budget-bytes",
        type=int,
        default=0,
        metavar="N",
        help="refuse a value that would bring the bytes the producer holds over N (0: none)",
    )
    add_log_flags(
        parser,
        level_help="log level",
        format_help="text lines, or one JSON object a line (as serve writes them)",
    )


def publish_command(args: argparse.Namespace) -> int:
    """Produce for a fleet: load CONFIG's shared resources once, publish them to the store.

    Loads every resource of CONFIG whose type has a fleet codec from its
    source, on its interval, with the validators, budget and NOT_MODIFIED of a
    pod, and publishes each accepted value once (snapshot, then announcement);
    publishes CONFIG as the fleet's config and follows the file. Run two
    replicas: one leads through a lease in the store, the other stands by.
    SIGTERM stops it and releases the lease (exit 0).
    """
    configure_logging(args.log_level, args.log_format)
    for flag in ("lease_ttl", "poll_seconds", "start_timeout"):
        if not getattr(args, flag) > 0:
            return _usage("publish", f"--{flag.replace('_', '-')} must be > 0")
    if args.resource_memory_budget_bytes < 0:
        return _usage("publish", "--resource-memory-budget-bytes must be >= 0")
    try:
        import_plugins(args.plugin)
    except BuildError as exc:
        print(f"pineapple publish: {exc}", file=sys.stderr)
        return 1
    try:
        store = open_store_of(args)
    except FleetError as exc:
        return _usage("publish", str(exc))
    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="pineapple-publish-") if own_workdir else args.workdir)
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        config = Config(
            config_path=args.config,
            plugins=tuple(args.plugin),
            poll_seconds=args.poll_seconds,
            watch=not args.no_watch,
            start_timeout=args.start_timeout,
            log_level=args.log_level,
            log_format=args.log_format,
            max_config_bytes=args.max_config_bytes,
            resource_memory_budget_bytes=args.resource_memory_budget_bytes,
            secrets_dir=args.secrets_dir,
        )
        code = _produce(Producer(config, store, workdir, ttl=args.lease_ttl))
    finally:
        store.close()
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    exit_within(code)  # a fetch that could not be cancelled must not hold the exit
    return code


def _produce(producer: Producer) -> int:
    """Run ``producer`` on a thread until SIGTERM/SIGINT; bounded after the signal."""
    producer.install_signals()
    codes: list[int] = []
    thread = threading.Thread(
        target=lambda: codes.append(producer.run()), name="pineapple-producer", daemon=True
    )
    thread.start()
    while thread.is_alive() and not producer.stopping.wait(1.0):  # bounded by the signal
        pass
    producer.authority.cancel()  # a first load in flight stops now, not at its deadline
    thread.join(STOP_SECONDS)
    if thread.is_alive():
        _log.warning("the producer's loads did not stop within %gs; exiting anyway", STOP_SECONDS)
        producer.leading.stop(release=True)
    _log.info("producer stopped")
    return codes[0] if codes else 0


# -- fleet --------------------------------------------------------------------------------


def add_fleet_command(subparsers: Subparsers) -> None:
    """``pineapple fleet status|pin|unpin|rollback|config-rollback ...``."""
    parser = add_subcommand(subparsers, "fleet", fleet_command)
    actions = parser.add_subparsers(
        dest="fleet_action",
        required=True,
        metavar="ACTION",
        help="status, pin, unpin, rollback or config-rollback (each: --help)",
    )

    status = add_subcommand(actions, "status", fleet_status_command)
    add_store_flags(status)
    status.add_argument("--json", action="store_true", help="print one JSON document")
    status.add_argument(
        "--stale-seconds",
        type=float,
        default=DEFAULT_STALE_SECONDS,
        metavar="S",
        help="mark a pod whose heartbeat is older than this as stale",
    )

    for name, func in (("pin", fleet_pin_command), ("rollback", fleet_rollback_command)):
        action = add_subcommand(actions, name, func)
        action.add_argument("resource", help="the resource's name")
        action.add_argument(
            "generation", type=int, nargs="?", default=None, help="a kept generation"
        )
        action.add_argument("--reason", default="", help="why (kept with the pin)")
        add_store_flags(action)

    action = add_subcommand(actions, "unpin", fleet_unpin_command)
    action.add_argument("resource", help="the resource's name")
    add_store_flags(action)

    action = add_subcommand(actions, "config-rollback", fleet_config_rollback_command)
    action.add_argument("revision", type=int, help="a kept revision of the fleet's config")
    add_store_flags(action)


def fleet_command(args: argparse.Namespace) -> int:
    """See and steer a fleet through its store: status, pins, rollbacks.

    Every action is written once to the store and acts for every pod.
    """
    return _usage("fleet", "an action is required")  # argparse requires one first


def fleet_status_command(args: argparse.Namespace) -> int:
    """What the fleet publishes and what each pod serves.

    Per resource: the announced generation, the kept generations and the pin.
    Per pod: its config revision and the generation of each resource it
    serves, since when and how old its heartbeat is; a pod off what the fleet
    serves is marked *, an old heartbeat STALE.
    """
    store = _open(args)
    if store is None:
        return 2
    with contextlib.closing(store):
        try:
            view = fleet_view(store, stale_seconds=args.stale_seconds)
        except FleetError as exc:
            return _failed(exc)
    if args.json:
        sys.stdout.write(orjson.dumps(view, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render(view))
    return 0


def fleet_pin_command(args: argparse.Namespace) -> int:
    """Pin a resource at a generation for every pod (default: the announced one).

    Pods serve the pinned generation until `fleet unpin`; a generation the
    store no longer keeps is refused.
    """
    return _act(
        args,
        lambda store: _pinned(pin(store, args.resource, args.generation, reason=args.reason), args),
    )


def fleet_rollback_command(args: argparse.Namespace) -> int:
    """Pin a resource at the generation before the one pods serve, or at GENERATION.

    The generation before: the kept one below the pinned generation, else
    below the announced one. A generation the store no longer keeps is refused.
    """

    def act(store: FleetStore) -> str:
        generation = args.generation or previous_generation(store, args.resource)
        return _pinned(
            pin(store, args.resource, generation, reason=args.reason or "rollback"), args
        )

    return _act(args, act)


def fleet_unpin_command(args: argparse.Namespace) -> int:
    """Remove a resource's pin: every pod serves the announced generation again."""

    def act(store: FleetStore) -> str:
        if unpin(store, args.resource):
            return f"unpinned {args.resource}: pods serve the announced generation"
        return f"{args.resource} was not pinned"

    return _act(args, act)


def fleet_config_rollback_command(args: argparse.Namespace) -> int:
    """Make a kept revision of the fleet's config the current one (a new revision).

    Pods that serve the fleet's config follow it. A producer keeps producing
    the resources of its own CONFIG file, and publishes that file again when
    it changes or when a new leader starts with other bytes.
    """

    def act(store: FleetStore) -> str:
        revision = config_rollback(store, args.revision)
        if revision == args.revision:
            return f"config revision {revision} is the current one already"
        return f"config revision {args.revision} is current again, as revision {revision}"

    return _act(args, act)


def _pinned(record: Pin, args: argparse.Namespace) -> str:
    return f"pinned {args.resource} at generation {record.generation} for every pod"


def _act(args: argparse.Namespace, act: Callable[[FleetStore], str]) -> int:
    store = _open(args)
    if store is None:
        return 2
    with contextlib.closing(store):
        try:
            print(act(store))
        except FleetError as exc:
            return _failed(exc)
    return 0


def _open(args: argparse.Namespace) -> FleetStore | None:
    try:
        return open_store_of(args)
    except FleetError as exc:
        print(f"pineapple fleet: {exc}", file=sys.stderr)
        return None


def _failed(exc: FleetError) -> int:
    print(f"pineapple fleet: {exc}", file=sys.stderr)
    return 2 if isinstance(exc, StoreUnavailableError) else 1


def _usage(command: str, message: str) -> int:
    print(f"pineapple {command}: {message}", file=sys.stderr)
    return 2
