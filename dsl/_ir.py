"""The flow's intermediate form: operator calls placed, named and guarded.

:func:`dsl._compile.flatten` turns a ``Flow`` into a list of
:class:`CompiledOperator`; the checks (``_validate``, ``_dataflow``,
``_subflow_contract``, ``_advice``) read that list. It lives below all of
them so that none depends on the driver that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._branch import BranchCall
from ._recorder import OperatorCall

__all__ = ["CompiledOperator"]


@dataclass
class CompiledOperator:
    """An operator call placed in the flow: its final name, sub-flow path and skip list.

    ``branch`` is set for the control operator of an ``if_``/``elif_``/``else_``.
    """

    name: str
    call: OperatorCall
    path: str
    skip: list[str]
    explicit: bool
    branch: BranchCall | None = None
