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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mypy_extensions import mypyc_attr

from .._context import Context
from .._errors import ExecutionError, PineappleError, ValidationError
from ._answer import AnswerBytes
from ._columns import Frame
from ._config import FlowContract, PipelineConfig, default_group, expand_sequence, parse_config
from ._dag import Graph, build_graph
from ._frame import project
from ._io import OperatorInput, OperatorOutput
from ._pieces import PIECE, spans
from ._render import render_dag
from ._run import run_steps
from ._schema import OperatorRegistry, default_operator_registry
from ._stats import TIME_EVERY, TIMED_PER_SECOND, EngineStats
from ._step import Step, compile_step
from ._trace import TraceEntry

__all__ = ["Engine", "Result", "UnknownGroupError", "WrapExecute"]

WrapExecute = Callable[
    [str, str, Callable[[Context, OperatorInput, OperatorOutput], None]],
    Callable[[Context, OperatorInput, OperatorOutput], None],
]
"""``wrap_execute(name, type_name, execute)``: the callable the engine runs instead of an
operator's ``execute`` (tracing wraps each operator in a span; ``server/_tracing.py``)."""

_log = logging.getLogger("pineapple.engine")
_clock = time.perf_counter_ns


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled by mypyc: still subclassable
@dataclass(init=False)
class Result:
    """One execution's outcome: the projected response, warnings, and the error if any.

    On an ``ExecutionError`` the response is the partial result at the
    time of the failure (what the public engines return beside the error).
    Read-only: items may share their dicts (a flow without item outputs
    answers one empty dict for every item); copy what you change.
    """

    common: dict[str, Any]
    items: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    error: ExecutionError | None = None
    trace: list[TraceEntry] | None = None
    """One entry per operator that started, when the run was asked for a trace."""

    def __init__(
        self,
        common: dict[str, Any],
        items: list[dict[str, Any]],
        warnings: list[str] | None = None,
        error: ExecutionError | None = None,
        trace: list[TraceEntry] | None = None,
    ) -> None:
        # Written out (``init=False``): the dataclass's generated ``__init__``
        # would run interpreted on every execution; this one is compiled.
        self.common = common
        self.items = items
        self.warnings = [] if warnings is None else warnings
        self.error = error
        self.trace = trace

    def response(self) -> dict[str, Any]:
        """``{"common": ..., "items": [...]}``."""
        return {"common": self.common, "items": self.items}


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled by mypyc: still subclassable
class Engine:
    """A compiled Pine pipeline.

    ``Engine(config)`` accepts the unified config as bytes, str or a parsed
    dict and raises ``ConfigError``, ``RegistryError`` or ``ValidationError``
    (config-level) with the public engines' messages. The entry group is
    ``pipeline_group.main``, or the only group when there is exactly one;
    a request may name another group of the config (``execute(..., group=)``).
    ``time_every`` and ``timed_per_second`` sample the durations of
    :attr:`stats` (one run in ``time_every``, at most ``timed_per_second``
    a second, 0: no cap); ``stats=False`` counts nothing. ``wrap_execute``
    (:data:`WrapExecute`) replaces each operator's ``execute`` by what it returns,
    once, at construction (the run loop itself is the same with or without it).

    Operator types come from ``registry``; without one, from the default
    registry as it is: the engine never imports operators itself, so import
    ``pineapple.operators`` for the built-ins (or pass
    ``pineapple.builtins.operator_registry()``).

    >>> import pineapple.operators  # registers the built-in operator types
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
        time_every: int = TIME_EVERY,
        timed_per_second: int = TIMED_PER_SECOND,
        stats: bool = True,
        wrap_execute: WrapExecute | None = None,
    ) -> None:
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
                pipelines[group] = _compile_pipeline(
                    self.config, group, reg, len(pipelines), wrap_execute
                )
        except BaseException:
            for pipeline in pipelines.values():
                _close_all(pipeline.steps)
            raise
        self.stats: EngineStats = _stats_for(list(pipelines.values()), time_every, timed_per_second)
        """Per-operator counters since this engine was built (``/stats``, ``/metrics``);
        they stay at zero with ``stats=False`` (a stats-free engine, for comparisons)."""
        pipelines = {
            group: replace(p, done=self.stats.done[p.index]) for group, p in pipelines.items()
        }
        self._pipelines = pipelines
        self._tick: Callable[[], bool] | None = self.stats.tick if stats else None
        main = self._main = pipelines[self.default_group]
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

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run (its stats no longer change)."""
        return self._closed

    def operator_stats(self) -> dict[str, dict[str, int]]:
        """Counters of operators that keep their own (``operator_stats()``, e.g. Lua pools),
        by operator name; the Go server's ``/stats`` ``operator_detail``."""
        out: dict[str, dict[str, int]] = {}
        for pipeline in self._pipelines.values():
            for step in pipeline.steps:  # bounded: the config's operators
                get = getattr(step.op, "operator_stats", None)
                if get is not None and step.name not in out:
                    stats = get()
                    if stats:
                        out[step.name] = dict(stats)
        return out

    def render_dag(self, fmt: str = "dot", *, collapse: int = 0, group: str | None = None) -> str:
        """The operator graph of ``group`` (default: the default group) as ``dot`` or
        ``mermaid`` text, like the Go engine's ``RenderDAG``; ``collapse=N`` folds
        sub-flows (see :mod:`pineapple.engine._render`). Raises ``UnknownFormatError``,
        ``UnknownGroupError``, or ``ValueError`` for a negative ``collapse``."""
        if collapse < 0:
            raise ValueError(f"collapse must be a non-negative integer, got {collapse}")
        pipeline = self._main if group is None else self._pipelines.get(group)
        if pipeline is None:
            raise UnknownGroupError(str(group), self.groups)
        kinds = [s.kind for s in pipeline.steps]
        return render_dag(pipeline.graph, kinds, pipeline.parents, fmt, collapse)

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
        self,
        ctx: Context | None,
        request: Mapping[str, Any],
        group: str | None = None,
        *,
        trace: bool = False,
        max_answer_bytes: int | None = None,
    ) -> Result:
        """Like ``execute``, but an execution error is returned in the ``Result``.

        ``ValidationError`` and ``UnknownGroupError`` are still raised (there
        is no result to return). Once ``ctx.deadline`` has passed, the next
        operator does not start and the error is a
        :class:`~pineapple.DeadlineExceededError` naming it (or naming the
        operator that stopped itself with ``ctx.check_deadline``).
        ``trace=True`` fills ``Result.trace`` (one :class:`TraceEntry` per
        operator that started, in execution order). ``max_answer_bytes`` bounds
        what operators' common writes and ``fill_column`` copies add to the answer
        (about its JSON bytes, counted before each output is applied): past it the
        run stops with :class:`~pineapple.AnswerTooLargeError` naming the operator.
        """
        pipeline = self._main if group is None else self._pipelines.get(group)
        if pipeline is None:
            raise UnknownGroupError(str(group), self.groups)
        common, frame = self._admit(request)
        if ctx is None:
            ctx = Context()
        warnings: list[str] = []
        # Counting costs one call here (the sampling tick) and one after the
        # loop (none inside it: see EngineStats). Clocks are read only on timed runs
        # (one in time_every, at most timed_per_second a second) and traced runs;
        # every run goes through the one step loop (_run.run_steps).
        tick = self._tick  # None: Engine(stats=False)
        timed = tick is not None and tick() and self.stats.may_time()
        traces: list[TraceEntry] | None = [] if trace else None
        answer = AnswerBytes(max_answer_bytes) if max_answer_bytes is not None else None
        steps = pipeline.steps
        if not timed:
            walk = run_steps(steps, ctx, common, frame, warnings, None, traces, answer)
        else:  # one in time_every: durations into this thread's shard
            timer = self.stats.shard()
            started = _clock()
            walk = run_steps(steps, ctx, common, frame, warnings, timer, traces, answer)
            timer.timed_run(_clock() - started)
        error = walk.error
        if tick is not None:
            if walk.skipped is None and error is None:
                pipeline.done()
            else:
                self.stats.irregular(
                    pipeline.index, walk.end, walk.skipped, walk.failed, error is not None
                )
        frame = walk.frame
        contract = self.contract
        out_common, out_items = project(common, frame, contract.common_output, contract.item_output)
        if frame.count > PIECE:
            frame.release()
        if error is not None:
            error.result = {"common": out_common, "items": out_items}
        return Result(out_common, out_items, warnings, error, traces)

    def _admit(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], Frame]:
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
        if not isinstance(raw_items, (list, tuple)):
            raise ValidationError("pine: validation error: request.items must be an array")
        n = len(raw_items)
        for a, b in spans(n) if n > PIECE else ((0, n),):  # GIL handed over between pieces
            _admit_items(raw_items, a, b, self.contract.item_input)
        return dict(common), Frame.of_rows(list(raw_items))

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


def _admit_items(
    raw: list[Any] | tuple[Any, ...],
    start: int,
    end: int,
    item_input: tuple[str, ...],
) -> None:
    """Check ``raw[start:end]`` against the contract."""
    for i in range(start, end):
        item = raw[i]
        if not isinstance(item, dict):
            raise ValidationError(f"pine: validation error: item[{i}] must be an object")
        for f in item_input:
            if f not in item:
                raise ValidationError(
                    f'pine: validation error: item[{i}] missing required item input field "{f}"'
                )


def _nothing() -> None:
    """The counter of a pipeline before its engine's stats exist."""


@dataclass(frozen=True)
class _Pipeline:
    steps: tuple[Step, ...]
    graph: Graph
    blocking: bool
    index: int
    """Its position among the engine's pipelines (its row in ``EngineStats``)."""
    parents: dict[str, str]
    """Each operator's direct parent sub-flow ("" at the top)."""
    done: Callable[[], object] = _nothing
    """Counts one regular run of this pipeline (``EngineStats.done``; set once stats exist)."""


def _stats_for(pipelines: list[_Pipeline], time_every: int, timed_per_second: int) -> EngineStats:
    """One stats slot per operator name; each step learns its slot."""
    slots: dict[str, int] = {}
    for pipeline in pipelines:
        for step in pipeline.steps:
            step.slot = slots.setdefault(step.name, len(slots))
    return EngineStats(
        list(slots),
        [[s.slot for s in p.steps] for p in pipelines],
        time_every=time_every,
        timed_per_second=timed_per_second,
    )


def _compile_pipeline(
    cfg: PipelineConfig,
    group: str,
    reg: OperatorRegistry,
    index: int,
    wrap_execute: WrapExecute | None = None,
) -> _Pipeline:
    sequence, parents = expand_sequence(cfg, group)
    _check_sources_order(sequence, cfg)
    steps: list[Step] = []
    try:
        for name in sequence:
            step = compile_step(cfg.operators[name], reg)
            debug = cfg.operators[name].debug
            step.debug = cfg.debug if debug is None else debug
            step.position = len(steps)
            if wrap_execute is not None:
                step.execute = wrap_execute(step.name, step.type_name, step.execute)
            steps.append(step)
    except BaseException:
        _close_all(steps)
        raise
    graph = build_graph([cfg.operators[s.name] for s in steps], [s.traits for s in steps])
    return _Pipeline(tuple(steps), graph, any(s.blocking for s in steps), index, parents)


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
