"""Codegen: typed DSL classes from the resource and operator registries.

``python -m codegen`` reads the registries of :mod:`pineapple.builtins` (the
built-in types, plus third-party entry-point plugins) and writes
``dsl/generated/resources.py`` (one ``<CamelName>Resource`` class per
resource type) and ``dsl/generated/operators.py`` (one typed method per
operator type on ``OperatorMethods``, which ``dsl.Flow`` inherits). Output
is deterministic and already in ``ruff format`` style; ``--check`` exits 1
when a checked-in file is missing or stale.

Layers: ``_errors``, ``_source`` < ``_names``, ``_params`` < ``_resources``,
``_operators`` < ``_files`` < ``_main``.
"""

from ._errors import CodegenError as CodegenError
from ._files import default_target as default_target
from ._files import render_all as render_all
from ._files import stale_files as stale_files
from ._files import write_files as write_files
from ._main import add_arguments as add_arguments
from ._main import add_codegen_command as add_codegen_command
from ._main import main as main
from ._main import run as run
from ._operators import FLOW_NAMES as FLOW_NAMES
from ._operators import METADATA_ARGS as METADATA_ARGS
from ._operators import render_operators as render_operators
from ._resources import render_resources as render_resources

__all__ = [
    "FLOW_NAMES",
    "METADATA_ARGS",
    "CodegenError",
    "add_arguments",
    "add_codegen_command",
    "default_target",
    "main",
    "render_all",
    "render_operators",
    "render_resources",
    "run",
    "stale_files",
    "write_files",
]
