"""The Pine engine: unified config, operator registry, execution.

Writing an operator: see :mod:`pineapple.engine._operator` (``Operator``,
``OperatorInput``, ``OperatorOutput``, ``register_operator``).
"""

from ._dag import Graph as Graph
from ._engine import Engine as Engine
from ._engine import Result as Result
from ._engine import UnknownGroupError as UnknownGroupError
from ._gofmt import format_f as format_f
from ._gofmt import format_g as format_g
from ._gofmt import format_value as format_value
from ._gofmt import go_json as go_json
from ._gofmt import go_type_name as go_type_name
from ._http import STATUS_BAD_REQUEST as STATUS_BAD_REQUEST
from ._http import STATUS_CONTRACT as STATUS_CONTRACT
from ._http import STATUS_DEADLINE as STATUS_DEADLINE
from ._http import STATUS_EXECUTION as STATUS_EXECUTION
from ._http import STATUS_TOO_MANY_ITEMS as STATUS_TOO_MANY_ITEMS
from ._http import STATUS_UNKNOWN_GROUP as STATUS_UNKNOWN_GROUP
from ._http import encode_response as encode_response
from ._http import respond as respond
from ._io import OperatorInput as OperatorInput
from ._io import OperatorOutput as OperatorOutput
from ._operator import RESERVED_KEYS as RESERVED_KEYS
from ._operator import Metadata as Metadata
from ._operator import Operator as Operator
from ._operator import build_operator as build_operator
from ._operator import check_params as check_params
from ._pieces import PIECE as PIECE
from ._pieces import pieces as pieces
from ._pieces import stable_order as stable_order
from ._render import DAG_FORMATS as DAG_FORMATS
from ._render import UnknownFormatError as UnknownFormatError
from ._schema import OPERATOR_KINDS as OPERATOR_KINDS
from ._schema import OperatorFactory as OperatorFactory
from ._schema import OperatorKind as OperatorKind
from ._schema import OperatorRegistry as OperatorRegistry
from ._schema import OperatorSchema as OperatorSchema
from ._schema import all_operator_schemas as all_operator_schemas
from ._schema import default_operator_registry as default_operator_registry
from ._schema import register_operator as register_operator
from ._stats import EngineStats as EngineStats
from ._stats import StatsTotals as StatsTotals
from ._stats import stats_dict as stats_dict
from ._template import is_template as is_template
from ._trace import TraceEntry as TraceEntry

__all__ = [
    "DAG_FORMATS",
    "OPERATOR_KINDS",
    "PIECE",
    "RESERVED_KEYS",
    "STATUS_BAD_REQUEST",
    "STATUS_CONTRACT",
    "STATUS_DEADLINE",
    "STATUS_EXECUTION",
    "STATUS_TOO_MANY_ITEMS",
    "STATUS_UNKNOWN_GROUP",
    "Engine",
    "EngineStats",
    "Graph",
    "Metadata",
    "Operator",
    "OperatorFactory",
    "OperatorInput",
    "OperatorKind",
    "OperatorOutput",
    "OperatorRegistry",
    "OperatorSchema",
    "Result",
    "StatsTotals",
    "TraceEntry",
    "UnknownFormatError",
    "UnknownGroupError",
    "all_operator_schemas",
    "build_operator",
    "check_params",
    "default_operator_registry",
    "encode_response",
    "format_f",
    "format_g",
    "format_value",
    "go_json",
    "go_type_name",
    "is_template",
    "pieces",
    "register_operator",
    "respond",
    "stable_order",
    "stats_dict",
]
