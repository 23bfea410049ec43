"""``compile_flow``: check a flow, then turn it into the unified JSON config.

Every check runs before anything is emitted, and all problems are reported
together. The output depends only on the flow (and the create time): the same
flow compiles to the same bytes.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pineapple
from pineapple import builtins
from pineapple.engine import OperatorRegistry
from pineapple.resource import Registry

from ._branch import BranchCall, resolve_skip
from ._condition import control_function, control_script
from ._errors import ValidationError
from ._flow import Flow, SubFlow, SubFlowEntry, set_compiler
from ._ir import CompiledOperator
from ._recorder import OperatorCall
from ._validate import TEMPLATE_MARKER, check_flow

__all__ = ["compile_flow", "compile_json", "dumps", "flatten"]

_RESERVED_KEYS = frozenset(
    {
        "type_name",
        "$metadata",
        "$code_info",
        "sources",
        "skip",
        "common_defaults",
        "item_defaults",
        "strict_common",
        "strict_item",
        "for_branch_control",
        "recall",
        "debug",
        "data_parallel",
        "consumes_row_set",
        "mutates_row_set",
        "additive_writes_row_set",
    }
)


@dataclass
class _Tree:
    operators: list[CompiledOperator]
    pipelines: dict[str, list[str | int]]  # path -> op indices (int) and sub-flow paths (str)
    open_blocks: list[str]


def _control_call(branch: BranchCall, path: str) -> OperatorCall:
    prior = [f.resolve(path) for f in branch.prior]
    return OperatorCall(
        type_name="transform_by_lua",
        params={
            "lua_script": control_script(branch.kind, branch.expression, prior),
            "function_for_item": "",
            "function_for_common": control_function(),
        },
        name=branch.field.operator_name(path),
        common_input=list(dict.fromkeys([*prior, *branch.fields])),
        common_output=[branch.field.resolve(path)],
        code_info=branch.code_info(),
    )


def _walk(
    node: Flow | SubFlow, path: str, inherited: tuple[str, ...], tree: _Tree, seen: set[int]
) -> None:
    seen.add(id(node))
    tree.open_blocks += node.open_blocks()
    entries: list[str | int] = []
    tree.pipelines[path] = entries
    for child in node.children:
        if isinstance(child, SubFlowEntry):
            if id(child.flow) in seen:
                raise ValidationError(f"sub-flow {child.flow.name!r} is placed more than once")
            sub_path = f"{path}/{child.flow.name}" if path else child.flow.name
            if sub_path in tree.pipelines:
                raise ValidationError(f"sub-flow path {sub_path!r} is used twice")
            entries.append(sub_path)
            _walk(child.flow, sub_path, inherited + resolve_skip(child.skip, path), tree, seen)
            continue
        # Apple's order: the sub-flow's own guards first, then the inherited ones.
        skip = list(dict.fromkeys(resolve_skip(child.skip, path) + inherited))
        entries.append(len(tree.operators))
        if isinstance(child, BranchCall):
            call = _control_call(child, path)
            op = CompiledOperator(call.name or "", call, path, skip, True, child)
        else:
            op = CompiledOperator(child.name or "", child, path, skip, child.name is not None)
        tree.operators.append(op)


def _auto_name(op: CompiledOperator) -> str:
    call = op.call
    semantic = [
        call.type_name,
        call.params,
        call.common_input,
        call.common_output,
        call.item_input,
        call.item_output,
        call.sources,
        op.skip,
        call.common_defaults,
        call.item_defaults,
        op.path,
    ]
    # The per-operator options join the hash only when set, so names of
    # operators without them stay what they were.
    options = {
        "strict_common": call.strict_common,
        "strict_item": call.strict_item,
        "data_parallel": call.data_parallel if call.data_parallel > 1 else 0,
        "debug": call.debug,
    }
    set_options = {k: v for k, v in options.items() if v}
    if set_options:
        semantic.append(set_options)
    text = json.dumps(semantic, sort_keys=True, default=repr, ensure_ascii=False)
    return f"{call.type_name}_{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def flatten(flow: Flow) -> tuple[list[CompiledOperator], dict[str, list[str]]]:
    """Operators in execution order with final names, and ``path -> pipeline`` lists.

    The path ``""`` is the flow itself (``pipeline_group.main``). Explicit
    names are kept; an explicit name used twice is a :class:`ValidationError`.
    Unnamed operators get ``<type_name>_<hash6>`` of what they do (a second
    identical one gets ``_1``, as in Apple), so inserting an operator does not rename others.
    Control operators are named ``if_1``, ``elif_2``, ``else_3`` (in a
    sub-flow, prefixed by its path: ``a::b::if_1``).
    """
    operators, pipelines, _ = _flatten(flow)
    return operators, pipelines


def _flatten(flow: Flow) -> tuple[list[CompiledOperator], dict[str, list[str]], list[str]]:
    tree = _Tree([], {}, [])
    _walk(flow, "", (), tree, set())
    taken: set[str] = set()
    for op in tree.operators:
        if op.explicit:
            if op.name in taken:
                raise ValidationError(f"duplicate operator name {op.name!r}")
            taken.add(op.name)
    for op in tree.operators:
        if not op.explicit:
            base = candidate = _auto_name(op)
            n = 0
            while candidate in taken:
                n += 1
                candidate = f"{base}_{n}"
            op.name = candidate
            taken.add(candidate)
    pipelines = {
        path: [e if isinstance(e, str) else tree.operators[e].name for e in entries]
        for path, entries in tree.pipelines.items()
    }
    return tree.operators, pipelines, tree.open_blocks


def template_fields(params: Mapping[str, Any]) -> list[str]:
    """The common fields named by ``{{field}}`` markers in string params, in order."""
    found: list[str] = []
    for value in params.values():
        if isinstance(value, str):
            found += [f for f in TEMPLATE_MARKER.findall(value) if f not in found]
    return found


def _operator_entry(op: CompiledOperator) -> dict[str, Any]:
    call = op.call
    metadata: dict[str, Any] = {
        "common_input": list(call.common_input),
        "common_output": list(call.common_output),
        "item_input": list(call.item_input),
        "item_output": list(call.item_output),
    }
    # Fields the engine must order before this operator but that the operator
    # itself does not read: skip guards and {{field}} template sources.
    skip_reads = [f for f in op.skip if f not in call.common_input]
    if skip_reads:
        metadata["common_input_skip"] = skip_reads
    template_reads = [f for f in template_fields(call.params) if f not in call.common_input]
    if template_reads:
        metadata["common_input_template"] = template_reads
    entry: dict[str, Any] = {"type_name": call.type_name, "$metadata": metadata}
    if call.code_info:
        entry["$code_info"] = call.code_info
    for marker in call.markers:
        entry[marker] = True
    if call.sources is not None:
        entry["sources"] = list(call.sources)
    if op.skip:
        entry["skip"] = list(op.skip)
    if op.branch is not None:
        entry["for_branch_control"] = True
    if call.common_defaults is not None:
        entry["common_defaults"] = dict(call.common_defaults)
    if call.item_defaults is not None:
        entry["item_defaults"] = dict(call.item_defaults)
    if call.strict_common:
        entry["strict_common"] = list(call.strict_common)
    if call.strict_item:
        entry["strict_item"] = list(call.strict_item)
    if call.debug:
        entry["debug"] = True
    if call.data_parallel > 1:
        entry["data_parallel"] = call.data_parallel
    entry.update(call.params)
    return entry


def _iter_resources(flow: Flow) -> Iterator[tuple[str, dict[str, Any]]]:
    for decl in flow.resources:
        entry: dict[str, Any] = {
            "type": decl.resource_type,
            "interval": decl.interval,
            "params": dict(decl.params),
        }
        if decl.validate is not None:
            entry["validate"] = dict(decl.validate)
        if decl.keep_previous:
            entry["keep_previous"] = True
        if decl.replay:
            entry["replay"] = True
        yield decl.name, entry


def _create_time(at: datetime.datetime | None) -> str:
    moment = at or datetime.datetime.now(datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compile_flow(
    flow: Flow,
    *,
    operators: OperatorRegistry | None = None,
    resources: Registry | None = None,
    created_at: datetime.datetime | None = None,
) -> dict[str, Any]:
    """Check ``flow`` and return its unified config as a dict.

    Checks (all problems reported in one :class:`dsl.ValidationError`): the
    flow has operators; operator names are unique and no name is also a
    sub-flow path; every operator type is registered and its params fit its
    schema; every ``resource_name`` is declared with ``flow.resource``; every
    resource type is registered and its params fit; ``sources`` name earlier
    operators; skip fields start with ``_``; params are JSON values and do not
    use reserved keys; every ``if_`` block is closed; every field a branch
    condition reads is in the flow's ``common_input`` or written by an earlier
    operator; no other operator writes a control field (``_if_1``...).
    ``operators``/``resources``: the registries to check
    against (default: :mod:`pineapple.builtins`' registries: the built-in types
    and whatever plugins registered).
    """
    if not isinstance(flow, Flow):
        raise ValidationError(f"compile_flow takes a Flow, got {type(flow).__name__}")
    compiled, pipelines, open_blocks = _flatten(flow)
    check_flow(
        flow,
        compiled,
        pipelines,
        open_blocks=open_blocks,
        operators=operators or builtins.operator_registry(),
        resources=resources or builtins.resource_registry(),
        reserved_keys=_RESERVED_KEYS,
    )
    config: dict[str, Any] = {
        "_PINEAPPLE_VERSION": pineapple.__version__,
        "_PINEAPPLE_CREATE_TIME": _create_time(created_at),
        "pipeline_config": {
            "operators": {op.name: _operator_entry(op) for op in compiled},
            "pipeline_map": {
                path: {"pipeline": names} for path, names in pipelines.items() if path
            },
        },
        "pipeline_group": {"main": {"pipeline": pipelines[""]}},
        "flow_contract": {
            "common_input": list(flow.common_input),
            "item_input": list(flow.item_input),
            "common_output": list(flow.common_output),
            "item_output": list(flow.item_output),
        },
    }
    if flow.storage_mode:
        config["storage_mode"] = flow.storage_mode
    if flow.log_prefix:
        config["log_prefix"] = flow.log_prefix
    if flow.debug:
        config["debug"] = True
    resource_config = dict(_iter_resources(flow))
    if resource_config:
        config["resource_config"] = resource_config
    return config


def dumps(config: Mapping[str, Any]) -> str:
    """The JSON text of a compiled config: 2-space indent, UTF-8 kept, trailing newline."""
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"


def compile_json(
    flow: Flow,
    *,
    operators: OperatorRegistry | None = None,
    resources: Registry | None = None,
    created_at: datetime.datetime | None = None,
) -> str:
    """:func:`compile_flow`, as JSON text (what ``pineapple compile`` writes)."""
    return dumps(
        compile_flow(flow, operators=operators, resources=resources, created_at=created_at)
    )


set_compiler(compile_flow, compile_json)
