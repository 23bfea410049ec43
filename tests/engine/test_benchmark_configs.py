"""``Engine(config).execute(ctx, request)`` on every benchmark fixture pair of built-in operators.

Pairs that use an operator type that is not registered (the business
operators of the ``realistic_*`` configs) are skipped with the type names.
"""

from __future__ import annotations

from typing import Any

import pytest

import pineapple.operators  # noqa: F401  (registers the built-ins)
from pineapple import Context
from pineapple.engine import Engine, default_operator_registry

from ..conformance._fixtures import fixtures_dir, operator_types


def _pairs() -> list[Any]:
    base = fixtures_dir()
    if base is None or not (base / "benchmarks").is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="PINE_FIXTURES_DIR absent"))]
    pairs = []
    for cfg in sorted((base / "benchmarks").glob("*_config.json")):
        req = cfg.with_name(cfg.name.replace("_config.json", "_request.json"))
        pairs.append(
            pytest.param(cfg.read_bytes(), req.read_bytes(), id=cfg.name[: -len("_config.json")])
        )
    return pairs


@pytest.mark.parametrize(("config", "request_body"), _pairs())
def test_benchmark_pair_executes(config: bytes, request_body: bytes) -> None:
    import orjson

    parsed = orjson.loads(config)
    unknown = sorted(
        t for t in operator_types(parsed) if default_operator_registry().get(t) is None
    )
    if unknown:
        pytest.skip(f"uses operator types that are not built in: {', '.join(unknown)}")
    request = orjson.loads(request_body)
    with Engine(config) as engine:
        first = engine.execute(Context(), request)
        assert engine.execute(Context(), request) == first
    assert isinstance(first["common"], dict) and isinstance(first["items"], list)
