"""The fleet store's command-line flags: one definition for ``serve``, ``publish`` and ``fleet``.

``--fleet URL`` (the store), ``--fleet-timeout S`` (every store operation's
deadline, :data:`DEFAULT_STORE_TIMEOUT` for all of them) and one flag per
:class:`FleetLimits` field (``--fleet-max-snapshot-bytes``,
``--fleet-download-timeout``, ``--fleet-keep-generations``,
``--fleet-max-bucket-bytes``). :func:`open_store_of` opens the store they name.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection

from ._open import open_store
from ._store import DEFAULT_STORE_TIMEOUT, FleetLimits, FleetStore

__all__ = [
    "DEFAULT_STORE_TIMEOUT",
    "LIMIT_FIELDS",
    "POD_LIMITS",
    "add_store_flags",
    "limits_of",
    "open_store_of",
]

LIMIT_FIELDS = tuple(f.name for f in dataclasses.fields(FleetLimits))
"""Every :class:`FleetLimits` field (each a ``--fleet-*`` flag of ``publish``)."""
POD_LIMITS = ("max_snapshot_bytes", "download_timeout", "keep_generations")
"""The limits a pod (``serve --fleet``) has a flag for."""

_LIMIT_HELP = {
    "max_snapshot_bytes": "refuse a snapshot bundle larger than this many bytes (not moved)",
    "download_timeout": "seconds one snapshot's upload or download may take",
    "keep_generations": "generations of each resource kept in the store (and a pod's cache)",
    "max_bucket_bytes": "bytes each store bucket may hold (NATS: the bucket's max_bytes)",
}


def add_store_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    required: bool = True,
    limits: bool | Collection[str] = False,
) -> None:
    """``--fleet URL`` and ``--fleet-timeout``; ``limits``: the limit flags (True: all of
    :data:`LIMIT_FIELDS`, or the names given). ``required=False`` (``serve``): ``--fleet``
    defaults to None (no fleet)."""
    parser.add_argument(
        "--fleet",
        required=required,
        default=None,
        metavar="URL",
        help="the fleet store: nats://host:port[,nats://...] or file:///dir (credentials "
        "from PINEAPPLE_FLEET_* variables or files, never in the URL)",
    )
    parser.add_argument(
        "--fleet-timeout",
        type=float,
        default=DEFAULT_STORE_TIMEOUT,
        metavar="S",
        help="seconds each store operation may take before it fails, naming the store "
        f"(default {DEFAULT_STORE_TIMEOUT:g})",
    )
    names = LIMIT_FIELDS if limits is True else () if limits is False else tuple(limits)
    defaults = FleetLimits()
    for name in names:  # bounded: the FleetLimits fields
        default = getattr(defaults, name)
        parser.add_argument(
            "--fleet-" + name.replace("_", "-"),
            type=type(default),
            default=default,
            metavar="S" if isinstance(default, float) else "N",
            help=f"{_LIMIT_HELP[name]} (default {default})",
        )


def limits_of(args: argparse.Namespace) -> FleetLimits:
    """The :class:`FleetLimits` of parsed limit flags (``FleetError`` when one is out of range)."""
    values = {f.name: getattr(args, f"fleet_{f.name}") for f in dataclasses.fields(FleetLimits)}
    return FleetLimits(**values)


def open_store_of(args: argparse.Namespace) -> FleetStore:
    """The store of ``--fleet`` with ``--fleet-timeout`` (and the limit flags, if added)."""
    limits = limits_of(args) if hasattr(args, "fleet_keep_generations") else None
    return open_store(args.fleet, timeout=args.fleet_timeout, limits=limits)
