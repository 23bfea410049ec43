"""The resource runtime: named, ref-counted values refreshed in the background.

Read ``Manager`` for the life cycle, ``ResourceHandle`` for the borrow
contract and ``_refvalue`` for the guarantees of the borrow path. The face
lists the words a user types (``README.md`` beside this file); the plumbing
that the server and resource-type authors also need (``RefValue``, the
memory budget, loaded configs, codecs, the probe and client-metrics
contracts) is :mod:`pineapple.resource.lowlevel`. Importing either loads
neither the engine nor any resource type.
"""

from .._errors import DuplicateRegistrationError as DuplicateRegistrationError
from .._errors import HandleReleasedError as HandleReleasedError
from .._errors import ManagerStateError as ManagerStateError
from .._errors import MissingResourceError as MissingResourceError
from .._errors import StartError as StartError
from . import lowlevel as lowlevel
from ._manager import Manager as Manager
from ._outcome import NOT_MODIFIED as NOT_MODIFIED
from ._outcome import RefreshError as RefreshError
from ._outcome import UnknownResourceError as UnknownResourceError
from ._provider import ResourceProvider as ResourceProvider
from ._provider import ResourceUnavailableError as ResourceUnavailableError
from ._provider import Static as Static
from ._provider import borrow as borrow
from ._provider import from_context as from_context
from ._provider import with_resources as with_resources
from ._refusal import MemoryBudgetExceededError as MemoryBudgetExceededError
from ._refusal import NoPreviousValueError as NoPreviousValueError
from ._refusal import PinnedError as PinnedError
from ._refusal import ValidationRefusedError as ValidationRefusedError
from ._refusal import ValueRefusedError as ValueRefusedError
from ._refvalue import ResourceHandle as ResourceHandle
from ._registry import Fetcher as Fetcher
from ._registry import FetcherFactory as FetcherFactory
from ._registry import Printer as Printer
from ._registry import Registry as Registry
from ._registry import ResourceSchema as ResourceSchema
from ._registry import register_resource as register_resource
from ._status import ResourceStatus as ResourceStatus
from ._validate import Validator as Validator
from ._validate import register_validator as register_validator

__all__ = [
    "NOT_MODIFIED",
    "DuplicateRegistrationError",
    "Fetcher",
    "FetcherFactory",
    "HandleReleasedError",
    "Manager",
    "ManagerStateError",
    "MemoryBudgetExceededError",
    "MissingResourceError",
    "NoPreviousValueError",
    "PinnedError",
    "Printer",
    "RefreshError",
    "Registry",
    "ResourceHandle",
    "ResourceProvider",
    "ResourceSchema",
    "ResourceStatus",
    "ResourceUnavailableError",
    "StartError",
    "Static",
    "UnknownResourceError",
    "ValidationRefusedError",
    "Validator",
    "ValueRefusedError",
    "borrow",
    "from_context",
    "register_resource",
    "register_validator",
    "with_resources",
]
