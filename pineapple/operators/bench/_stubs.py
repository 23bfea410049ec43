"""The benchmark stub operators of the public engines' realistic benchmark configs.

They stand in for business operators (a MySQL feed recall, Redis reads,
hydration, DataHub writes) with fixed, deterministic outputs and a
simulated latency drawn from each operator's ``bench_profile`` (see
:mod:`._latency`). They are registered only in the benchmark registry
(:func:`pineapple.operators.bench.bench_operator_registry`), never in the
default one: our real ``recall_feed_data`` keeps its name there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from ..._context import Context
from ..._params import ParamSpec, ParamType
from ...engine import Operator, OperatorInput, OperatorOutput, OperatorSchema
from ..recall_static import RecallStatic
from ..reorder_topn_boost import ReorderTopnBoost
from ._latency import LatencySampler, parse_bench_profile
from ._resources import FEED_ITEMS, feed_items

__all__ = ["STUBS"]

_MAX_FEED_ITEMS = 1_000_000
"""Most items one stub recall may add (``bench_item_count`` above it is refused)."""

_PROFILE = ParamSpec(
    type="any",
    description="Latency profile: {p50: [mean, max], p99: [mean, max], type: cpu|io} in ms.",
)
_IGNORED = "Accepted for config compatibility; ignored by the stub."


class _Stub(Operator):
    """A stub: its ``work`` and then one sampled latency (when enabled)."""

    latency_enabled: ClassVar[bool] = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.latency: LatencySampler | None = (
            parse_bench_profile(params.get("bench_profile")) if self.latency_enabled else None
        )

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        self.work(inp, out)
        if self.latency is not None:
            self.latency.apply(ctx, self.name)

    def work(self, inp: OperatorInput, out: OperatorOutput) -> None:
        """The stub's deterministic output."""


_StubT = TypeVar("_StubT", bound=_Stub)

_STUBS: list[tuple[OperatorSchema, type[_Stub]]] = []


def _schema(name: str, kind: Any, what: str, **params: ParamSpec) -> OperatorSchema:
    return OperatorSchema(
        name=name,
        kind=kind,
        description=f"Benchmark stub: {what}",
        params={**params, "bench_profile": _PROFILE},
        blocking=True,  # it sleeps or computes for its sampled latency
    )


def _stub(
    name: str, kind: Any, what: str, **params: ParamSpec
) -> Callable[[type[_StubT]], type[_StubT]]:
    """Class decorator: list the class in ``STUBS`` under the schema these arguments make."""

    def add(cls: type[_StubT]) -> type[_StubT]:
        _STUBS.append((_schema(name, kind, what, **params), cls))
        return cls

    return add


def _ignored(type_: ParamType = "string") -> ParamSpec:
    return ParamSpec(type=type_, description=_IGNORED)


@_stub(
    "recall_feed_data",
    "recall",
    "adds synthetic feed items.",
    bench_item_count=ParamSpec(
        type="int", default=FEED_ITEMS, description="Number of items to add."
    ),
    resource_name=_ignored(),
)
class RecallFeedDataStub(_Stub):
    """Adds ``bench_item_count`` synthetic feed items (id, item_id, type, score, created_at).

    The items are ``recall_static``'s (compiled; its columns hold ``_source``
    already), followed by the profile's latency.
    """

    additive_writes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        count = params.get("bench_item_count", FEED_ITEMS)
        if isinstance(count, bool) or not isinstance(count, int | float):
            count = FEED_ITEMS
        if not 0 <= count <= _MAX_FEED_ITEMS:
            raise ValueError(
                f"recall_feed_data (bench stub): bench_item_count must be in "
                f"[0, {_MAX_FEED_ITEMS}], got {count!r}"
            )
        self.real = RecallStatic({"items": feed_items(int(count))})

    def prepare(self) -> None:
        self.real.name = self.name
        self.real.meta = self.meta
        self.real.prepare()

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        self.real.execute(ctx, inp, out)
        if self.latency is not None:
            self.latency.apply(ctx, self.name)


@_stub(
    "transform_redis_zrangebyscore",
    "transform",
    "an empty Redis ZRANGEBYSCORE answer.",
    resource_name=_ignored(),
    key_prefix=_ignored(),
    window_seconds=_ignored("int"),
    redis_addr=_ignored(),
    redis_password=_ignored(),
)
class TransformRedisZrangebyscoreStub(_Stub):
    """An empty impression history: ``impression_ids`` [], cache hit, length 0."""

    def work(self, inp: OperatorInput, out: OperatorOutput) -> None:
        out.set_common("impression_ids", [])
        out.set_common("impression_cache_hit", True)
        out.set_common("impression_ids_len", 0)


@_stub("transform_hydrate", "transform", "MySQL hydration.", mysql_dsn=_ignored())
class TransformHydrateStub(_Stub):
    """Writes ``creator_id = index % 1000`` to every item."""

    consumes_row_set = True

    def work(self, inp: OperatorInput, out: OperatorOutput) -> None:
        out.set_column("creator_id", [i % 1000 for i in range(len(inp))])


@_stub(
    "transform_query_blocked_creators",
    "transform",
    "a MySQL blocked-creators query.",
    mysql_dsn=_ignored(),
)
class TransformQueryBlockedCreatorsStub(_Stub):
    """Writes an empty ``blocked_creator_ids``."""

    def work(self, inp: OperatorInput, out: OperatorOutput) -> None:
        out.set_common("blocked_creator_ids", [])


@_stub(
    "filter_impression",
    "filter",
    "impression filtering (drops every fifth item).",
    min_remaining_ratio=ParamSpec(type="float", default=1.5, description=_IGNORED),
)
class FilterImpressionStub(_Stub):
    """Removes every fifth item (indices 0, 5, 10, ...)."""

    consumes_row_set = True
    mutates_row_set = True

    def work(self, inp: OperatorInput, out: OperatorOutput) -> None:
        out.remove_items(range(0, len(inp), 5))


@_stub("filter_blocked_creator", "filter", "blocked-creator filtering.")
class FilterBlockedCreatorStub(_Stub):
    """Removes nothing (no creator is blocked)."""

    consumes_row_set = True
    mutates_row_set = True


@_stub(
    "reorder_topn_boost",
    "reorder",
    "the real top-N boost plus a simulated latency.",
    size=ParamSpec(type="int", default=10, description="Number of items to boost."),
)
class ReorderTopnBoostStub(_Stub):
    """The real ``reorder_topn_boost`` followed by its profile's latency."""

    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        self.real = ReorderTopnBoost(params)

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        self.real.execute(ctx, inp, out)
        if self.latency is not None:
            self.latency.apply(ctx, self.name)


@_stub(
    "observe_datahub",
    "observe",
    "a DataHub write that drops the record.",
    resource_name=_ignored(),
    mode=_ignored(),
    key_fields=_ignored("list"),
)
class ObserveDatahubStub(_Stub):
    """Writes nothing (a DataHub producer that drops every record)."""


@_stub(
    "transform_generate_request_id",
    "transform",
    "a fixed request id.",
    prefix=ParamSpec(type="string", default="bench", description="Request id prefix."),
)
class TransformGenerateRequestIdStub(_Stub):
    """Writes the fixed ``request_id`` ``<prefix>:550e8400-e29b-41d4-a716-446655440000``."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        prefix = params.get("prefix", "bench")
        self.request_id = f"{prefix if isinstance(prefix, str) else 'bench'}:" + (
            "550e8400-e29b-41d4-a716-446655440000"
        )

    def work(self, inp: OperatorInput, out: OperatorOutput) -> None:
        out.set_common("request_id", self.request_id)


STUBS: tuple[tuple[OperatorSchema, type[_Stub]], ...] = tuple(_STUBS)
"""Every stub: (schema, class), as the public engines' ``pine_bench`` build registers them."""
