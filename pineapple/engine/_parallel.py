"""``data_parallel``: run a transform on shards of the items and merge the outputs.

Shards run one after the other in the calling thread (results are identical
to a threaded run, and CPU-bound Python gains nothing from threads); the
offsets of the merged writes refer to the whole item list. A step with
``data_parallel`` > 1 has ``execute_sharded`` bound as its ``execute``
(see ``compile_step``), so the run loops call every step the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._context import Context
from ._io import OperatorInput, OperatorOutput

if TYPE_CHECKING:
    from ._step import Step

__all__ = ["ShardError", "execute_sharded"]


class ShardError(Exception):
    """A shard wrote something a sharded transform must not write."""


def execute_sharded(step: Step, ctx: Context, inp: OperatorInput, merged: OperatorOutput) -> None:
    """Execute ``step``'s operator on ``step.data_parallel`` shards of ``inp``; merge into
    ``merged``."""
    execute = step.op.execute
    items = inp.items
    total = len(items)
    n = min(step.data_parallel, total)
    if n <= 1:
        execute(ctx, inp, merged)
        return
    base, rem = divmod(total, n)
    start = 0
    for k in range(n):  # bounded: step.data_parallel
        size = base + (1 if k < rem else 0)
        shard = OperatorInput(
            inp.common,
            items[start : start + size],
            templated=inp.templated,
            item_defaults=inp.item_defaults,
        )
        out = OperatorOutput()
        execute(ctx, shard, out)
        _merge(step, merged, out, start)
        start += size


def _merge(step: Step, merged: OperatorOutput, out: OperatorOutput, offset: int) -> None:
    if out.added_items or out.item_order is not None or out.common_writes:
        raise ShardError(
            f'pine: panic in operator "{step.name}": data_parallel shard emitted added_items, '
            "item_order, or common writes; only item_writes / removed_items / warnings "
            "are allowed"
        )
    if out.warning is not None:
        merged.warn(out.warning)
    for i, f, v in out.item_writes or ():
        merged.set_item(i + offset, f, v)
    for f, values in out.column_writes or ():
        for i, v in enumerate(values):
            merged.set_item(i + offset, f, v)
    if out.removed:
        merged.remove_items(i + offset for i in out.removed)
