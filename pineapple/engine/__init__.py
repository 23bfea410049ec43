"""The Pine engine: unified config, operator registry, execution.

Writing an operator: see :mod:`pineapple.engine._operator` (``Operator``,
``OperatorInput``, ``OperatorOutput``, ``register_operator``).
"""

from ._io import OperatorInput as OperatorInput
from ._io import OperatorOutput as OperatorOutput
from ._operator import RESERVED_KEYS as RESERVED_KEYS
from ._operator import Metadata as Metadata
from ._operator import Operator as Operator
from ._operator import build_operator as build_operator
from ._operator import check_params as check_params
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
    "RESERVED_KEYS",
    "Metadata",
    "Operator",
    "OperatorFactory",
    "OperatorInput",
    "OperatorKind",
    "OperatorOutput",
    "OperatorRegistry",
    "OperatorSchema",
    "all_operator_schemas",
    "build_operator",
    "check_params",
    "default_operator_registry",
    "register_operator",
]
