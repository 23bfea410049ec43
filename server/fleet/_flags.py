"""The fleet store's command-line flags, spelled alike by every command that opens it.

``--fleet URL`` (the store), ``--fleet-timeout S`` (every store operation's
deadline) and one flag per :class:`FleetLimits` field (``--fleet-max-snapshot-bytes``,
``--fleet-download-timeout``, ``--fleet-keep-generations``,
``--fleet-max-bucket-bytes``). :func:`open_store_of` opens the store they name.
"""

from __future__ import annotations

import argparse
import dataclasses

from ._open import open_store
from ._store import FleetLimits, FleetStore

__all__ = ["DEFAULT_STORE_TIMEOUT", "add_store_flags", "limits_of", "open_store_of"]

DEFAULT_STORE_TIMEOUT = 5.0
"""Seconds each store operation may take (``--fleet-timeout``)."""

_LIMIT_HELP = {
    "max_snapshot_bytes": "refuse a snapshot bundle larger than this many bytes",
    "download_timeout": "seconds one snapshot's upload or download may take",
    "keep_generations": "generations of each resource kept in the store (and a pod's cache)",
    "max_bucket_bytes": "bytes each store bucket may hold (NATS: the bucket's max_bytes)",
}


def add_store_flags(parser: argparse.ArgumentParser, *, limits: bool = False) -> None:
    """``--fleet URL`` (required) and ``--fleet-timeout``; with ``limits``, the limit flags."""
    parser.add_argument(
        "--fleet",
        required=True,
        metavar="URL",
        help="the fleet store: nats://host:port[,nats://...] or file:///dir (credentials "
        "from PINEAPPLE_FLEET_* variables or files, never in the URL)",
    )
    parser.add_argument(
        "--fleet-timeout",
        type=float,
        default=DEFAULT_STORE_TIMEOUT,
        metavar="S",
        help="seconds each store operation may take before it fails, naming the store",
    )
    if not limits:
        return
    for field in dataclasses.fields(FleetLimits):
        flag = "--fleet-" + field.name.replace("_", "-")
        parser.add_argument(
            flag,
            type=type(field.default),
            default=field.default,
            metavar="S" if isinstance(field.default, float) else "N",
            help=_LIMIT_HELP[field.name],
        )


def limits_of(args: argparse.Namespace) -> FleetLimits:
    """The :class:`FleetLimits` of parsed limit flags (``FleetError`` when one is out of range)."""
    values = {f.name: getattr(args, f"fleet_{f.name}") for f in dataclasses.fields(FleetLimits)}
    return FleetLimits(**values)


def open_store_of(args: argparse.Namespace) -> FleetStore:
    """The store of ``--fleet`` with ``--fleet-timeout`` (and the limit flags, if added)."""
    limits = limits_of(args) if hasattr(args, "fleet_keep_generations") else None
    return open_store(args.fleet, timeout=args.fleet_timeout, limits=limits)
