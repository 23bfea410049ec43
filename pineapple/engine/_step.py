"""A compiled pipeline step: one operator plus everything precomputed for the request path.

Built once per operator when an ``Engine`` is constructed; the runner reads
only plain attributes of a ``Step``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._context import Context
from .._errors import RegistryError, ValidationError
from ._config import OperatorConfig
from ._dag import NodeTraits
from ._io import OperatorInput, OperatorOutput
from ._operator import Metadata, Operator, build_operator
from ._parallel import ShardedExecute
from ._schema import OperatorRegistry, OperatorSchema
from ._template import TemplatedParam, plan_templates

__all__ = ["KIND_RULES", "Step", "compile_step"]

_EMPTY: Mapping[str, Any] = {}

# What each kind may write: common, item, add, remove, reorder.
KIND_RULES: dict[str, tuple[bool, bool, bool, bool, bool]] = {
    "recall": (True, False, True, False, False),
    "transform": (True, True, False, False, False),
    "filter": (False, False, False, True, False),
    "merge": (False, True, False, True, False),
    "reorder": (False, False, False, False, True),
    "observe": (False, False, False, False, False),
}
_METHODS = ("SetCommon", "SetItem", "AddItem", "RemoveItem", "SetItemOrder")
_NONE: list[str] = []  # shared, never mutated: callers only test it


class Step:
    """One operator of a compiled pipeline (read-only after construction)."""

    __slots__ = (
        "blocking",
        "common_defaulted",
        "common_nullable",
        "common_strict",
        "data_parallel",
        "debug",
        "execute",
        "item_defaults",
        "item_input",
        "item_nullable",
        "item_strict",
        "kind",
        "name",
        "needs_common",
        "op",
        "position",
        "recall",
        "rules",
        "skip",
        "slot",
        "templated",
        "traits",
        "type_name",
    )

    name: str
    type_name: str
    kind: str
    op: Operator
    execute: Callable[[Context, OperatorInput, OperatorOutput], None]
    """The operator's ``execute``, or its sharded run when ``data_parallel`` > 1."""
    recall: bool
    blocking: bool
    skip: tuple[str, ...]
    common_strict: tuple[str, ...]
    common_defaulted: tuple[tuple[str, Any], ...]
    common_nullable: tuple[str, ...]
    needs_common: bool
    item_strict: tuple[str, ...]
    item_nullable: tuple[str, ...]
    item_defaults: Mapping[str, Any]
    templated: tuple[TemplatedParam, ...]
    data_parallel: int
    rules: tuple[bool, bool, bool, bool, bool]
    traits: NodeTraits
    item_input: tuple[str, ...]
    debug: bool
    """Trace snapshots for this operator (``debug`` on it, else the config root's)."""
    position: int
    """Its index in its pipeline's steps (set by the engine)."""
    slot: int
    """Its index in the engine's ``EngineStats`` (set by the engine)."""

    def violations(self, out: OperatorOutput) -> list[str]:
        """Output methods this kind must not use (empty when the output is allowed)."""
        common, item, add, remove, order = self.rules
        # The usual case, checked with plain attribute reads: nothing forbidden used.
        if (
            (common or not out.common_writes)
            and (item or not (out.item_writes or out.column_writes))
            and (add or not out.added_count)
            and (remove or not out.removal)
            and (order or out.item_order is None)
        ):
            return _NONE
        return [
            m
            for m, used, ok in zip(_METHODS, out.used(), self.rules, strict=True)
            if used and not ok
        ]


def _check_data_parallel(cfg: OperatorConfig, schema: OperatorSchema, op: Operator) -> int:
    n = cfg.data_parallel or 1
    name = cfg.name
    if n < 0:
        raise ValidationError(
            f'pine: validation error: operator "{name}": data_parallel must be >= 1, got {n}'
        )
    if n > 1:
        if schema.kind != "transform":
            raise ValidationError(
                f'pine: validation error: operator "{name}": data_parallel={n} is only '
                f"supported for Transform operators, got {schema.kind.capitalize()}"
            )
        if cfg.common_output:
            raise ValidationError(
                f'pine: validation error: operator "{name}": data_parallel={n} requires '
                "empty $metadata.common_output for Transform operators"
            )
        if not op.concurrent_safe:
            raise ValidationError(
                f'pine: validation error: operator "{name}": data_parallel={n} requires the '
                "operator to implement ConcurrentSafe interface "
                f'(type "{cfg.type_name}" does not)'
            )
    return n


def _traits(cfg: OperatorConfig, schema: OperatorSchema, op: Operator) -> NodeTraits:
    additive = cfg.additive_writes_row_set or op.additive_writes_row_set or schema.kind == "recall"
    mutates = cfg.mutates_row_set or op.mutates_row_set
    if additive and mutates:
        raise RegistryError(
            f'pine: registry error [{cfg.type_name}]: operator "{cfg.name}": '
            "AdditiveWritesRowSet and MutatesRowSet are mutually exclusive"
        )
    return NodeTraits(
        consumes_row_set=cfg.consumes_row_set or op.consumes_row_set,
        mutates_row_set=mutates,
        additive_writes_row_set=additive,
    )


def compile_step(cfg: OperatorConfig, registry: OperatorRegistry) -> Step:
    """Build the operator of ``cfg`` and precompute its request-path plan."""
    hidden = set(cfg.skip) | set(cfg.common_input_skip) | set(cfg.common_input_template)
    visible = tuple(f for f in cfg.common_input if f not in hidden)
    meta = Metadata(visible, cfg.common_output, cfg.item_input, cfg.item_output)
    op, schema = build_operator(cfg.type_name, cfg.params, meta, name=cfg.name, registry=registry)
    step = Step()
    step.name = cfg.name
    step.type_name = cfg.type_name
    step.kind = schema.kind
    step.op = op
    step.blocking = schema.blocking
    step.data_parallel = _check_data_parallel(cfg, schema, op)
    step.execute = (
        op.execute
        if step.data_parallel == 1
        else ShardedExecute(cfg.name, op.execute, step.data_parallel)
    )
    step.traits = _traits(cfg, schema, op)
    step.recall = cfg.recall or schema.kind == "recall"
    step.skip = cfg.skip
    step.item_input = tuple(cfg.item_input)
    step.debug = False
    step.slot = 0
    step.position = 0
    step.rules = KIND_RULES[schema.kind]
    step.templated = plan_templates(cfg.name, schema, cfg.params)

    strict_common = set(cfg.strict_common)
    defaulted: list[tuple[str, Any]] = []
    strict: list[str] = []
    nullable: list[str] = []
    for f in visible:
        if f in cfg.common_defaults:
            defaulted.append((f, cfg.common_defaults[f]))
        elif f in strict_common:
            strict.append(f)
        else:
            nullable.append(f)
    step.common_strict, step.common_defaulted = tuple(strict), tuple(defaulted)
    step.common_nullable = tuple(nullable)
    step.needs_common = bool(visible)

    strict_item = set(cfg.strict_item)
    step.item_strict = tuple(
        f for f in cfg.item_input if f not in cfg.item_defaults and f in strict_item
    )
    step.item_nullable = tuple(
        f for f in cfg.item_input if f not in cfg.item_defaults and f not in strict_item
    )
    defaults = {f: cfg.item_defaults[f] for f in cfg.item_input if f in cfg.item_defaults}
    step.item_defaults = defaults if defaults else _EMPTY
    return step
