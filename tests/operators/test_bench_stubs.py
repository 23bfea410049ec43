"""The benchmark stubs (``pineapple.operators.bench``): outputs, latency, bounds."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from pineapple import Context, DeadlineExceededError, RegistryError, resource
from pineapple.engine import OperatorInput, OperatorOutput, build_operator
from pineapple.operators.bench import (
    FEED_ITEMS,
    STUB_NAMES,
    STUB_RESOURCE_NAMES,
    LatencySampler,
    bench_operator_registry,
    bench_resource_registry,
    parse_bench_profile,
)
from pineapple.resource.lowlevel import default_registry

IO = {"p50": [1.0, 1.5], "p99": [5.0, 7.0], "type": "io"}


def _run(type_name: str, params: dict[str, Any], items: list[Any], latency: bool = False) -> Any:
    reg = bench_operator_registry(latency=latency)
    op, _ = build_operator(type_name, params, {}, registry=reg)
    out = OperatorOutput()
    op.execute(Context(), OperatorInput({}, items), out)
    return op, out


def _run_on(op: Any) -> list[dict[str, Any]]:
    """The items ``op`` adds on one more request."""
    out = OperatorOutput()
    op.execute(Context(), OperatorInput({}, []), out)
    return list(out.added_items or ())


def test_the_nine_go_stubs_are_provided() -> None:
    assert STUB_NAMES == (
        "filter_blocked_creator",
        "filter_impression",
        "observe_datahub",
        "recall_feed_data",
        "reorder_topn_boost",
        "transform_generate_request_id",
        "transform_hydrate",
        "transform_query_blocked_creators",
        "transform_redis_zrangebyscore",
    )


def test_recall_adds_the_synthetic_feed() -> None:
    op, out = _run("recall_feed_data", {"resource_name": "feed_data"}, [])
    assert len(out.added_items) == FEED_ITEMS
    # recall_static's items: each holds the step's _source (promised to the engine).
    assert out.added_items[1] == {
        "id": 2,
        "item_id": "10001",
        "type": 2,
        "score": 999,
        "created_at": "2026-01-01T00:00:00Z",
        "_source": op.name,
    }
    assert out.added_source == op.name and out.finite_added
    assert out.added_columns is not None  # one shape: added as columns
    assert _run_on(op) == out.added_items  # the same items on the next request
    _, out = _run("recall_feed_data", {"bench_item_count": 4}, [])
    assert [row["id"] for row in out.added_items] == [1, 2, 3, 4]


def test_the_two_go_resource_stubs_are_provided_over_the_built_in_types() -> None:
    assert STUB_RESOURCE_NAMES == ("datahub_producer", "feed_data")
    reg = bench_resource_registry()
    for name in STUB_RESOURCE_NAMES:
        schema = reg.get(name)
        assert schema is not None and schema.description.startswith("Benchmark stub")
    builtin = {s.name for s in default_registry().all()}
    assert {"static", "redis_connection"} <= builtin
    assert builtin | set(STUB_RESOURCE_NAMES) == {s.name for s in reg.all()}
    real = default_registry().get("feed_data")  # the default registry keeps the real one
    assert real is not None and not real.description.startswith("Benchmark stub")
    assert default_registry().get("datahub_producer") is None


def test_resource_stubs_load_the_realistic_resource_config() -> None:
    config = {
        "resource_config": {
            "feed_data": {
                "type": "feed_data",
                "interval": 600,
                "params": {"mysql_dsn": "bench:bench@tcp(127.0.0.1:3306)/bench"},
            },
            "dh": {
                "type": "datahub_producer",
                "interval": 0,
                "params": {"ak_id": "x", "ak_secret": "hunter2", "max_retry": 3, "topic": "t"},
            },
        }
    }
    manager = resource.Manager(bench_resource_registry())
    manager.load_from_root_config(config)
    manager.start()
    try:
        for name, expected in (("dh", "nop"), ("feed_data", None)):
            handle = manager.get(name)
            assert handle is not None
            with handle as value:
                if expected is not None:
                    assert value == expected
                else:  # the recall stub's feed, as the Go stub fetches it
                    assert len(value) == FEED_ITEMS
                    assert value[0] == {
                        "id": 1,
                        "item_id": "10000",
                        "type": 1,
                        "score": 1000,
                        "created_at": "2026-01-01T00:00:00Z",
                    }
        assert "hunter2" not in repr([s.summary for s in manager.status()])
    finally:
        manager.stop()


def test_recall_item_count_is_bounded() -> None:
    with pytest.raises(RegistryError, match="bench_item_count must be in"):
        _run("recall_feed_data", {"bench_item_count": 10**9}, [])


def test_filters_hydrate_and_request_id() -> None:
    items = [{"id": i} for i in range(11)]
    _, out = _run("filter_impression", {}, items)
    assert sorted(out.removed) == [0, 5, 10]
    _, out = _run("transform_hydrate", {}, items)
    assert [out.item_write_map()[i]["creator_id"] for i in range(11)] == list(range(11))
    _, out = _run("transform_generate_request_id", {"prefix": "p"}, [])
    assert out.common_writes == {"request_id": "p:550e8400-e29b-41d4-a716-446655440000"}


def test_latency_off_registry_builds_stubs_without_a_sampler() -> None:
    op, _ = _run("observe_datahub", {"bench_profile": IO}, [])
    assert op.latency is None
    op, _ = _run("observe_datahub", {"bench_profile": IO}, [], latency=True)
    assert isinstance(op.latency, LatencySampler)


@pytest.mark.parametrize(
    "raw",
    [None, "io", [1, 2], {}, {"p50": [0, 0], "p99": [0, 0]}, {"p50": "x", "type": "io"}],
)
def test_profiles_asking_for_no_latency(raw: Any) -> None:
    assert parse_bench_profile(raw) is None


def test_seeded_samples_are_reproducible_and_capped() -> None:
    profile = {"p50": [0.5, 0.8], "p99": [6.6, 134.0], "type": "io"}
    a = parse_bench_profile(profile, random.Random(7))
    b = parse_bench_profile(profile, random.Random(7))
    assert a is not None and b is not None
    draws = [a.sample_ms() for _ in range(2000)]
    assert draws == [b.sample_ms() for _ in range(2000)]
    assert all(0 < d <= a.cap_ms for d in draws)
    assert a.cap_ms == pytest.approx(1.5 * 134.0)
    median = sorted(draws)[1000]
    assert 0.5 <= median <= 0.8 * 1.5  # near p50, whatever the jitter


@pytest.mark.parametrize("kind", ["io", "cpu"])
def test_latency_stops_at_the_deadline_naming_the_operator(kind: str) -> None:
    # A profile of ~100 s: the request's 50 ms deadline must cut it short.
    sampler = parse_bench_profile({"p50": [1e5, 1e5], "p99": [2e5, 2e5], "type": kind})
    assert sampler is not None
    ctx = Context().with_timeout(0.05)
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError) as info:
        sampler.apply(ctx, "slow_stub")
    assert info.value.operator == "slow_stub"
    assert time.monotonic() - start < 5.0  # generous: 100x the deadline


def test_latency_is_spent() -> None:
    sampler = parse_bench_profile({"p50": [5.0, 5.0], "p99": [5.0, 5.0], "type": "cpu"})
    assert sampler is not None
    spent = sampler.apply(Context(), "cpu_stub")
    assert spent >= 1.0  # log-normal, median 5 ms, sigma 0.3: below 1 ms is 5.4 sigma away
