"""A request larger than one piece gets the very bytes of the one-call path.

The large path (``pineapple.engine._pieces``, ``_bigjson``) splits work so that
no C call holds the GIL for long; the one-call path is the same code with the
piece sizes raised beyond the request.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from pineapple.engine import Engine, _bigjson, _engine, _frame, _io
from pineapple.engine import http as _http
from pineapple.engine.http import respond
from pineapple.operators import transform_normalize

from ._configs import config, op

N = 12_000  # about three pieces


def _one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (_engine, _frame, _http, _io, transform_normalize):
        monkeypatch.setattr(module, "PIECE", 10**9)
    monkeypatch.setattr(_http, "PIECE_BYTES", 10**12)


def _body(seed: int) -> bytes:
    rnd = random.Random(seed)
    items: list[Any] = [
        {"id": i, "score": rnd.choice([rnd.randint(0, 40), rnd.randint(0, 40) / 4]), "tag": "a<b"}
        for i in range(N)
    ]
    return orjson.dumps({"common": {"k": 1}, "items": items})


PIPELINES: dict[str, dict[str, Any]] = {
    "sort_desc_top": config(
        {
            "sort": op("reorder_sort", order="desc", meta={"item_input": ["score"]}),
            "top": op("filter_truncate", top_n=25),
        },
        contract={"item_output": ["id", "score"]},
    ),
    "normalize_filter_sort_asc_all": config(
        {
            "norm": op(
                "transform_normalize", meta={"item_input": ["score"], "item_output": ["norm"]}
            ),
            "drop": op("filter_condition", value=0, meta={"item_input": ["norm"]}),
            "sort": op("reorder_sort", order="asc", meta={"item_input": ["norm"]}),
        },
        contract={"item_input": ["score"], "item_output": ["id", "norm", "tag"]},
    ),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize("seed", [1, 2])
def test_same_bytes_as_one_call(name: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(PIPELINES[name])
    body = _body(seed)
    large = respond(engine, None, body)
    assert large[0] == 200
    _one_call(monkeypatch)
    assert respond(engine, None, body) == large


def test_errors_name_the_same_item(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(PIPELINES["sort_desc_top"])
    items: list[Any] = [{"id": i, "score": i} for i in range(N)]
    items[9_000]["score"] = "high"
    body = orjson.dumps({"common": {}, "items": items})
    large = respond(engine, None, body)
    assert large[0] == 500 and b"item[9000].score" in large[1]
    _one_call(monkeypatch)
    assert respond(engine, None, body) == large


def test_large_body_is_parsed_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    cut: list[int] = []
    real = _bigjson._loads_in_pieces

    def counting(body: bytes, *args: Any) -> dict[str, Any] | None:
        cut.append(len(body))
        return real(body, *args)

    monkeypatch.setattr(_bigjson, "_loads_in_pieces", counting)
    body = _body(3)
    assert len(body) > _bigjson.PIECE_BYTES
    assert respond(Engine(PIPELINES["sort_desc_top"]), None, body)[0] == 200
    assert cut == [len(body)]
