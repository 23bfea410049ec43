"""``Engine(config).execute(ctx, request)`` on every benchmark fixture pair of built-in operators.

Pairs that use operator types that are not built in (the business
operators of the ``realistic_*`` configs) run on the benchmark registry
(:mod:`pineapple.operators.bench`: the public engines' stubs), without
their simulated latency; a type that neither has fails the pair, by name.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import pineapple.operators  # noqa: F401  (registers the built-ins)
from pineapple import Context
from pineapple.engine import Engine, OperatorRegistry, default_operator_registry
from pineapple.operators.bench import STUB_NAMES, bench_operator_registry

from ..conformance._fixtures import fixtures_absent, fixtures_dir, missing_dir_param, operator_types


def _pairs() -> list[Any]:
    base = fixtures_dir()
    if base is None or not (base / "benchmarks").is_dir():
        return [missing_dir_param(2)]
    pairs = []
    for cfg in sorted((base / "benchmarks").glob("*_config.json")):
        req = cfg.with_name(cfg.name.replace("_config.json", "_request.json"))
        pairs.append(
            pytest.param(cfg.read_bytes(), req.read_bytes(), id=cfg.name[: -len("_config.json")])
        )
    return pairs


@pytest.mark.parametrize(("config", "request_body"), _pairs())
def test_benchmark_pair_executes(config: bytes, request_body: bytes) -> None:
    parsed = orjson.loads(config)
    types = operator_types(parsed)
    registry: OperatorRegistry | None = None
    if any(default_operator_registry().get(t) is None for t in types):
        registry = bench_operator_registry(latency=False)
    unknown = sorted(t for t in types if (registry or default_operator_registry()).get(t) is None)
    assert not unknown, f"uses operator types that neither registry has: {', '.join(unknown)}"
    request = orjson.loads(request_body)
    with Engine(config, registry=registry) as engine:
        first = engine.execute(Context(), request)
        assert engine.execute(Context(), request) == first
    assert isinstance(first["common"], dict) and isinstance(first["items"], list)


def _realistic() -> list[Any]:
    return [p for p in _pairs() if p.id is not None and p.id.startswith("realistic_")]


def test_the_five_realistic_configs_run_on_the_stubs() -> None:
    pairs = _realistic()
    if not pairs:
        fixtures_absent()
    assert len(pairs) == 5
    for pair in pairs:
        config, request_body = pair.values
        with Engine(config, registry=bench_operator_registry(latency=False)) as engine:
            result = engine.run(Context(), orjson.loads(request_body))
        assert result.error is None, (pair.id, result.error)
        # The stub feed (3000 items) paginated to the request's size.
        assert len(result.items) == 10, pair.id
        assert result.common["request_id"] == "bench:550e8400-e29b-41d4-a716-446655440000"


def test_stubs_stay_out_of_the_default_registry() -> None:
    import resources  # noqa: F401  (registers the real recall_feed_data)

    real = default_operator_registry().get("recall_feed_data")
    assert real is not None and "stub" not in real.description.lower()
    for name in STUB_NAMES:
        schema = default_operator_registry().get(name)
        assert schema is None or "Benchmark stub" not in schema.description
    bench = bench_operator_registry().get("recall_feed_data")
    assert bench is not None and bench.description.startswith("Benchmark stub")
