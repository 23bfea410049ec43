"""``data_parallel``: run a transform on shards of the items and merge the outputs.

Shards run one after the other in the calling thread (results are identical
to a threaded run, and CPU-bound Python gains nothing from threads); the
offsets of the merged writes refer to the whole item list.
"""

from __future__ import annotations

from .._context import Context
from ._io import OperatorInput, OperatorOutput
from ._step import Step

__all__ = ["ShardError", "execute_sharded"]


class ShardError(Exception):
    """A shard wrote something a sharded transform must not write."""


def execute_sharded(step: Step, ctx: Context, inp: OperatorInput) -> OperatorOutput:
    """Execute ``step`` on ``step.data_parallel`` shards of ``inp`` and merge."""
    items = inp.items
    total = len(items)
    n = min(step.data_parallel, total)
    if n <= 1:
        out = OperatorOutput()
        step.execute(ctx, inp, out)
        return out
    base, rem = divmod(total, n)
    merged = OperatorOutput()
    start = 0
    for k in range(n):
        size = base + (1 if k < rem else 0)
        shard = OperatorInput(
            inp.common,
            items[start : start + size],
            templated=inp.templated,
            item_defaults=inp.item_defaults,
        )
        out = OperatorOutput()
        step.execute(ctx, shard, out)
        _merge(step, merged, out, start)
        start += size
    return merged


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
