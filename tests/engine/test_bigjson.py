"""``pineapple.engine._bigjson``: a large body parsed in pieces gives ``orjson.loads``'s answer."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from pineapple.engine import _bigjson


def _outcome(parse: Any, body: bytes) -> tuple[Any, ...]:
    try:
        value = parse(body)
    except orjson.JSONDecodeError as exc:
        return ("error", str(exc), exc.pos)
    return ("ok", value, list(value) if isinstance(value, dict) else None)


def _value(rnd: random.Random, depth: int = 0) -> Any:
    kind = rnd.random()
    if depth < 3 and kind < 0.2:
        keys = ["a", "", "items", "}", "},{", "x\\"]
        return {rnd.choice(keys): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))}
    if depth < 3 and kind < 0.3:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return rnd.choice(
        [1, 2.5, -0.0, 1e300, 2**63 - 1, "s", "},{", '"items":[', "\\", "é", None, True]
    )


def _body(rnd: random.Random) -> bytes:
    items = [
        _value(rnd) if rnd.random() < 0.1 else {"id": i, "v": _value(rnd)}
        for i in range(rnd.randint(0, 12))
    ]
    request: dict[str, Any] = {"common": _value(rnd)} if rnd.random() < 0.8 else {}
    request["items"] = items
    text = orjson.dumps(request).decode()
    space = rnd.choice(["", " ", "\n  "])
    if space:
        text = text.replace(",", "," + space).replace("}", space + "}")
    return text.encode()


_EDITS = [b"", b"x", b"]", b"}", b",", b"{", b'"', b"\\", b" ", b"\xff", b"\xc3"]


@pytest.mark.parametrize("seed", range(4))
def test_same_value_or_same_error_as_orjson(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bigjson, "PIECE_BYTES", 8)
    rnd = random.Random(seed)
    cut = 0
    for _ in range(3000):
        body = _body(rnd)
        if body and rnd.random() < 0.5:  # a damaged body: same error, or same value
            at = rnd.randrange(len(body))
            body = body[:at] + rnd.choice(_EDITS) + body[at + rnd.randint(0, 2) :]
        assert _outcome(_bigjson.loads, body) == _outcome(orjson.loads, body), body
        cut += _bigjson._loads_in_pieces(body) is not None
    assert cut > 500  # most well-formed bodies were cut, not parsed whole


def test_a_large_request_is_parsed_in_bounded_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = orjson.loads

    def counting_loads(data: bytes) -> Any:
        sizes.append(len(data))
        return real(data)

    monkeypatch.setattr(orjson, "loads", counting_loads)
    items = [{"id": i, "score": i / 7, "tag": "},{" * (i % 3)} for i in range(20_000)]
    body = orjson.dumps({"common": {"k": [1, {"items": 2}]}, "items": items})
    assert _bigjson.loads(body) == real(body)
    assert len(sizes) > len(body) // _bigjson.PIECE_BYTES
    assert max(sizes) < _bigjson.PIECE_BYTES + 200


@pytest.mark.parametrize(
    "body",
    [
        b'{"items":[{"a":1},{"a":2}],"common":{}}',  # items not last
        b'{"common":{"items":[{"a":1}]},"items":[{"a":1},{"a":2}]}',  # a nested "items" first
        b'{"x\\"items":[{"a":1}],"items":[{"a":1},{"a":2}]}',  # "items" ending another key
        b'{"items":[{"a":"},{"},{"a":2}]}',  # the only cut is inside a string
        b'{"items":[{"a":1}],"":[{"b":2},{"c":3}]}',  # a piece closing the array early
        b'{"items":[{"a":1}],[{"b":2},{"c":3}]}',  # the same, invalid
    ],
)
def test_other_shapes_fall_back_to_one_parse(body: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bigjson, "PIECE_BYTES", 4)
    assert _outcome(_bigjson.loads, body) == _outcome(orjson.loads, body)
