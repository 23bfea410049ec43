"""The inline item loop of ``transform_by_lua``: which scripts it takes, and that it
answers exactly what the general loop answers (values, negative zeros, errors, the
deadline), field names that clash with the driver's own included.

The general loop is forced by the same script with a comment after it (a comment is
outside what ``_expression`` recognises): same function, same inputs, other path.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

import pytest

from pineapple import Context, DeadlineExceededError
from pineapple.engine import OperatorInput, OperatorOutput
from pineapple.operators._lua import LuaRuntimeError
from pineapple.operators._lua._expression import inline_return
from pineapple.operators.transform_by_lua import TransformByLua

from ._lua_helpers import each_backend, lua_op, run

pytestmark = pytest.mark.timeout(120)

__all__ = ["each_backend"]  # the fixture, used by name below

FIELDS = frozenset({"x", "y", "s", "n"})


@pytest.mark.parametrize(
    ("script", "expressions"),
    [
        ("function f()\n  return x * 0.9\nend\n", "x * 0.9"),
        ("function f() return x, y end", "x, y"),
        ("function f() return x; end", "x"),
        ("function f() return #s > 2 and not y or nil end", "#s > 2 and not y or nil"),
        ("function f() return (x + y) % 3 ^ 2 .. 'a' end", "(x + y) % 3 ^ 2 .. 'a'"),
        ("function f() return x ~= nil and x >= 1e3 or 0x1F end", "x ~= nil and x >= 1e3 or 0x1F"),
    ],
)
def test_a_return_of_fields_and_operators_is_taken(script: str, expressions: str) -> None:
    found = inline_return(script, "f", FIELDS)
    assert found is not None and found.expressions == expressions


@pytest.mark.parametrize(
    "script",
    [
        "function f() return z end",  # a name that is no input field (a global)
        "function f() return math.floor(x) end",  # an index, a call
        "function f() return tostring(x) end",  # a call
        "function f() return (x)(y) end",  # a call on a value
        'function f() return x "a" end',  # a call by a string
        "function f() return x[1] end",  # an index
        "function f() return {x} end",  # a table
        "function f() return x -- why\nend",  # a comment
        'function f() return "a\\n" .. x end',  # an escape
        "function f() return [[a]] end",  # a long string
        "function f() return ... end",  # varargs
        "function f() return end",  # nothing
        "function f() local a = x return a end",  # a local
        "function f() return x end\nfunction g() return y end",  # more than one function
        "function g() return x end",  # another function than the operator's
        "function f(x) return x end",  # a parameter
        "function f() return x end;",  # anything after it
        "function f() return x; return y end",  # two statements
        "function f() return end_ end",  # a field that is no Lua name would be
    ],
)
def test_anything_else_is_left_to_the_general_loop(script: str) -> None:
    assert inline_return(script, "f", FIELDS | {"end"}) is None


def _both(
    script: str,
    items: list[dict[str, Any]],
    *,
    common: dict[str, Any] | None = None,
    item_input: tuple[str, ...],
    common_input: tuple[str, ...] = (),
    outputs: tuple[str, ...] = ("out",),
) -> tuple[Any, Any]:
    """What the inline loop and the general loop answer: written items, or the error text."""
    answers: list[Any] = []
    for source in (script, script + "\n-- the general loop"):
        op = lua_op(
            source,
            item="f",
            item_input=item_input,
            common_input=common_input,
            item_output=outputs,
        )
        assert _inline(op) is (source == script)
        answers.append(_answer(op, common or {}, items))
    return answers[0], answers[1]


def _answer(op: TransformByLua, common: dict[str, Any], items: list[dict[str, Any]]) -> Any:
    """The items ``op`` writes, or its error's text."""
    try:
        return run(op, common, items).item_write_map()
    except LuaRuntimeError as exc:
        return f"error: {exc}"


def _inline(op: TransformByLua) -> bool:
    pool = op._pool
    assert pool is not None
    state = pool.borrow(time.monotonic() + 5)
    try:
        return state.inline
    finally:
        pool.give_back(state)


def _same(a: Any, b: Any) -> bool:
    """Equal, with a float's sign and type told apart (-0.0 is not 0, 1.0 is not 1)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b and repr(a) == repr(b)


def test_the_benchmarks_discount_is_inline_and_answers_as_before(each_backend: object) -> None:
    items: list[dict[str, Any]] = [{"item_price": p} for p in (10, 2.5, -0.0, 0, 1e300, -7)]
    items.append({})  # no price: arithmetic on nil, the general loop's error
    script = "function apply_discount()\n  return item_price * 0.9\nend\n"
    for rows in (items[:-1], items):
        answers: list[Any] = []
        for source in (script, script + "-- general"):
            op = lua_op(
                source,
                item="apply_discount",
                item_input=("item_price",),
                item_output=("price",),
            )
            assert _inline(op) is (source == script)
            answers.append(_answer(op, {}, rows))
        inline, general = answers
        assert _same(inline, general), (inline, general)
    assert isinstance(general, str) and general.startswith(
        'error: lua: item[6]: [string "transform_by_lua"]:2: '
        "attempt to perform arithmetic on global 'item_price' (a nil value)"
    ), general


def test_negative_zero_literals_and_results_keep_their_sign() -> None:
    inline, general = _both(
        "function f() return -0.0, x * -1, 0, x end",
        [{"x": 0}, {"x": -0.0}, {"x": 3}],
        item_input=("x",),
        outputs=("a", "b", "c", "d"),
    )
    assert _same(inline, general), (inline, general)
    assert math.copysign(1.0, inline[0]["a"]) < 0 and type(inline[0]["a"]) is float
    assert math.copysign(1.0, inline[0]["b"]) < 0
    # Lua 5.1 keeps one constant for 0 and -0 in a function: the script's 0 is its -0.0
    # on both loops (the inline loop adds no constant 0 of its own).
    assert math.copysign(1.0, inline[0]["c"]) < 0


DRIVER_NAMES = ("n", "i", "z", "nz", "G", "fname", "c1", "cv1", "o1", "r1", "fn", "where")


def test_fields_named_like_the_drivers_locals_read_their_own_values() -> None:
    names = (*DRIVER_NAMES, "pcall", "next", "unpack", "fast", "run", "reset", "base")
    script = "function f() return " + " .. ',' .. ".join(names) + ", n end"
    items = [{name: f"{name}{k}" for name in names} for k in range(3)]
    items[1].pop("z")  # a missing field: the concatenation fails on the general path too
    inline, general = _both(script, items, item_input=names, outputs=("all", "n"))
    assert _same(inline, general), (inline, general)
    assert isinstance(inline, str) and "item[1]" in inline
    inline, general = _both(script, [items[0], items[2]], item_input=names, outputs=("all", "n"))
    assert _same(inline, general), (inline, general)
    assert inline[1]["all"] == ",".join(f"{name}2" for name in names)


def test_an_item_field_wins_over_a_common_field_of_the_same_name() -> None:
    inline, general = _both(
        "function f() return x, y end",
        [{"x": 1}, {}, {"x": 3}],
        common={"x": "common", "y": "common y"},
        item_input=("x",),
        common_input=("x", "y"),
        outputs=("a", "b"),
    )
    assert _same(inline, general), (inline, general)
    assert [inline[k]["a"] for k in range(3)] == [1, None, 3]
    assert {inline[k]["b"] for k in range(3)} == {"common y"}


def test_the_inline_loop_stops_at_the_deadline(each_backend: object) -> None:
    op = lua_op(
        "function f() return x .. x .. x end",
        item="f",
        item_input=("x",),
        item_output=("y",),
        timeout_ms=60_000,
    )
    assert _inline(op)
    items = [{"x": "a" * 64}] * 200_000
    ctx = Context(deadline=time.monotonic() + 0.002)
    with pytest.raises(DeadlineExceededError, match="lua_test"):
        op.execute(ctx, OperatorInput({}, items), OperatorOutput())
    # A deadline is no error to retry on the general loop: the pool drops the state.
    assert run(op, {}, [{"x": "b"}]).item_write_map() == {0: {"y": "bbb"}}


_VALUES: tuple[Any, ...] = (None, True, False, 0, -0.0, 1, -3, 2.5, 1e20, "", "4", "ab", "-0")
_VALUES += ([1, 2],)
_UNARY = ("-", "not ", "#")
_BINARY = ("+", "-", "*", "/", "%", "^", "..", "==", "~=", "<", "<=", ">", ">=", "and", "or")
_LITERAL_TEXT = ("0", "-0.0", "1", "0.5", "1e3", "'x'", '""', "nil", "true", "false")


def _expression(rng: random.Random, fields: tuple[str, ...], depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(fields) if rng.random() < 0.7 else rng.choice(_LITERAL_TEXT)
    if rng.random() < 0.2:
        return rng.choice(_UNARY) + "(" + _expression(rng, fields, depth - 1) + ")"
    left = _expression(rng, fields, depth - 1)
    right = _expression(rng, fields, depth - 1)
    return f"({left} {rng.choice(_BINARY)} {right})"


def test_random_expressions_answer_alike_on_both_loops() -> None:
    """A seeded walk over expressions and values: every answer, value or error, the same."""
    rng = random.Random(20261205)
    fields = ("a", "b", "c")
    values_seen, errors_seen = 0, 0
    for _ in range(60):
        count = rng.randint(1, 3)
        script = (
            "function f() return "
            + ", ".join(_expression(rng, fields, rng.randint(0, 3)) for _ in range(count))
            + " end"
        )
        items = [{f: rng.choice(_VALUES) for f in fields if rng.random() < 0.9} for _ in range(4)]
        inline, general = _both(
            script,
            items,
            common={"c": rng.choice(_VALUES)},
            item_input=("a", "b"),
            common_input=("c",),
            outputs=tuple(f"o{k}" for k in range(count)),
        )
        assert _same(inline, general), (script, items, inline, general)
        if isinstance(inline, str):
            errors_seen += 1
        else:
            values_seen += 1
    assert values_seen >= 10 and errors_seen >= 10, (values_seen, errors_seen)
