"""Codegen's plumbing: the two renderers beneath ``render_all`` and the names they reserve.

The face (:mod:`codegen`) holds what a user calls: ``run`` (what ``python -m
codegen`` and ``pineapple codegen`` do), ``render_all``, ``write_files``,
``stale_files``, ``default_target`` and ``CodegenError``. This module holds
the parts beneath ``render_all``, for tests and tools that render one half:
``render_resources``, ``render_operators``, and ``FLOW_NAMES`` /
``METADATA_ARGS`` (the names a generated method may not take). The
``pineapple codegen`` subcommand is ``codegen._main.add_codegen_command`` (the
``pineapple.commands`` entry point).
"""

from ._operators import FLOW_NAMES as FLOW_NAMES
from ._operators import METADATA_ARGS as METADATA_ARGS
from ._operators import render_operators as render_operators
from ._resources import render_resources as render_resources

__all__ = ["FLOW_NAMES", "METADATA_ARGS", "render_operators", "render_resources"]
