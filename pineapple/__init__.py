"""Pineapple: a hot-reloadable resource manager for recommendation pipelines.

Layers (each imports only the ones above it):

    _error_text                     the one bound on an error's text, and the one cut
    _errors, _params, _context      plain values: errors, parameter specs, request context
    pineapple.resource              the resource runtime (registry, RefValue, Manager)
    pineapple.engine                the Pine engine (config, operator registry, execution)
    pineapple.operators             built-in operators (import registers them)
    resources/                      built-in resource types (a separate top-level package)
    pineapple.builtins              the one place that imports operators and resources
    pineapple.plugins, pineapple.commands, pineapple.cli
                                    plugin loading, the subcommand contract, the command line
    server/ dsl/ codegen/           separate top-level packages built on all of the above

``import pineapple`` and ``import pineapple.resource`` load no engine:
``OperatorSchema`` and ``register_operator`` are imported from
:mod:`pineapple.engine` on first use (module ``__getattr__``).
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

# First: decides, before any of it loads, whether the compiled engine core runs.
from . import _native as _native
from ._context import Context as Context
from ._errors import AnswerTooLargeError as AnswerTooLargeError
from ._errors import ConfigError as ConfigError
from ._errors import DeadlineExceededError as DeadlineExceededError
from ._errors import ExecutionError as ExecutionError
from ._errors import PineappleError as PineappleError
from ._errors import RegistryError as RegistryError
from ._errors import ValidationError as ValidationError
from ._params import ParamSpec as ParamSpec
from .resource import ResourceSchema as ResourceSchema
from .resource import register_resource as register_resource

if _TYPE_CHECKING:
    from .engine import OperatorSchema as OperatorSchema
    from .engine import register_operator as register_operator

_FROM_ENGINE = frozenset({"OperatorSchema", "register_operator"})

__all__ = [
    "AnswerTooLargeError",
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


def __getattr__(name: str) -> _Any:
    """The engine's names, imported on first use so that the resource runtime stays light."""
    if name in _FROM_ENGINE:
        from . import engine

        value = getattr(engine, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
