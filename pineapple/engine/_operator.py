"""The operator API: how an operator is written, registered and built.

How to write an operator
========================

An operator is a class derived from :class:`Operator`. Its constructor takes
the validated params (a plain dict: required params present, declared
defaults applied, unknown params rejected, and every value checked against
its ``ParamSpec``: type, ``choices``, ``minimum``/``maximum``); it checks
what a schema cannot say and raises ``ValueError`` (or any exception) on a
bad value, which the engine reports as ``RegistryError`` ``Init failed:
<message>``. ``prepare`` runs
once after the engine has set ``self.name`` and ``self.meta`` (the
``$metadata`` field lists); precompute everything there. ``execute`` runs
once per request: read ``inp``, write ``out``, return ``None``. Raising
fails the request with an ``ExecutionError`` naming the operator (the
original exception is kept as ``__cause__``)::

    from typing import Any

    from pineapple import Context, ParamSpec
    from pineapple.engine import (
        Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator,
    )
    from pineapple import resource

    class ScaleOp(Operator):
        concurrent_safe = True            # execute keeps no per-request state on self

        def __init__(self, params: dict[str, Any]) -> None:
            self.factor = float(params["factor"])  # the schema made sure it is a number
            if self.factor == 0:              # what a ParamSpec cannot say
                raise ValueError("transform_scale: factor must not be 0")

        def prepare(self) -> None:
            self.src = self.meta.item_input[0]
            self.dst = self.meta.item_output[0]

        def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            f = self.factor
            out.set_column(self.dst, [v * f for v in inp.column(self.src)])

    register_operator(
        OperatorSchema(
            name="transform_scale", kind="transform", description="Multiplies a field.",
            params={"factor": ParamSpec(type="float", required=True, description="...")},
        ),
        ScaleOp,                          # the factory: params -> operator
    )

Reading: ``inp.common`` (declared common inputs), ``inp.column(field)``,
``inp.item(i, field)``, ``len(inp)``, ``inp.templated`` (per-request values
of ``{{field}}`` params), ``inp.items`` (the items as dicts: read-only).
The engine holds the items as columns, one list per field: ``column`` is a
list copy, ``set_column`` and ``add_columns`` hand over whole lists, while
``items`` builds a dict per item on its first use after a change (for an
operator that wants rows; count with ``len(inp)``, not ``len(inp.items)``).
Writing: ``out.set_common``, ``out.set_item``, ``out.set_column``,
``out.add_item(s)``, ``out.add_columns``, ``out.remove_item(s)``,
``out.set_item_order``, ``out.warn``; what a kind may write is listed on
:class:`OperatorOutput`.

Resources: borrow with ``pineapple.resource.borrow(ctx, name, operator)``
(it raises ``ResourceUnavailableError`` naming both when the context cannot
lend it) and release every handle before returning, also when raising; the
``with`` form does both::

    with resource.borrow(ctx, self.resource_name, "my_op") as table:
        ...                             # released on return and on raise;
                                        # never keep `table` past the block

Row-set markers (class attributes) tell the DAG builder how the operator
touches the set of items: ``consumes_row_set`` (iterates items: waits for
recalls and filters before it), ``mutates_row_set`` (removes or reorders
items), ``additive_writes_row_set`` (appends items: every recall).
``concurrent_safe`` allows ``data_parallel`` > 1 (transforms only). An
operator that holds something to release (a pool, a thread) overrides
``close``; the engine calls it once from ``Engine.close``.

Mark operators that do network or disk I/O in ``execute`` with
``OperatorSchema(blocking=True)``: a server then runs such pipelines off its
event loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .._context import Context
from .._error_text import clipped
from .._errors import RegistryError
from .._params import param_problem
from .._suggest import did_you_mean
from ._io import OperatorInput, OperatorOutput
from ._schema import OperatorRegistry, OperatorSchema, default_operator_registry

__all__ = ["RESERVED_KEYS", "Metadata", "Operator", "build_operator", "check_params"]

RESERVED_KEYS: frozenset[str] = frozenset(
    {
        "type_name",
        "$metadata",
        "$code_info",
        "skip",
        "recall",
        "sources",
        "debug",
        "consumes_row_set",
        "mutates_row_set",
        "additive_writes_row_set",
        "common_defaults",
        "item_defaults",
        "strict_common",
        "strict_item",
        "for_branch_control",
        "data_parallel",
    }
)
"""Operator config keys that belong to the engine; every other key is a param."""


@dataclass(frozen=True, slots=True)
class Metadata:
    """An operator's declared field lists (``$metadata``), as the operator sees them.

    ``common_input`` has the engine-internal skip and template fields removed.
    """

    common_input: tuple[str, ...] = ()
    common_output: tuple[str, ...] = ()
    item_input: tuple[str, ...] = ()
    item_output: tuple[str, ...] = ()

    @classmethod
    def of(cls, data: Mapping[str, Sequence[str]] | None) -> Metadata:
        """Build from a ``$metadata``-shaped mapping (missing lists are empty)."""
        data = data or {}
        return cls(
            common_input=tuple(data.get("common_input") or ()),
            common_output=tuple(data.get("common_output") or ()),
            item_input=tuple(data.get("item_input") or ()),
            item_output=tuple(data.get("item_output") or ()),
        )

    def first(self, kind: str, operator: str) -> str:
        """The first field of the ``kind`` list (``"item_input"``, ...): an operator needs one.

        Raises ``ValueError`` naming ``operator`` (its type name) and the list
        when the list is empty: call it from ``prepare`` and the config is
        refused at build with that message.
        """
        fields: tuple[str, ...] = getattr(self, kind)
        if not fields:
            raise ValueError(f"{operator}: $metadata.{kind} needs one field")
        return fields[0]


class Operator:
    """Base class of every operator (see the module docstring for a how-to)."""

    consumes_row_set: ClassVar[bool] = False
    mutates_row_set: ClassVar[bool] = False
    additive_writes_row_set: ClassVar[bool] = False
    concurrent_safe: ClassVar[bool] = False

    name: str = ""
    meta: Metadata = Metadata()

    def __init__(self, params: dict[str, Any]) -> None:
        """Build from the checked params (default: an operator that takes none)."""

    def bind(self, name: str, meta: Metadata) -> None:
        """Called once by the engine after construction; then calls ``prepare``."""
        self.name = name
        self.meta = meta
        self.prepare()

    def prepare(self) -> None:
        """Precompute from ``self.name`` and ``self.meta`` (default: nothing)."""

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        """Run once per request: read ``inp``, write ``out``."""
        raise NotImplementedError(f"{type(self).__name__}.execute")

    def close(self) -> None:
        """Release what the operator holds (default: nothing). Called once."""


def check_params(
    schema: OperatorSchema, raw: Mapping[str, Any], *, name: str | None = None
) -> dict[str, Any]:
    """Params for the factory: reserved keys dropped, each checked, defaults applied.

    Every param given is checked against its ``ParamSpec`` (type, ``choices``,
    range: :func:`pineapple._params.param_problem`, the check the DSL and
    resources share), so a config whose operator would fail every request is
    refused when the engine is built. A ``{{field}}`` template in a
    templatable param stands in for its value (its type is checked per
    request). ``name``: the operator's name in the config, for the error.
    Raises ``RegistryError`` naming the operator, the param, what was given
    and what was expected.
    """
    params = {k: v for k, v in raw.items() if k not in RESERVED_KEYS}
    for pname in sorted(schema.params):
        if schema.params[pname].required and pname not in params:
            raise RegistryError(
                f"pine: registry error [{schema.name}]: required parameter "
                f'"{pname}" missing for operator "{schema.name}"'
            )
    for key in sorted(params):
        spec = schema.params.get(key)
        if spec is None:
            raise RegistryError(
                f"pine: registry error [{schema.name}]: unknown parameter "
                f'"{clipped(key)}" for operator "{schema.name}"'
                f"{did_you_mean(clipped(key), schema.params)}"
            )
        problem = param_problem(spec, params[key], echo=True)
        if problem is not None:
            raise RegistryError(
                f'pine: registry error [{schema.name}]: operator "{clipped(name or schema.name)}": '
                f"param {key} {problem}"
            )
    for pname, spec in schema.params.items():
        if pname not in params and spec.default is not None:
            params[pname] = spec.default
    return params


def build_operator(
    type_name: str,
    params: Mapping[str, Any] | None = None,
    metadata: Metadata | Mapping[str, Sequence[str]] | None = None,
    *,
    name: str | None = None,
    registry: OperatorRegistry | None = None,
) -> tuple[Operator, OperatorSchema]:
    """Look up ``type_name``, check params, construct and bind the operator.

    For tests and fixture runners as much as for the engine. Raises
    ``RegistryError`` for an unknown type, bad params or a failing constructor.
    """
    reg = registry if registry is not None else default_operator_registry()
    schema = reg.get(type_name)
    factory = reg.factory(type_name)
    if schema is None or factory is None:
        entry = f' in operator "{clipped(name)}"' if name else ""  # quoted: bounded
        hint = did_you_mean(type_name, [s.name for s in reg.all()])
        raise RegistryError(
            f"pine: registry error [{clipped(type_name)}]: "
            f"operator type not registered{entry}{hint}"
        )
    checked = check_params(schema, params or {}, name=name)
    try:
        op = factory(checked)
    except Exception as exc:
        raise RegistryError(f"pine: registry error [{type_name}]: Init failed: {exc}") from exc
    if not isinstance(op, Operator):
        raise RegistryError(
            f"pine: registry error [{type_name}]: factory returned "
            f"{type(op).__name__}, not a pineapple.engine.Operator"
        )
    meta = metadata if isinstance(metadata, Metadata) else Metadata.of(metadata)
    try:
        op.bind(name if name is not None else type_name, meta)
    except Exception as exc:
        raise RegistryError(f"pine: registry error [{type_name}]: Init failed: {exc}") from exc
    return op, schema
