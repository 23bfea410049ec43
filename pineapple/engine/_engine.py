"""``Engine``: an immutable, compiled pipeline that executes requests.

Construction does all the work that does not depend on a request: parse and
check the config, expand sub-flows, build every operator, compute field
specs and templated-param plans, build the dependency graph. ``execute``
then runs plain dict/list code: no pydantic, no copies beyond the request's
own rows, no threads.

Guarantees:
- An ``Engine`` is immutable after construction and safe to share between
  threads; per-request state lives in locals of ``run``. Operators must keep
  no per-request state on themselves (the engine calls ``execute`` of one
  operator instance from many threads at once).
- Operators run in the order of the expanded pipeline, which is a
  topological order of the dependency graph (every edge points forward).
- ``close`` calls every operator's ``close`` exactly once, even if some raise.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._context import Context
from .._errors import DeadlineExceededError, ExecutionError, PineappleError, ValidationError
from ._config import FlowContract, PipelineConfig, default_group, expand_sequence, parse_config
from ._dag import Graph, build_graph
from ._frame import FrameError, apply_output, build_common, check_items, project
from ._io import OperatorInput, OperatorOutput
from ._parallel import ShardError, execute_sharded
from ._pieces import PIECE, batches, release
from ._schema import OperatorRegistry, default_operator_registry
from ._step import Step, compile_step
from ._template import resolve_templates

__all__ = ["Engine", "Result", "UnknownGroupError"]

_log = logging.getLogger("pineapple.engine")
_EMPTY: Mapping[str, Any] = {}
_monotonic = time.monotonic


@dataclass
class Result:
    """One execution's outcome: the projected response, warnings, and the error if any.

    On an ``ExecutionError`` the response is the partial result at the
    time of the failure (what the public engines return beside the error).
    """

    common: dict[str, Any]
    items: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    error: ExecutionError | None = None

    def response(self) -> dict[str, Any]:
        """``{"common": ..., "items": [...]}``."""
        return {"common": self.common, "items": self.items}


class Engine:
    """A compiled Pine pipeline.

    ``Engine(config)`` accepts the unified config as bytes, str or a parsed
    dict and raises ``ConfigError``, ``RegistryError`` or ``ValidationError``
    (config-level) with the public engines' messages. The entry group is
    ``pipeline_group.main``, or the only group when there is exactly one;
    a request may name another group of the config (``execute(..., group=)``).

    >>> engine = Engine({
    ...     "pipeline_config": {"operators": {"size": {
    ...         "type_name": "transform_size",
    ...         "$metadata": {"common_output": ["n"]}}}},
    ...     "pipeline_group": {"main": {"pipeline": ["size"]}},
    ...     "flow_contract": {"common_output": ["n"]}})
    >>> engine.execute(None, {"common": {}, "items": [{"id": 1}, {"id": 2}]})
    {'common': {'n': 2}, 'items': [{}, {}]}
    """

    def __init__(
        self,
        config: bytes | str | Mapping[str, Any],
        *,
        registry: OperatorRegistry | None = None,
    ) -> None:
        if registry is None:
            _load_builtin_operators()
        reg = registry if registry is not None else default_operator_registry()
        self.config: PipelineConfig = parse_config(config)
        self.default_group: str = default_group(self.config)
        """The group a request runs when it names none: ``main``, or the only one."""
        pipelines: dict[str, _Pipeline] = {}
        try:
            # Every group is compiled up front (fail closed): a request that names
            # a group never meets a config error, and the engine stays immutable.
            for group in [
                self.default_group,
                *sorted(set(self.config.pipeline_group) - {self.default_group}),
            ]:
                pipelines[group] = _compile_pipeline(self.config, group, reg)
        except BaseException:
            for pipeline in pipelines.values():
                _close_all(pipeline.steps)
            raise
        self._pipelines = pipelines
        main = pipelines[self.default_group]
        self._steps: tuple[Step, ...] = main.steps
        self.graph: Graph = main.graph
        """The field-hazard graph of the default group."""
        self.contract: FlowContract = self.config.contract
        self.blocking: bool = any(p.blocking for p in pipelines.values())
        """True when any operator does blocking I/O (``OperatorSchema.blocking``)."""
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def groups(self) -> list[str]:
        """The pipeline groups a request may name, sorted."""
        return sorted(self._pipelines)

    @property
    def operators(self) -> list[str]:
        """Operator names in execution order."""
        return [s.name for s in self._steps]

    def execute(
        self, ctx: Context | None, request: Mapping[str, Any], group: str | None = None
    ) -> dict[str, Any]:
        """Run one request; returns ``{"common": {...}, "items": [...]}``.

        ``group`` names the pipeline group (default: :attr:`default_group`);
        an unknown one raises :class:`UnknownGroupError`. Raises
        ``ValidationError`` when the request breaks the flow contract and
        ``ExecutionError`` (``.operator``, ``.result`` = partial response,
        ``__cause__`` = the operator's exception) when an operator fails.
        """
        result = self.run(ctx, request, group)
        if result.error is not None:
            raise result.error
        return {"common": result.common, "items": result.items}

    def run(
        self, ctx: Context | None, request: Mapping[str, Any], group: str | None = None
    ) -> Result:
        """Like ``execute``, but an execution error is returned in the ``Result``.

        ``ValidationError`` and ``UnknownGroupError`` are still raised (there
        is no result to return). Once ``ctx.deadline`` has passed, the next
        operator does not start and the error is a
        :class:`~pineapple.DeadlineExceededError` naming it (or naming the
        operator that stopped itself with ``ctx.check_deadline``).
        """
        if group is None:
            steps = self._steps
        else:
            pipeline = self._pipelines.get(group)
            if pipeline is None:
                raise UnknownGroupError(group, self.groups)
            steps = pipeline.steps
        common, items = self._admit(request)
        if ctx is None:
            ctx = Context()
        warnings: list[str] = []
        error: ExecutionError | None = None
        present: dict[str, int] = {}
        # The deadline costs one read here and one clock read per operator;
        # operators with long loops check it themselves (ctx.check_deadline).
        deadline = ctx.deadline
        for step in steps:
            if step.skip and _skipped(step, common):
                continue
            if deadline is not None and _monotonic() >= deadline:
                error = _deadline_error(step.name)
                break
            try:
                view = build_common(step, common) if step.needs_common else _EMPTY
                if step.item_strict or step.item_nullable:
                    check_items(step, items, present)
                templated = resolve_templates(step.templated, common) if step.templated else _EMPTY
            except (FrameError, ValueError) as exc:
                error = _wrap(step, exc)
                break
            inp = OperatorInput(view, items, templated=templated, item_defaults=step.item_defaults)
            try:
                if step.data_parallel > 1:
                    out = execute_sharded(step, ctx, inp)
                else:
                    out = OperatorOutput()
                    step.execute(ctx, inp, out)
            except ShardError as exc:
                error = ExecutionError(str(exc), operator=step.name)
                error.__cause__ = exc
                break
            except DeadlineExceededError as exc:
                # Raised by the operator's own check: re-raised naming this step.
                error = _deadline_error(step.name) if exc.operator != step.name else exc
                break
            except Exception as exc:
                error = _wrap(step, exc)
                break
            bad = step.violations(out)
            if bad:
                error = ExecutionError(
                    f'pine: execution error in operator "{step.name}": type violation: '
                    f"operator type {step.kind.capitalize()} must not call [{' '.join(bad)}]",
                    operator=step.name,
                )
                break
            if out.warning is not None:
                warnings.append(f'operator "{step.name}": {out.warning}')
            try:
                applied = apply_output(step, out, common, items, present)
            except FrameError as exc:
                error = _wrap(step, exc)
                break
            if len(items) > PIECE:
                _release_frame(items, applied, out)
            items = applied
        contract = self.contract
        response = project(common, items, contract.common_output, contract.item_output)
        if len(items) > PIECE:
            release(items)
        if error is not None:
            error.result = response
        return Result(response["common"], response["items"], warnings, error)

    def _admit(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Check the request against the flow contract and copy it into a frame."""
        if request is None:
            raise ValidationError("pine: validation error: request must not be nil")
        common = request.get("common")
        if common is None:
            raise ValidationError("pine: validation error: request.Common must not be nil")
        if not isinstance(common, dict):
            raise ValidationError("pine: validation error: request.common must be an object")
        for f in self.contract.common_input:
            if f not in common:
                raise ValidationError(
                    f'pine: validation error: missing required common input field "{f}"'
                )
        raw_items = request.get("items") or ()
        if not isinstance(raw_items, list | tuple):
            raise ValidationError("pine: validation error: request.items must be an array")
        item_input = self.contract.item_input
        for i, item in enumerate(raw_items):
            if not isinstance(item, dict):
                raise ValidationError(f"pine: validation error: item[{i}] must be an object")
            for f in item_input:
                if f not in item:
                    raise ValidationError(
                        f'pine: validation error: item[{i}] missing required item input field "{f}"'
                    )
        return dict(common), [dict(item) for item in raw_items]

    def close(self) -> None:
        """Close every operator once (errors are logged, not raised). Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        for pipeline in self._pipelines.values():
            _close_all(pipeline.steps)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Engine({len(self._steps)} operators, blocking={self.blocking})"


class UnknownGroupError(PineappleError, LookupError):
    """A request named a pipeline group the config does not have."""

    def __init__(self, group: str, known: list[str]) -> None:
        super().__init__(f"unknown pipeline group {group!r} (groups: {', '.join(known)})")
        self.group = group


@dataclass(frozen=True)
class _Pipeline:
    steps: tuple[Step, ...]
    graph: Graph
    blocking: bool


def _compile_pipeline(cfg: PipelineConfig, group: str, reg: OperatorRegistry) -> _Pipeline:
    sequence, _ = expand_sequence(cfg, group)
    _check_sources_order(sequence, cfg)
    steps: list[Step] = []
    try:
        for name in sequence:
            steps.append(compile_step(cfg.operators[name], reg))
    except BaseException:
        _close_all(steps)
        raise
    graph = build_graph([cfg.operators[s.name] for s in steps], [s.traits for s in steps])
    return _Pipeline(tuple(steps), graph, any(s.blocking for s in steps))


def _skipped(step: Step, common: Mapping[str, Any]) -> bool:
    for f in step.skip:
        v = common.get(f)
        if v is not None and v is not False:
            return True
    return False


def _release_frame(
    old: list[dict[str, Any]], new: list[dict[str, Any]], out: OperatorOutput
) -> None:
    """Free a large frame's replaced item list and applied order/removals in pieces.

    All are the engine's (the frame is copied on entry; lists handed to the
    output belong to the engine): freed in one call each, 280,000 items hold
    the GIL for 10 to 40 ms.
    """
    if new is not old:
        release(old)
    if out.item_order is not None:
        release(out.item_order)
    removed = out.removed
    if removed is not None and len(removed) > PIECE:
        parts = list(batches(removed))
        removed.clear()
        release(parts, 1)


def _deadline_error(operator: str) -> DeadlineExceededError:
    return DeadlineExceededError(f'deadline exceeded in operator "{operator}"', operator=operator)


def _wrap(step: Step, exc: BaseException) -> ExecutionError:
    err = ExecutionError(
        f'pine: execution error in operator "{step.name}": {exc}', operator=step.name
    )
    err.__cause__ = exc
    return err


def _check_sources_order(sequence: list[str], cfg: PipelineConfig) -> None:
    seen: set[str] = set()
    for name in sequence:
        for src in cfg.operators[name].sources:
            if src not in seen:
                raise ValidationError(
                    f'pine: validation error: operator "{name}": sources references "{src}" '
                    "which is declared after the current operator (forward reference)"
                )
        seen.add(name)


def _close_all(steps: tuple[Step, ...] | list[Step]) -> None:
    for step in steps:
        try:
            step.op.close()
        except Exception:
            _log.exception('operator "%s" close failed', step.name)


_builtin_loaded = False


def _load_builtin_operators() -> None:
    """Import the built-in operators (and entry-point plugins) once."""
    global _builtin_loaded
    if not _builtin_loaded:
        import pineapple.operators  # noqa: F401  (registers at import)

        default_operator_registry().all()  # loads entry-point plugins
        _builtin_loaded = True
