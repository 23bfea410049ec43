"""The Pine engine: unified config, operator registry, execution.

Writing an operator: see :mod:`pineapple.engine._operator` (``Operator``,
``OperatorInput``, ``OperatorOutput``, ``register_operator``). The HTTP
``/execute`` semantics (``respond``, status codes) live in the public
submodule :mod:`pineapple.engine.http`. The face lists the documented
contract only (see ``README.md`` beside this file); Go value formatting
(``_gofmt``) and ``{{field}}`` templates (``_template``) serve the built-in
operators from their private modules.
"""

from ._dag import Graph as Graph
from ._engine import Engine as Engine
from ._engine import Result as Result
from ._engine import UnknownGroupError as UnknownGroupError
from ._io import OperatorInput as OperatorInput
from ._io import OperatorOutput as OperatorOutput
from ._operator import Metadata as Metadata
from ._operator import Operator as Operator
from ._operator import build_operator as build_operator
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
from ._trace import TraceEntry as TraceEntry

__all__ = [
    "DAG_FORMATS",
    "OPERATOR_KINDS",
    "PIECE",
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
    "default_operator_registry",
    "pieces",
    "register_operator",
    "stable_order",
    "stats_dict",
]
