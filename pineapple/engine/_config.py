"""The unified config as the engine reads it: parsing and structural checks.

Pydantic models check the shape once, when an ``Engine`` is built; nothing
here runs on the request path. Messages follow the public Pine engines
(``pine: config error: ...``) so the shared fixtures can match them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from .._errors import ConfigError
from ..resource._config import read_root_config
from ._operator import RESERVED_KEYS

__all__ = [
    "FlowContract",
    "OperatorConfig",
    "PipelineConfig",
    "config_error",
    "default_group",
    "expand_sequence",
    "parse_config",
]


def config_error(message: str) -> ConfigError:
    """A ``ConfigError`` carrying the engines' shared ``pine: config error:`` prefix."""
    return ConfigError(f"pine: config error: {message}")


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class _MetadataModel(_Strict):
    common_input: list[str] = []
    common_input_skip: list[str] = []
    common_input_template: list[str] = []
    common_output: list[str] = []
    item_input: list[str] = []
    item_output: list[str] = []


class _OperatorModel(_Strict):
    type_name: str = ""
    metadata: _MetadataModel = pydantic.Field(default_factory=_MetadataModel, alias="$metadata")
    skip: str | list[str] | None = None
    recall: bool = False
    sources: list[str] = []
    debug: bool | None = None
    consumes_row_set: bool = False
    mutates_row_set: bool = False
    additive_writes_row_set: bool = False
    common_defaults: dict[str, Any] = {}
    item_defaults: dict[str, Any] = {}
    strict_common: list[str] = []
    strict_item: list[str] = []
    for_branch_control: bool = False
    data_parallel: int = 0


class _SubFlowModel(_Strict):
    pipeline: list[str] = []


class _ContractModel(_Strict):
    common_input: list[str] | None = None
    item_input: list[str] | None = None
    common_output: list[str] | None = None
    item_output: list[str] | None = None


class _PipelineConfigModel(_Strict):
    operators: dict[str, dict[str, Any]] | None = None
    pipeline_map: dict[str, _SubFlowModel] | None = None


class _RootModel(_Strict):
    pipeline_config: _PipelineConfigModel = pydantic.Field(default_factory=_PipelineConfigModel)
    pipeline_group: dict[str, _SubFlowModel] | None = None
    flow_contract: _ContractModel | None = None
    storage_mode: str = ""
    log_prefix: str = ""
    debug: bool = False


@dataclass(frozen=True)
class OperatorConfig:
    """One entry of ``pipeline_config.operators``: engine keys plus raw params."""

    name: str
    type_name: str
    params: dict[str, Any]
    common_input: tuple[str, ...]
    common_input_skip: tuple[str, ...]
    common_input_template: tuple[str, ...]
    common_output: tuple[str, ...]
    item_input: tuple[str, ...]
    item_output: tuple[str, ...]
    skip: tuple[str, ...]
    recall: bool
    sources: tuple[str, ...]
    debug: bool | None
    consumes_row_set: bool
    mutates_row_set: bool
    additive_writes_row_set: bool
    common_defaults: Mapping[str, Any]
    item_defaults: Mapping[str, Any]
    strict_common: tuple[str, ...]
    strict_item: tuple[str, ...]
    data_parallel: int

    def common_read_fields(self) -> tuple[str, ...]:
        """Business, skip and template common inputs, de-duplicated, in that order."""
        seen: dict[str, None] = {}
        for name in (*self.common_input, *self.common_input_skip, *self.common_input_template):
            seen.setdefault(name, None)
        return tuple(seen)


@dataclass(frozen=True)
class FlowContract:
    """``flow_contract``: request fields that must be present; response projection."""

    common_input: tuple[str, ...] = ()
    item_input: tuple[str, ...] = ()
    common_output: tuple[str, ...] = ()
    item_output: tuple[str, ...] = ()


@dataclass(frozen=True)
class PipelineConfig:
    """The parsed, structurally valid engine part of a unified config."""

    operators: dict[str, OperatorConfig]
    pipeline_map: dict[str, tuple[str, ...]]
    pipeline_group: dict[str, tuple[str, ...]]
    contract: FlowContract
    storage_mode: str = ""
    log_prefix: str = ""
    debug: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict)


def _load(data: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        return read_root_config(data)
    except ConfigError as exc:
        raise config_error(f"JSON parse error: {exc}") from None


def _shape_error(where: str, exc: pydantic.ValidationError) -> ConfigError:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg', 'invalid')}" if loc else err.get("msg", "invalid"))
    return config_error(f"{where}: {'; '.join(parts)}")


def _names(fields: list[str]) -> tuple[str, ...]:
    """Field names, interned: a row key that is the same object is found without comparing text."""
    return tuple(map(sys.intern, fields))


def _operator(name: str, raw: Any) -> OperatorConfig:
    if not isinstance(raw, Mapping):
        raise config_error(f"operator {name!r}: must be a JSON object")
    try:
        model = _OperatorModel.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise _shape_error(f'operator "{name}"', exc) from None
    skip = model.skip
    skips: tuple[str, ...] = () if not skip else (skip,) if isinstance(skip, str) else tuple(skip)
    meta = model.metadata
    return OperatorConfig(
        name=name,
        type_name=model.type_name,
        params={k: v for k, v in raw.items() if k not in RESERVED_KEYS},
        common_input=_names(meta.common_input),
        common_input_skip=_names(meta.common_input_skip),
        common_input_template=_names(meta.common_input_template),
        common_output=_names(meta.common_output),
        item_input=_names(meta.item_input),
        item_output=_names(meta.item_output),
        skip=skips,
        recall=model.recall,
        sources=tuple(model.sources),
        debug=model.debug,
        consumes_row_set=model.consumes_row_set,
        mutates_row_set=model.mutates_row_set,
        additive_writes_row_set=model.additive_writes_row_set,
        common_defaults=dict(model.common_defaults),
        item_defaults=dict(model.item_defaults),
        strict_common=tuple(model.strict_common),
        strict_item=tuple(model.strict_item),
        data_parallel=model.data_parallel,
    )


def _validate(cfg: PipelineConfig) -> None:
    ops = cfg.operators
    if not ops:
        raise config_error("pipeline_config.operators is empty")
    if not cfg.pipeline_group:
        raise config_error("pipeline_group is empty")
    for name, op in ops.items():
        if not op.type_name:
            raise config_error(f'operator "{name}": missing type_name')
    for name, op in ops.items():
        for src in op.sources:
            if src not in ops:
                raise config_error(
                    f'operator "{name}": sources references undefined operator "{src}"'
                )
    for name in ops:
        if name in cfg.pipeline_map:
            raise config_error(f'name "{name}" exists in both operators and pipeline_map')
    for name, op in ops.items():
        for skip in op.skip:
            if not skip.startswith("_"):
                raise config_error(
                    f'operator "{name}": skip field "{skip}" must start with \'_\' '
                    "(control fields are engine-internal)"
                )
    for name, op in ops.items():
        for skip in op.skip:
            if skip not in op.common_input and skip not in op.common_input_skip:
                raise config_error(
                    f'operator "{name}": skip field "{skip}" must also appear in '
                    "$metadata.common_input or $metadata.common_input_skip "
                    "to ensure correct DAG ordering"
                )


def parse_config(data: bytes | str | Mapping[str, Any]) -> PipelineConfig:
    """Parse a unified config (bytes, str or dict) and check its structure.

    Raises ``ConfigError`` naming the operator or section at fault.
    """
    raw = _load(data)
    try:
        root = _RootModel.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise _shape_error("config", exc) from None
    raw_ops = (raw.get("pipeline_config") or {}).get("operators") or {}
    operators = {name: _operator(name, op) for name, op in raw_ops.items()}
    contract = root.flow_contract or _ContractModel()
    cfg = PipelineConfig(
        operators=operators,
        pipeline_map={
            k: tuple(v.pipeline) for k, v in (root.pipeline_config.pipeline_map or {}).items()
        },
        pipeline_group={k: tuple(v.pipeline) for k, v in (root.pipeline_group or {}).items()},
        contract=FlowContract(
            common_input=tuple(contract.common_input or ()),
            item_input=tuple(contract.item_input or ()),
            common_output=tuple(contract.common_output or ()),
            item_output=tuple(contract.item_output or ()),
        ),
        storage_mode=root.storage_mode,
        log_prefix=root.log_prefix,
        debug=root.debug,
        raw=raw,
    )
    _validate(cfg)
    return cfg


def default_group(cfg: PipelineConfig) -> str:
    """The entry group: ``main``, or the only group when there is exactly one."""
    if "main" in cfg.pipeline_group:
        return "main"
    if len(cfg.pipeline_group) == 1:
        return next(iter(cfg.pipeline_group))
    raise config_error('pipeline_group must contain a "main" entry or exactly one entry')


def expand_sequence(
    cfg: PipelineConfig, group: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """Flatten a pipeline group through ``pipeline_map`` into operator names.

    ``group`` None: ``main``, or the only group when there is exactly one.
    Returns the sequence and each operator's direct parent sub-flow ("" at top).
    """
    entries = cfg.pipeline_group[default_group(cfg) if group is None else group]
    for name in cfg.operators:
        if name in cfg.pipeline_map:
            raise config_error(f'name "{name}" exists in both operators and pipeline_map')
    sequence: list[str] = []
    parents: dict[str, str] = {}
    _expand(cfg, entries, "", sequence, parents, set(), set())
    return sequence, parents


def _expand(
    cfg: PipelineConfig,
    entries: tuple[str, ...],
    parent: str,
    sequence: list[str],
    parents: dict[str, str],
    visiting: set[str],
    seen: set[str],
) -> None:
    for entry in entries:
        if entry in cfg.operators:
            if entry in seen:
                raise config_error(f'operator "{entry}" referenced more than once in pipeline tree')
            seen.add(entry)
            sequence.append(entry)
            parents[entry] = parent
        elif entry in cfg.pipeline_map:
            if entry in visiting:
                raise config_error(f'cycle detected in sub-flow expansion: "{entry}"')
            visiting.add(entry)
            _expand(cfg, cfg.pipeline_map[entry], entry, sequence, parents, visiting, seen)
            visiting.discard(entry)
        else:
            raise config_error(f'pipeline entry "{entry}" is neither an operator nor a sub-flow')
