"""``server_byte_exact/``: the bytes of ``pineapple.engine.respond`` for each fixture.

The fixture files hold config and request only; the bytes below are what the
Go server (``pkg/server/server.go`` ``handleExecute`` + ``json.Encoder``)
sends for them: sorted keys, integral floats without ``.0``, ``error`` after
the partial result, a trailing newline, and Go's status codes.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pineapple import Context
from pineapple.engine import Engine
from pineapple.engine.http import respond

from ._fixtures import load, marks_for, missing_dir_param

EXPECTED: dict[str, tuple[int, bytes]] = {
    "server_byte_exact/01_empty_items_success.json": (
        200,
        b'{"common":{"b":"hello"},"items":[]}\n',
    ),
    "server_byte_exact/02_partial_error_keeps_partial_result.json": (
        500,
        b'{"common":{"a":"first-op-succeeded"},'
        b'"items":[{"x":"non-numeric"},{"x":"non-numeric-2"}],'
        b'"error":"pine: execution error in operator \\"normalize_bad\\": '
        b'transform_normalize: item[0].x: cannot convert string to float64"}\n',
    ),
    "server_byte_exact/04_number_precision.json": (
        200,
        b'{"common":{},"items":[{"doubled":200000,"item_score":100000},'
        b'{"doubled":2000002,"item_score":1000001},{"doubled":1,"item_score":0.5}]}\n',
    ),
    "server_byte_exact/05_empty_common_response.json": (
        200,
        b'{"common":{},"items":[{"id":"a","score":1}]}\n',
    ),
}


def _files() -> list[Any]:
    params = [
        pytest.param(fixture_id, data, id=fixture_id, marks=marks_for(fixture_id, data))
        for fixture_id, data in load("server_byte_exact")
    ]
    return params or [missing_dir_param(2)]


@pytest.mark.parametrize(("fixture_id", "data"), _files())
def test_server_byte_exact_fixture(fixture_id: str, data: dict[str, Any]) -> None:
    assert fixture_id in EXPECTED, "a new fixture: add its expected bytes"
    with Engine(data["config"]) as engine:
        got = respond(engine, Context(), orjson.dumps(data["request"]))
    assert got == EXPECTED[fixture_id]
