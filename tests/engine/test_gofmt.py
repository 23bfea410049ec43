"""The float writer against Go's ``encoding/json`` text (issue 13, item 9).

Expected texts follow Go's rule: ``strconv.FormatFloat(f, 'f', -1, 64)`` for
``1e-6 <= |f| < 1e21`` (shortest digits, zero-padded), else ``'e'`` with
``e-0N`` shortened to ``e-N``.
"""

from __future__ import annotations

import random

import orjson
import pytest

import pineapple.operators  # noqa: F401  (registers the built-ins)
from pineapple import Context
from pineapple.engine import Engine
from pineapple.engine._gofmt import _rewritten, go_json, json_float
from pineapple.engine.http import respond

GO_JSON = [
    (1e15, "1000000000000000"),
    (1e16, "10000000000000000"),
    (1.5e16, "15000000000000000"),
    (1e17, "100000000000000000"),
    (1.2345678901234568e17, "123456789012345680"),
    (2.0**63, "9223372036854776000"),
    (2.0**64, "18446744073709552000"),
    (1e20, "100000000000000000000"),
    (-1e20, "-100000000000000000000"),
    (9.999999999999999e20, "999999999999999900000"),
    (1e21, "1e+21"),
    (1e22, "1e+22"),
    (1.5e300, "1.5e+300"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (-1.7976931348623157e308, "-1.7976931348623157e+308"),
    (5e-324, "5e-324"),
    (2.2250738585072014e-308, "2.2250738585072014e-308"),
    (1e-7, "1e-7"),
    (2.5e-8, "2.5e-8"),
    (9.99e-7, "9.99e-7"),
    (1e-10, "1e-10"),
    (1e-6, "0.000001"),
    (1.5e-6, "0.0000015"),
    (1e-5, "0.00001"),
    (-0.0, "-0"),
    (0.0, "0"),
    (1.0, "1"),
    (1e6, "1000000"),  # %g would write 1e+06
    (123456789.0, "123456789"),  # %g would write 1.23456789e+08
    (0.1 + 0.2, "0.30000000000000004"),
    (100 / 3, "33.333333333333336"),
    (0.000123, "0.000123"),  # %g would write 0.000123 too; 'e' never below 1e-6
    (1e-4, "0.0001"),  # %g writes 0.0001; Python repr writes 0.0001
    (3e-05, "0.00003"),  # Python repr: 3e-05
    (1e-5 * 3, "0.000030000000000000004"),  # 3.0000000000000004e-05: all shortest digits
]


@pytest.mark.parametrize(("value", "text"), GO_JSON, ids=[t for _, t in GO_JSON])
def test_json_float_writes_go_text(value: float, text: str) -> None:
    assert json_float(value) == text


@pytest.mark.parametrize(("value", "text"), GO_JSON, ids=[t for _, t in GO_JSON])
def test_go_json_writes_go_text_alone_and_nested(value: float, text: str) -> None:
    assert go_json(value) == text.encode()
    assert go_json({"b": [value, 1.0], "a": value}) == (
        b'{"a":' + text.encode() + b',"b":[' + text.encode() + b",1]}"
    )
    # Go parses its own text back to the same float64.
    assert float(orjson.loads(text)) == value


_PAD = "p" * 300  # a long output


@pytest.mark.parametrize(("value", "text"), GO_JSON, ids=[t for _, t in GO_JSON])
def test_go_json_writes_go_text_in_a_long_output(value: float, text: str) -> None:
    pad = b'"' + _PAD.encode() + b'"'
    assert go_json([_PAD, value]) == b"[" + pad + b"," + text.encode() + b"]"
    assert go_json([value, _PAD]) == b"[" + text.encode() + b"," + pad + b"]"
    assert go_json({"a": value, "z": _PAD}) == b'{"a":' + text.encode() + b',"z":' + pad + b"}"


@pytest.mark.parametrize("pad", ["", _PAD], ids=["short", "long"])
def test_go_json_escapes_as_go_in_short_and_long_outputs(pad: str) -> None:
    text = "<a&b>\u2028\u2029\u2026 1.0, 1e-6 1e+20"
    assert go_json([pad, text]) == (
        f'["{pad}","\\u003ca\\u0026b\\u003e\\u2028\\u2029\u2026 1.0, 1e-6 1e+20"]'.encode()
    )
    assert go_json([pad, 1e-5, 2.0]) == f'["{pad}",0.00001,2]'.encode()


def _random_value(rng: random.Random, depth: int = 0) -> object:
    """A JSON value of the numbers above, ints, and strings of the bytes go_json looks for."""
    kind = rng.randrange(6 if depth < 3 else 3)  # bounded: three levels of nesting
    if kind == 0:
        return rng.choice(GO_JSON)[0]
    if kind == 1:
        return rng.choice([0, 1, -1, 7, 2**53, -(2**63), 2**64 - 1, 2**64, -(2**70)])
    if kind == 2:
        pieces = ["1.0", ".0", "1e-6", "e+16", "e+20", "-", "+", ".", "<", ">", "&", "x"]
        pieces += ["\u2028", "\u2029", "\u2026", "e"]
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
    if kind == 3:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}


_GO_ESCAPES = [("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")]
_GO_ESCAPES += [("\u2028", "\\u2028"), ("\u2029", "\\u2029")]


def _escaped_always(out: bytes) -> bytes:
    """Every character Go escapes, escaped, with no shortcut (the test's own oracle)."""
    for char, escape in _GO_ESCAPES:
        out = out.replace(char.encode(), escape.encode())
    return out


def test_go_json_fast_paths_agree_with_rewriting_everything() -> None:
    # Seeded: go_json's shortcuts (no number or escape byte; no suspect number text)
    # must give what rewriting every number and escaping always gives.
    rng = random.Random(23)
    for _ in range(3_000):  # bounded: 3,000 values of at most three levels
        value = _random_value(rng)
        assert go_json(value) == _escaped_always(_rewritten(value)), value


def test_go_json_never_raises_on_numbers() -> None:
    assert go_json([2**64, -(2**63) - 1, 2**63]) == (
        b"[18446744073709552000,-9223372036854776000,9223372036854775808]"
    )
    assert go_json([float("nan"), float("inf"), float("-inf")]) == b"[null,null,null]"
    assert go_json({"x": (1.0, 1e20)}) == b'{"x":[1,100000000000000000000]}'


def _lua_square_config() -> dict[str, object]:
    return {
        "pipeline_config": {
            "operators": {
                "square": {
                    "type_name": "transform_by_lua",
                    "$metadata": {
                        "common_input": ["value"],
                        "common_output": ["sq"],
                        "item_input": [],
                        "item_output": [],
                    },
                    "lua_script": "function f() return value * value end",
                    "function_for_common": "f",
                },
                "echo": {
                    "type_name": "transform_by_lua",
                    "$metadata": {
                        "common_input": ["value"],
                        "common_output": ["v"],
                        "item_input": [],
                        "item_output": [],
                    },
                    "lua_script": "function f() return value end",
                    "function_for_common": "f",
                },
            },
            "pipeline_map": {},
        },
        "pipeline_group": {"main": {"pipeline": ["square", "echo"]}},
        "flow_contract": {
            "common_input": ["value"],
            "common_output": ["sq", "v"],
            "item_input": [],
            "item_output": [],
        },
    }


def test_respond_answers_a_lua_square_beside_its_float_input() -> None:
    pytest.importorskip("lupa")
    with Engine(_lua_square_config()) as engine:
        status, body = respond(engine, Context(), b'{"common": {"value": 1e10}, "items": []}')
    assert status == 200, body
    assert body == b'{"common":{"sq":100000000000000000000,"v":10000000000},"items":[]}\n'
