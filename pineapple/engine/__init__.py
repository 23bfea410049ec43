"""The Pine engine: unified config, operator registry, execution."""

from ._schema import OPERATOR_KINDS as OPERATOR_KINDS
from ._schema import OperatorFactory as OperatorFactory
from ._schema import OperatorKind as OperatorKind
from ._schema import OperatorRegistry as OperatorRegistry
from ._schema import OperatorSchema as OperatorSchema
from ._schema import all_operator_schemas as all_operator_schemas
from ._schema import default_operator_registry as default_operator_registry
from ._schema import register_operator as register_operator

__all__ = [
    "OPERATOR_KINDS",
    "OperatorFactory",
    "OperatorKind",
    "OperatorRegistry",
    "OperatorSchema",
    "all_operator_schemas",
    "default_operator_registry",
    "register_operator",
]
