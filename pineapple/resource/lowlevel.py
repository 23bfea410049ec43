"""The resource runtime's plumbing: what the server and resource-type authors also need.

The face (:mod:`pineapple.resource`) holds the words a user types: the
Manager, handles, providers, the registry, status and errors. This module
holds the parts beneath them that whoever assembles a server, or writes a
resource type that shares, probes or reports a client, builds on:

- values and their life: ``RefValue`` (the acquire-if-positive count behind
  every handle), ``close_now`` (close a value at once, logged),
  ``MemoryBudget`` (the limit and its ledger of retired-but-borrowed values,
  shared by successive managers);
- a config parsed once: ``LoadedConfig`` / ``load_config`` (root, hash,
  secrets, entries, folder), ``resource_names`` (the names a value references);
- the Manager's metrics hook: ``ManagerMetrics``, ``RefreshResult``;
- for fetchers that say more: ``SourceReport`` / ``source_report_of`` (where
  a value comes from, shown in its status, and whether it is known stale);
- sharing between processes: ``SnapshotCodec``, ``PickleCodec``,
  ``SnapshotFormatError``, ``SnapshotWriteError``;
- optional hooks, named: ``FetcherHooks`` (a fetcher's ``commit``,
  ``discard``, ``carry_over``, ``cancel``, ``close``; ``FETCHER_HOOKS`` lists
  them for wrappers), ``Closable`` (a value's ``close``), ``CodecHooks`` (a
  codec's ``release_memory``); ``call_hook`` calls one and logs its failure,
  ``hook_of`` finds one; ``admitted_upstream`` (a fetcher whose values another
  process admitted);
- what a value may report: the liveness probe (``Probed``, ``ProbeReport``,
  ``Reachability``, ``probe_report_of``, ``LATENCY_BUCKETS``) and a client's
  pool and commands (``Metered``, ``ClientReport``, ``CommandStats``,
  ``CommandCell``, ``client_report_of``);
- for printers and resource types: ``JSONPrinter`` (the default one),
  ``redact`` (a text with its secrets masked), ``redact_value`` (a status
  value with its secrets masked), ``registered_validators``;
- for whoever assembles a Manager: ``default_registry`` and ``all_schemas``
  (the types registered so far), ``ValidationSpec`` (a parsed ``validate``
  block), ``Condition`` (one line of a ``ResourceStatus``),
  ``validate_resource_deps`` (the deps check of a config), ``flush_closes``
  (wait for the closes scheduled so far);
- a factory told the resource's name: ``NamedFetcherFactory`` (the server's
  shared snapshots key their store entries by it).

Same rules as the face: ``tests/test_public_api.py`` pins ``__all__``;
importing this module loads neither the engine nor any resource type.
"""

from ._budget import MemoryBudget as MemoryBudget
from ._client_metrics import ClientReport as ClientReport
from ._client_metrics import CommandCell as CommandCell
from ._client_metrics import CommandStats as CommandStats
from ._client_metrics import Metered as Metered
from ._client_metrics import client_report_of as client_report_of
from ._closer import close_now as close_now
from ._closer import flush as flush_closes
from ._codec import PickleCodec as PickleCodec
from ._codec import SnapshotCodec as SnapshotCodec
from ._codec import SnapshotFormatError as SnapshotFormatError
from ._codec import SnapshotWriteError as SnapshotWriteError
from ._deps import resource_names as resource_names
from ._deps import validate_resource_deps as validate_resource_deps
from ._hooks import FETCHER_HOOKS as FETCHER_HOOKS
from ._hooks import Closable as Closable
from ._hooks import CodecHooks as CodecHooks
from ._hooks import FetcherHooks as FetcherHooks
from ._hooks import admitted_upstream as admitted_upstream
from ._hooks import call_hook as call_hook
from ._hooks import hook_of as hook_of
from ._loaded import LoadedConfig as LoadedConfig
from ._loaded import load_config as load_config
from ._outcome import ManagerMetrics as ManagerMetrics
from ._outcome import RefreshResult as RefreshResult
from ._probe import LATENCY_BUCKETS as LATENCY_BUCKETS
from ._probe import Probed as Probed
from ._probe import ProbeReport as ProbeReport
from ._probe import Reachability as Reachability
from ._probe import probe_report_of as probe_report_of
from ._redact import redact as redact
from ._redact import redact_value as redact_value
from ._refvalue import RefValue as RefValue
from ._registry import JSONPrinter as JSONPrinter
from ._registry import NamedFetcherFactory as NamedFetcherFactory
from ._registry import all_schemas as all_schemas
from ._registry import default_registry as default_registry
from ._status import Condition as Condition
from ._status import SourceReport as SourceReport
from ._status import source_report_of as source_report_of
from ._validate import ValidationSpec as ValidationSpec
from ._validate import registered_validators as registered_validators

__all__ = [
    "FETCHER_HOOKS",
    "LATENCY_BUCKETS",
    "ClientReport",
    "Closable",
    "CodecHooks",
    "CommandCell",
    "CommandStats",
    "Condition",
    "FetcherHooks",
    "JSONPrinter",
    "LoadedConfig",
    "ManagerMetrics",
    "MemoryBudget",
    "Metered",
    "NamedFetcherFactory",
    "PickleCodec",
    "ProbeReport",
    "Probed",
    "Reachability",
    "RefValue",
    "RefreshResult",
    "SnapshotCodec",
    "SnapshotFormatError",
    "SnapshotWriteError",
    "SourceReport",
    "ValidationSpec",
    "admitted_upstream",
    "all_schemas",
    "call_hook",
    "client_report_of",
    "close_now",
    "default_registry",
    "flush_closes",
    "hook_of",
    "load_config",
    "probe_report_of",
    "redact",
    "redact_value",
    "registered_validators",
    "resource_names",
    "source_report_of",
    "validate_resource_deps",
]
