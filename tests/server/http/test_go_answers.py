"""Go's ``/execute`` answers, byte for byte, from a real ``pineapple serve`` in both modes.

Two public fixtures whose answers ours once spelled otherwise: a request
missing a required common field (Go: 400, as any ``pine.ValidationError``)
and a Lua error (Go's VM names the chunk ``[string "transform_by_lua"]`` and
appends a traceback of the script's frames; see ``pineapple/operators/_lua``).
The expected bytes follow Go's ``handleExecute`` and ``json.Encoder``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..._serve import Serve
from ...conformance._fixtures import fixtures_absent, fixtures_dir
from ..pod import serve_plugin

GO_ANSWERS: dict[str, tuple[int, bytes]] = {
    "errors/validation_missing_common_field.json": (
        400,
        b'{"common":null,"items":null,"error":"pine: validation error: '
        b'missing required common input field \\"user_id\\""}\n',
    ),
    "errors/runtime_parallel_shard_error.json": (
        500,
        b'{"common":{},"items":[{"x":1},{"x":2},{"x":3},{"x":4}],'
        b'"error":"pine: execution error in operator \\"error_lua\\": lua: item[0]: '
        b'[string \\"transform_by_lua\\"]:2: shard_failure\\nstack traceback:\\n'
        b'\\t[string \\"transform_by_lua\\"]:2: in main chunk"}\n',
    ),
}


def _fixture(name: str) -> dict[str, object]:
    base = fixtures_dir()
    if base is None or not (base / name).is_file():
        fixtures_absent()
    data: dict[str, object] = json.loads((base / name).read_text())
    return data


@pytest.fixture(params=["one-process", "two-workers"])
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """A function ``(config) -> Serve`` in the parametrised mode (closed at the end)."""
    started: list[Serve] = []
    args = (
        ("--workers", "2", "--shared-dir", str(tmp_path)) if request.param != "one-process" else ()
    )

    def start(config: object) -> Serve:
        path = tmp_path / f"config{len(started)}.json"
        path.write_text(json.dumps(config))
        server = serve_plugin(path, tmp_path / "closes.log", *args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@pytest.mark.parametrize("name", sorted(GO_ANSWERS))
@pytest.mark.timeout(120)
def test_the_server_answers_as_go(serve: object, name: str) -> None:
    data = _fixture(name)
    server = serve(data["config"])  # type: ignore[operator]
    with httpx.Client(timeout=30) as client:
        response = client.post(f"{server.url}/execute", content=json.dumps(data["request"]))
    assert (response.status_code, response.content) == GO_ANSWERS[name]
