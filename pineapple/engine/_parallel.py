"""``data_parallel``: run a transform on shards of the items and merge the outputs.

Shards run one after the other in the calling thread (results are identical
to a threaded run, and CPU-bound Python gains nothing from threads); the
offsets of the merged writes refer to the whole item list. A step with
``data_parallel`` > 1 has a :class:`ShardedExecute` as its ``execute`` (see
``compile_step``), so the run loops call every step the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from .._context import Context
from ._io import OperatorInput, OperatorOutput

__all__ = ["ShardError", "ShardedExecute"]


class ShardError(Exception):
    """A shard wrote something a sharded transform must not write."""


class ShardedExecute:
    """A ``data_parallel`` step's ``execute``: the operator's own on ``shards`` slices of
    the items, the outputs merged into the one the caller passes."""

    __slots__ = ("execute", "name", "shards")

    def __init__(
        self,
        name: str,
        execute: Callable[[Context, OperatorInput, OperatorOutput], None],
        shards: int,
    ) -> None:
        self.name = name
        self.execute = execute
        self.shards = shards

    def __call__(self, ctx: Context, inp: OperatorInput, merged: OperatorOutput) -> None:
        execute = self.execute
        frame = inp.frame
        total = frame.count
        n = min(self.shards, total)
        if n <= 1:
            execute(ctx, inp, merged)
            return
        base, rem = divmod(total, n)
        start = 0
        for k in range(n):  # bounded: the shard count
            size = base + (1 if k < rem else 0)
            shard = OperatorInput(
                inp.common,
                templated=inp.templated,
                item_defaults=inp.item_defaults,
                frame=frame.slice(start, start + size),
            )
            out = OperatorOutput()
            execute(ctx, shard, out)
            _merge(self.name, merged, out, start)
            start += size


def _merge(name: str, merged: OperatorOutput, out: OperatorOutput, offset: int) -> None:
    if out.added_count or out.item_order is not None or out.common_writes:
        raise ShardError(
            f'pine: panic in operator "{name}": data_parallel shard emitted added_items, '
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
