"""Pineapple: a hot-reloadable resource manager for recommendation pipelines.

Layers (each imports only the ones above it):

    _errors, _params, _context      plain values: errors, parameter specs, request context
    pineapple.resource              the resource runtime (registry, RefValue, Manager)
    pineapple.engine                the Pine engine (config, operator registry, execution)
    pineapple.operators             built-in operators (import registers them)
    resources/ server/ dsl/ codegen/    separate top-level packages built on this one
"""

from ._context import Context as Context
from ._errors import ConfigError as ConfigError
from ._errors import DeadlineExceededError as DeadlineExceededError
from ._errors import ExecutionError as ExecutionError
from ._errors import PineappleError as PineappleError
from ._errors import RegistryError as RegistryError
from ._errors import ValidationError as ValidationError
from ._params import ParamSpec as ParamSpec
from .engine import OperatorSchema as OperatorSchema
from .engine import register_operator as register_operator
from .resource import ResourceSchema as ResourceSchema
from .resource import register_resource as register_resource

__all__ = [
    "ConfigError",
    "Context",
    "DeadlineExceededError",
    "ExecutionError",
    "OperatorSchema",
    "ParamSpec",
    "PineappleError",
    "RegistryError",
    "ResourceSchema",
    "ValidationError",
    "register_operator",
    "register_resource",
]
__version__ = "0.1.0"
