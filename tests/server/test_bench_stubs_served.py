"""``pineapple serve --bench-stubs``: a realistic benchmark config serves unchanged, in
one process and with ``--workers 2`` (the ``serve`` fixture's two params), its resources
(the stub ``feed_data`` and ``datahub_producer``) loaded in every process."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from pineapple import Context
from pineapple.engine import Engine
from pineapple.operators.bench import bench_operator_registry

from ..conformance._fixtures import fixtures_absent, fixtures_dir
from .pod import Server

pytestmark = pytest.mark.e2e

FIXTURE = "realistic_for_you_calibrated"


def _pair() -> tuple[bytes, bytes]:
    base = fixtures_dir()
    if base is None or not (base / "benchmarks").is_dir():
        fixtures_absent()
    bench = base / "benchmarks"
    return (bench / f"{FIXTURE}_config.json").read_bytes(), (
        bench / f"{FIXTURE}_request.json"
    ).read_bytes()


def test_a_realistic_config_serves_on_the_stubs(serve: Callable[..., Server]) -> None:
    config, request = _pair()
    with Engine(config, registry=bench_operator_registry(latency=False)) as engine:
        expected = engine.execute(Context(), orjson.loads(request))
    # The stubs spend their latency profiles: a loaded machine must not time them out.
    server = serve(orjson.loads(config), "--bench-stubs", "--request-timeout-ms", "60000")
    for _ in range(3):  # new connections: every worker likely answers one
        with server.new_client() as client:
            answer = client.post("/execute", content=request)
        assert answer.status_code == 200, answer.text
        assert answer.json() == expected
    for name in ("feed_data", "dh_request", "dh_feature_dump", "dh_servershow"):
        status = server.http.get(f"/resources/{name}")
        assert status.status_code == 200, (name, status.text)
    assert len(expected["items"]) == 10


def test_without_the_flag_the_config_does_not_build(serve: Callable[..., Server]) -> None:
    config, _ = _pair()
    # The built-in recall_feed_data takes no bench params: the build fails, naming it.
    with pytest.raises(AssertionError, match=r"not serving .*recall_feed_data"):
        serve(orjson.loads(config))
