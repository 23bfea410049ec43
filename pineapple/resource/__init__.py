"""The resource runtime: named, ref-counted values refreshed in the background.

Read ``Manager`` for the life cycle, ``ResourceHandle`` for the borrow
contract and ``_refvalue`` for the guarantees of the borrow path. The face
lists the documented contract (``README.md`` beside this file); importing
it loads neither the engine nor any resource type.
"""

from .._context import Context as Context
from .._errors import DuplicateRegistrationError as DuplicateRegistrationError
from .._errors import HandleReleasedError as HandleReleasedError
from .._errors import ManagerStateError as ManagerStateError
from .._errors import MissingResourceError as MissingResourceError
from .._errors import StartError as StartError
from .._params import ParamSpec as ParamSpec
from ._budget import MemoryBudget as MemoryBudget
from ._client_metrics import ClientReport as ClientReport
from ._client_metrics import CommandCell as CommandCell
from ._client_metrics import CommandStats as CommandStats
from ._client_metrics import Metered as Metered
from ._client_metrics import client_report_of as client_report_of
from ._closer import flush as flush_closes
from ._codec import PickleCodec as PickleCodec
from ._codec import SnapshotCodec as SnapshotCodec
from ._codec import SnapshotFormatError as SnapshotFormatError
from ._codec import SnapshotWriteError as SnapshotWriteError
from ._deps import resource_names as resource_names
from ._deps import validate_resource_deps as validate_resource_deps
from ._loaded import LoadedConfig as LoadedConfig
from ._loaded import load_config as load_config
from ._manager import NOT_MODIFIED as NOT_MODIFIED
from ._manager import Manager as Manager
from ._manager import ManagerMetrics as ManagerMetrics
from ._manager import RefreshError as RefreshError
from ._manager import RefreshResult as RefreshResult
from ._manager import UnknownResourceError as UnknownResourceError
from ._probe import LATENCY_BUCKETS as LATENCY_BUCKETS
from ._probe import Probed as Probed
from ._probe import ProbeReport as ProbeReport
from ._probe import Reachability as Reachability
from ._probe import probe_report_of as probe_report_of
from ._provider import ResourceProvider as ResourceProvider
from ._provider import ResourceUnavailableError as ResourceUnavailableError
from ._provider import Static as Static
from ._provider import borrow as borrow
from ._provider import from_context as from_context
from ._provider import with_resources as with_resources
from ._redact import redact as redact
from ._redact import redact_value as redact_value
from ._refusal import MemoryBudgetExceededError as MemoryBudgetExceededError
from ._refusal import NoPreviousValueError as NoPreviousValueError
from ._refusal import PinnedError as PinnedError
from ._refusal import ValidationRefusedError as ValidationRefusedError
from ._refusal import ValueRefusedError as ValueRefusedError
from ._refvalue import RefValue as RefValue
from ._refvalue import ResourceHandle as ResourceHandle
from ._registry import Fetcher as Fetcher
from ._registry import FetcherFactory as FetcherFactory
from ._registry import JSONPrinter as JSONPrinter
from ._registry import Printer as Printer
from ._registry import Registry as Registry
from ._registry import ResourceSchema as ResourceSchema
from ._registry import all_schemas as all_schemas
from ._registry import default_registry as default_registry
from ._registry import register_resource as register_resource
from ._status import Condition as Condition
from ._status import ResourceStatus as ResourceStatus
from ._validate import ValidationSpec as ValidationSpec
from ._validate import Validator as Validator
from ._validate import register_validator as register_validator
from ._validate import registered_validators as registered_validators

__all__ = [
    "LATENCY_BUCKETS",
    "NOT_MODIFIED",
    "ClientReport",
    "CommandCell",
    "CommandStats",
    "Condition",
    "Context",
    "DuplicateRegistrationError",
    "Fetcher",
    "FetcherFactory",
    "HandleReleasedError",
    "JSONPrinter",
    "LoadedConfig",
    "Manager",
    "ManagerMetrics",
    "ManagerStateError",
    "MemoryBudget",
    "MemoryBudgetExceededError",
    "Metered",
    "MissingResourceError",
    "NoPreviousValueError",
    "ParamSpec",
    "PickleCodec",
    "PinnedError",
    "Printer",
    "ProbeReport",
    "Probed",
    "Reachability",
    "RefValue",
    "RefreshError",
    "RefreshResult",
    "Registry",
    "ResourceHandle",
    "ResourceProvider",
    "ResourceSchema",
    "ResourceStatus",
    "ResourceUnavailableError",
    "SnapshotCodec",
    "SnapshotFormatError",
    "SnapshotWriteError",
    "StartError",
    "Static",
    "UnknownResourceError",
    "ValidationRefusedError",
    "ValidationSpec",
    "Validator",
    "ValueRefusedError",
    "all_schemas",
    "borrow",
    "client_report_of",
    "default_registry",
    "flush_closes",
    "from_context",
    "load_config",
    "probe_report_of",
    "redact",
    "redact_value",
    "register_resource",
    "register_validator",
    "registered_validators",
    "resource_names",
    "validate_resource_deps",
    "with_resources",
]
