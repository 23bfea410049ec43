"""Issue 21, item 8: a large body's parse is bounded before its objects exist.

- ``parsed_bytes_bound`` is at least what ``orjson.loads`` allocates
  (tracemalloc) for every shape below, the cheap-to-send, costly-to-parse ones
  first, and not wildly above it for ordinary requests;
- the item count is enforced while parsing: an 8 MB body of ``{}`` items
  stops after ``max_items`` plus one piece's items (counted by the parts
  parsed), and the error says "at least";
- a ``budget`` sees every byte reserved given back, and a refusal is 503.
"""

from __future__ import annotations

import random
import tracemalloc
from typing import Any

import orjson
import pytest

from pineapple.engine import Engine, _bigjson
from pineapple.engine._bigjson import PIECE_BYTES, TooManyItems, parsed_bytes_bound
from pineapple.engine.http import respond

from .test_large_request import PIPELINES

N = 50_000
_rng = random.Random(7)


def _items(piece: bytes) -> bytes:
    return b'{"common":{},"items":[' + b",".join([piece] * N) + b"]}"


def _list(piece: bytes) -> bytes:
    return b'{"common":{},"items":[{"a":[' + b",".join([piece] * N) + b"]}]}"


SHAPES = {
    "{} items": _items(b"{}"),
    "{ } items": _items(b"{ }"),
    "null items": _items(b"null"),
    "one-key items": _items(b'{"":0}'),
    "nested {} items": _items(b'{"":{}}'),
    "nested [] items": _items(b'{"":[]}'),
    "float items": _items(b'{"a":1.5}'),
    "list of []": _list(b"[]"),
    "list of [[]]": _list(b"[[]]"),
    "floats": _list(b"1.5"),
    "big ints": _list(b"123456789012"),
    "short strings": _list(b'"ab"'),
    "latin-1 strings": _list('"éé"'.encode()),
    "astral strings": _list('"\U0001f600"'.encode()),
    "escapes": _list(b'"\\u0041"'),
    "many keys": b'{"items":[{' + b",".join(b'"k%d":0' % i for i in range(N)) + b"}]}",
    "typical": orjson.dumps(
        {
            "common": {"user": "u1"},
            "items": [
                {"id": str(i), "score": _rng.random(), "tags": ["a", "bb"], "cat": i % 7}
                for i in range(N // 4)
            ],
        }
    ),
}


def _allocated(body: bytes) -> int:
    tracemalloc.start()
    try:
        value = orjson.loads(body)
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del value
    return size


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_bound_is_above_what_the_parse_allocates(shape: str) -> None:
    body = SHAPES[shape]
    real = _allocated(body)
    bound = parsed_bytes_bound(body)
    assert bound >= real, (shape, bound, real)
    if shape in ("typical", "{} items", "float items"):
        assert bound < 3 * real, (shape, bound / real)  # ordinary shapes: not far above


def test_items_are_counted_while_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    body = b'{"common":{},"items":[' + b",".join([b"{}"] * 2_800_000) + b"]}"  # 8.4 MB
    parsed: list[int] = []
    real = orjson.loads

    def counting(data: bytes) -> Any:
        value = real(data)
        parsed.append(len(data))
        return value

    monkeypatch.setattr(orjson, "loads", counting)
    with pytest.raises(TooManyItems) as caught:
        _bigjson.loads(body, max_items=100_000)
    assert not caught.value.exact and 100_000 < caught.value.count < 100_000 + PIECE_BYTES // 3
    assert "at least" in str(caught.value)
    assert sum(parsed) < 3 * PIECE_BYTES  # the head and two pieces, not the 8 MB
    # Without the cap the same body parses whole (the count is then exact).
    monkeypatch.setattr(orjson, "loads", real)
    assert len(_bigjson.loads(body)["items"]) == 2_800_000


def test_a_count_over_the_cap_at_the_end_is_exact() -> None:
    body = orjson.dumps({"common": {}, "items": [{}] * 100_001})
    status, out = respond(Engine(PIPELINES["sort_desc_top"]), None, body, max_items=100_000)
    assert status == 413
    assert orjson.loads(out) == {"error": "request has 100001 items, more than the limit of 100000"}


class _Budget:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0
        self.peak = 0
        self.calls = 0

    def reserve(self, nbytes: int) -> bool:
        self.calls += 1
        if nbytes > 0 and self.held + nbytes > self.cap:
            return False
        self.held += nbytes
        self.peak = max(self.peak, self.held)
        return True


def test_a_budget_gets_back_all_it_gave_and_refuses_with_503() -> None:
    engine = Engine(PIPELINES["sort_desc_top"])
    body = SHAPES["typical"]
    roomy = _Budget(1 << 40)
    assert respond(engine, None, body, budget=roomy)[0] == 200
    assert roomy.held == 0 and roomy.peak >= _allocated(body) and roomy.calls > 2

    tight = _Budget(roomy.peak // 2)
    status, out = respond(engine, None, body, budget=tight)
    assert status == 503 and b"server busy" in out, out
    assert tight.held == 0

    flood = b'{"items":[' + b",".join([b"{}"] * 2_800_000) + b"]}"
    counted = _Budget(1 << 40)
    status, _ = respond(engine, None, flood, max_items=100_000, budget=counted)
    assert status == 413 and counted.held == 0
    # What the capped parse reserved: the head and two pieces, not the body's bound.
    assert counted.peak < parsed_bytes_bound(flood) / 10
