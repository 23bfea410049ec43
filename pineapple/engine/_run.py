"""Running a pipeline's steps over one request's frame: the one step loop.

``run_steps`` is the request path of every run: the operators in order.
A plain run passes neither a shard nor a trace list and reads no clock
inside the loop (one ``observed`` test per operator); the runs that are
timed (one in ``EngineStats.time_every`` per thread) or traced pass them and
get a clock read around every operator. It returns a :class:`Walk`; the
engine counts it once per run, after the loop (see ``EngineStats``), so the
per-operator cost of counting is zero.

The loop is bounded by the pipeline's length; the deadline is checked
before every operator (one clock read each when the context has one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, final

from .._context import Context
from .._errors import AnswerTooLargeError, DeadlineExceededError, ExecutionError
from ._answer import AnswerBytes
from ._columns import Frame
from ._frame import FrameError, apply_output, step_input
from ._io import OperatorInput, OperatorOutput
from ._parallel import ShardError
from ._pieces import PIECE, batches, release
from ._step import Step
from ._trace import TraceEntry, snapshot_input, snapshot_output

if TYPE_CHECKING:
    from ._stats import Shard

__all__ = [
    "Walk",
    "deadline_error",
    "failure_error",
    "release_output",
    "run_steps",
    "skip_step",
    "violation_error",
    "wrap_error",
]

_monotonic = time.monotonic
_clock = time.perf_counter_ns
_NO_OUTPUT = OperatorOutput()  # returned beside an error, never read


@final
class Walk:
    """What one walk over the steps did (read by the engine's counters).

    A plain class: compiled, it is built without an interpreted ``__new__``
    (a ``NamedTuple``'s is), once per run.
    """

    __slots__ = ("end", "error", "failed", "frame", "skipped")

    def __init__(
        self,
        frame: Frame,
        error: ExecutionError | None,
        end: int,
        skipped: list[int] | None,
        failed: int,
    ) -> None:
        self.frame = frame
        self.error = error
        self.end = end
        """Steps processed: skipped, executed or failed (the failed one included)."""
        self.skipped = skipped
        """Slots of the skipped steps, or None when none was skipped."""
        self.failed = failed
        """The slot of the step that started and failed, or -1 (none, or a deadline before it)."""


def run_steps(
    steps: tuple[Step, ...],
    ctx: Context,
    common: dict[str, Any],
    frame: Frame,
    warnings: list[str],
    shard: Shard | None = None,
    traces: list[TraceEntry] | None = None,
    answer: AnswerBytes | None = None,
) -> Walk:
    """The engine's run loop; every operator is timed into ``shard`` (when given) and
    traced into ``traces`` (when given; snapshots for ``debug`` operators); what the
    operators' writes add to the answer is counted against ``answer`` (when given)."""
    observed = shard is not None or traces is not None
    skipped: list[int] | None = None
    deadline = ctx.deadline
    started = 0
    for step in steps:  # bounded: the pipeline's length
        if step.skip and skip_step(step, common):
            if skipped is None:
                skipped = []
            skipped.append(step.slot)
            if traces is not None:
                traces.append(TraceEntry(step.name, 0, skipped=True))
            continue
        if deadline is not None and _monotonic() >= deadline:
            return Walk(frame, deadline_error(step.name), step.position, skipped, -1)
        if observed:
            started = _clock()
        snap_in = None
        error: ExecutionError | None = None
        out = _NO_OUTPUT
        try:
            inp: OperatorInput = step_input(step, common, frame)
        except (FrameError, ValueError) as refused:  # one name per clause: mypyc types each
            error = wrap_error(step, refused)
        else:
            if traces is not None and step.debug:
                snap_in = snapshot_input(inp, step.item_input)
            out = OperatorOutput()
            try:
                step.execute(ctx, inp, out)
            except Exception as failed:
                error, out = failure_error(step, failed), _NO_OUTPUT
            else:
                if step.violations(out):
                    error = violation_error(step, out)
        if observed:
            took = _clock() - started
            if shard is not None:
                shard.timed(step.slot, took)
            if traces is not None:
                snap_out = snapshot_output(out) if step.debug and error is None else None
                traces.append(TraceEntry(step.name, took, False, snap_in, snap_out))
        if error is not None:
            return Walk(frame, error, step.position + 1, skipped, step.slot)
        if out.warning is not None:
            warnings.append(f'operator "{step.name}": {out.warning}')
        try:
            apply_output(step, out, common, frame, answer)
        except FrameError as unapplied:
            return Walk(frame, wrap_error(step, unapplied), step.position + 1, skipped, step.slot)
        except AnswerTooLargeError as too_large:  # nothing of ``out`` was applied
            return Walk(frame, too_large, step.position + 1, skipped, step.slot)
        if frame.count > PIECE:
            release_output(out)
    return Walk(frame, None, len(steps), skipped, -1)


def release_output(out: OperatorOutput) -> None:
    """Free a large request's applied removals in pieces.

    They are the engine's (what is handed to the output belongs to the
    engine; a list given to ``remove_items`` is copied): freed in one call,
    280,000 indices hold the GIL for 10 to 40 ms. An applied order is the
    frame's own after ``Frame.keep`` (it frees it with its columns,
    ``Frame.release``).
    """
    removal = out.removal
    if isinstance(removal, set) and len(removal) > PIECE:
        parts = list(batches(removal))
        removal.clear()
        release(parts, 1)
    elif isinstance(removal, list) and len(removal) > PIECE:
        release(removal)


def deadline_error(operator: str) -> DeadlineExceededError:
    """The error of a run whose deadline passed before (or inside) ``operator``."""
    return DeadlineExceededError(f'deadline exceeded in operator "{operator}"', operator=operator)


def failure_error(step: Step, exc: Exception) -> ExecutionError:
    """The error of an operator that raised ``exc``."""
    if isinstance(exc, ShardError):
        error = ExecutionError(str(exc), operator=step.name)
        error.__cause__ = exc
        return error
    if isinstance(exc, DeadlineExceededError):
        # Raised by the operator's own check: re-raised naming this step.
        return deadline_error(step.name) if exc.operator != step.name else exc
    return wrap_error(step, exc)


def violation_error(step: Step, out: OperatorOutput) -> ExecutionError:
    """The error of an operator whose output breaks its kind's rules."""
    return ExecutionError(
        f'pine: execution error in operator "{step.name}": type violation: '
        f"operator type {step.kind.capitalize()} must not call [{' '.join(step.violations(out))}]",
        operator=step.name,
    )


def skip_step(step: Step, common: Mapping[str, Any]) -> bool:
    """True when a ``skip`` field of ``step`` is set (not null, not false) in ``common``."""
    for f in step.skip:  # bounded: the operator's skip fields
        v = common.get(f)
        if v is not None and v is not False:
            return True
    return False


def wrap_error(step: Step, exc: BaseException) -> ExecutionError:
    """``exc`` raised around ``step``, as the execution error naming it."""
    err = ExecutionError(
        f'pine: execution error in operator "{step.name}": {exc}', operator=step.name
    )
    err.__cause__ = exc
    return err
