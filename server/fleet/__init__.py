"""The fleet: one producer publishes snapshots to a store that every pod follows.

This package's face is the store and the snapshot format (the producer and
the pod build on it):

- :func:`open_store` -> a :class:`FleetStore` (NATS JetStream, or a directory):
  objects (snapshot bundles, digest-verified) and records in the buckets
  :data:`ANNOUNCEMENTS`, :data:`PINS`, :data:`CONFIG`, :data:`PODS`,
  :data:`LEASES` (revisions, history, compare-and-set, watch);
- :class:`Announcement` and :func:`publish_snapshot` (bundle, store, announce);
- :class:`SnapshotCache` (``--fleet-cache``: what a pod accepted, kept across restarts);
- :class:`Lease` (one producer leads);
- :class:`FleetLimits` and the errors, all :class:`FleetError`.

Modules (each one concept): ``_store`` (the interface), ``_open``
(``open_store``), ``_directory`` and ``_jetstream`` (the backends),
``_transfer`` (hashed, bounded object transfers), ``_bundle`` (the snapshot
bundle format), ``_snapshots`` (announcements, publishing), ``_cache``
(the pod's cache), ``_lease``, ``_errors``.
"""

from ._cache import SnapshotCache as SnapshotCache
from ._errors import AnnouncementError as AnnouncementError
from ._errors import DigestMismatchError as DigestMismatchError
from ._errors import FleetError as FleetError
from ._errors import ObjectMissingError as ObjectMissingError
from ._errors import RevisionConflictError as RevisionConflictError
from ._errors import SnapshotTooLargeError as SnapshotTooLargeError
from ._errors import StoreUnavailableError as StoreUnavailableError
from ._lease import PRODUCER_LEASE as PRODUCER_LEASE
from ._lease import Lease as Lease
from ._open import open_store as open_store
from ._snapshots import Announcement as Announcement
from ._snapshots import announced as announced
from ._snapshots import check_portable as check_portable
from ._snapshots import publish_snapshot as publish_snapshot
from ._store import ANNOUNCEMENTS as ANNOUNCEMENTS
from ._store import BUCKETS as BUCKETS
from ._store import CONFIG as CONFIG
from ._store import CONFIG_KEY as CONFIG_KEY
from ._store import LEASES as LEASES
from ._store import PINS as PINS
from ._store import PODS as PODS
from ._store import FleetLimits as FleetLimits
from ._store import FleetStore as FleetStore
from ._store import ObjectInfo as ObjectInfo
from ._store import Record as Record
from ._store import Watch as Watch

__all__ = [
    "ANNOUNCEMENTS",
    "BUCKETS",
    "CONFIG",
    "CONFIG_KEY",
    "LEASES",
    "PINS",
    "PODS",
    "PRODUCER_LEASE",
    "Announcement",
    "AnnouncementError",
    "DigestMismatchError",
    "FleetError",
    "FleetLimits",
    "FleetStore",
    "Lease",
    "ObjectInfo",
    "ObjectMissingError",
    "Record",
    "RevisionConflictError",
    "SnapshotCache",
    "SnapshotTooLargeError",
    "StoreUnavailableError",
    "Watch",
    "announced",
    "check_portable",
    "open_store",
    "publish_snapshot",
]
