"""Codegen: typed DSL classes from the resource and operator registries.

``python -m codegen`` reads the registries of :mod:`pineapple.builtins` (the
built-in types, plus third-party entry-point plugins) and writes
``dsl/generated/resources.py`` (one ``<CamelName>Resource`` class per
resource type) and ``dsl/generated/operators.py`` (one typed method per
operator type on ``OperatorMethods``, which ``dsl.Flow`` inherits). Output
is deterministic and already in ``ruff format`` style; ``--check`` exits 1
when a checked-in file is missing or stale.

The face holds what a user calls; the two renderers beneath ``render_all``
are :mod:`codegen.lowlevel`, and the ``pineapple codegen`` subcommand is
``_main.add_codegen_command`` (the ``pineapple.commands`` entry point).

Layers: ``_errors``, ``_source`` < ``_names``, ``_params`` < ``_resources``,
``_operators`` < ``_files`` < ``_main``.
"""

from . import lowlevel as lowlevel
from ._errors import CodegenError as CodegenError
from ._files import default_target as default_target
from ._files import render_all as render_all
from ._files import stale_files as stale_files
from ._files import write_files as write_files
from ._main import run as run

__all__ = [
    "CodegenError",
    "default_target",
    "render_all",
    "run",
    "stale_files",
    "write_files",
]
