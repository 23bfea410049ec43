"""The Apple flow DSL: declare a pipeline in Python, compile it to the unified JSON.

::

    from dsl import Flow, compile_flow
    from dsl.generated.resources import JsonFileResource

    flow = Flow("demo", common_input=["user_id"], item_output=["item_id", "score"])
    flow.resource("hot_items", JsonFileResource(path="configs/data/hot_items.json"))
    flow.recall_resource(resource_name="hot_items", item_output=["item_id", "score"])
    config = compile_flow(flow)      # dict; flow.compile() gives the JSON text

Layers: ``_errors`` < ``_condition`` (branch conditions as Lua) < ``_branch``
(if/elif/else state, control fields) < ``_resource``, ``_recorder`` <
``generated`` (written by ``python -m codegen``) < ``_flow`` < ``_ir`` (the
placed operators the checks read) < ``_dataflow``, ``_subflow_contract`` <
``_validate`` < ``_compile`` (which installs itself as ``Flow.compile``),
``_load`` < ``_advice`` (warnings on flows that compile), ``_cli``.
"""

from ._advice import advice as advice
from ._compile import compile_flow as compile_flow
from ._compile import compile_json as compile_json
from ._compile import dumps as dumps
from ._errors import ValidationError as ValidationError
from ._flow import Flow as Flow
from ._flow import ResourceDecl as ResourceDecl
from ._flow import SubFlow as SubFlow
from ._load import FlowLoadError as FlowLoadError
from ._load import load_flow as load_flow
from ._recorder import METADATA_KEYWORDS as METADATA_KEYWORDS
from ._recorder import OperatorCall as OperatorCall
from ._resource import BaseResource as BaseResource

__all__ = [
    "METADATA_KEYWORDS",
    "BaseResource",
    "Flow",
    "FlowLoadError",
    "OperatorCall",
    "ResourceDecl",
    "SubFlow",
    "ValidationError",
    "advice",
    "compile_flow",
    "compile_json",
    "dumps",
    "load_flow",
]
