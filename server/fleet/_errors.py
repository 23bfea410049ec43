"""The errors of the fleet store: one class per failure kind, all :class:`FleetError`.

Messages name the store by its sanitised URL (``FleetStore.url``: no user,
password or token), the operation, and the bucket, key or object; never a
credential.
"""

from __future__ import annotations

from pineapple import PineappleError

__all__ = [
    "AnnouncementError",
    "DigestMismatchError",
    "FleetError",
    "ObjectMissingError",
    "RevisionConflictError",
    "SnapshotTooLargeError",
    "StoreUnavailableError",
]


class FleetError(PineappleError):
    """Base class of every error of the fleet store and its snapshots."""


class StoreUnavailableError(FleetError):
    """The store did not answer an operation within its deadline (or refused the connection)."""


class ObjectMissingError(FleetError):
    """An object (a snapshot) named by an announcement or a call is not in the store or cache."""


class DigestMismatchError(FleetError):
    """An object's bytes do not match its recorded size or digest (corrupted or truncated)."""


class SnapshotTooLargeError(FleetError):
    """A snapshot (or a bucket) would exceed its byte limit (``FleetLimits``)."""


class RevisionConflictError(FleetError):
    """A compare-and-set found another revision than the one it expected."""


class AnnouncementError(FleetError):
    """An announcement is malformed (the message names the field)."""
