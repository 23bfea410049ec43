"""Numbers answered without Lua (``_lua._arithmetic``): which scripts, and that every
answer is Lua's, to the bit: a seeded walk over expressions and values, compared with
Lua's inline and general loops; whatever is not numbers only goes to Lua."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pineapple._native import compiled
from pineapple.operators._lua import arithmetic, inline_return

from ._lua_helpers import lua_op, run, same_values, three_ways

pytestmark = pytest.mark.timeout(120)

WITHOUT_LUA = compiled()
"""Numbers are answered without Lua on the compiled core only (pure Python: by Lua)."""

FIELDS = ("x", "y")


def _taken(expressions: str) -> bool:
    inline = inline_return(f"function f() return {expressions} end", "f", frozenset(FIELDS))
    return inline is not None and arithmetic(inline.tokens, ("y",), ("x",)) is not None


@pytest.mark.parametrize(
    "expressions",
    ["x * 0.9", "x, y", "-(x - y) / 2.5e3", "x * 2 * 3 + .5", "- -x", "(x)", "1.5", "x + 1e308"],
)
def test_sums_of_fields_and_decimal_literals_are_taken(expressions: str) -> None:
    assert _taken(expressions)


@pytest.mark.parametrize(
    "expressions",
    [
        "x % 2",  # Lua's modulo is floor-based: not Python's, left to Lua
        "x ^ 2",
        "x .. 'a'",
        "x > 1",
        "#x",
        "not x",
        "x and y",
        "nil",
        "0x10 * x",  # hexadecimal
        "x * 0",  # a zero constant: Lua 5.1 keeps one constant for 0 and -0
        "x * -0.0",
        "x + (1 - 1)",  # folded by Lua into a zero constant
        "x / (2 - 2)",
        "x * 1 / 0",  # 1 / 0 is not folded, still a division by zero
    ],
)
def test_anything_else_is_left_to_lua(expressions: str) -> None:
    assert not _taken(expressions)


_NUMBERS: tuple[Any, ...] = (0, -0.0, 0.0, 1, -1, 3, 0.1, 2.5, -7.25, 1e300, -1e300, 5e-324)
_NUMBERS += (2**53 + 1, 2**63 - 1, -(2**63), 2**62, 1e18, 9.3e18, float("inf"), float("-inf"))
_OTHERS: tuple[Any, ...] = (None, "3", "x", True, 2**64, [1])
_LITERALS = ("1", "2.5", "0.1", "1e308", "3e-320", ".5", "7.", "1e18", "9223372036854775807")


def _expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(FIELDS) if rng.random() < 0.7 else rng.choice(_LITERALS)
    if rng.random() < 0.15:
        return "-(" + _expression(rng, depth - 1) + ")"
    op = rng.choice("+-*/")
    return f"({_expression(rng, depth - 1)} {op} {_expression(rng, depth - 1)})"


def _direct(
    script: str, items: list[dict[str, Any]], common: dict[str, Any]
) -> dict[int, dict[str, Any]] | None:
    """What :class:`Arithmetic` answers for the script, as written items (None: Lua must)."""
    inline = inline_return(script, "f", frozenset(FIELDS))
    plan = None if inline is None else arithmetic(inline.tokens, ("y",), ("x",))
    cols = (
        None if plan is None else plan.columns(len(items), [common["y"]], [[i["x"] for i in items]])
    )
    if cols is None:
        return None
    return {i: {f"o{k}": col[i] for k, col in enumerate(cols)} for i in range(len(items))}


def test_random_sums_answer_as_lua_does_to_the_bit() -> None:
    """A seeded walk: numbers only (answered without Lua) and with other values (Lua);
    every answer, value or error, the same on all three paths."""
    rng = random.Random(51205)
    without_lua = with_lua = answered = 0
    for round_ in range(150):
        count = rng.randint(1, 2)
        script = "function f() return "
        script += ", ".join(_expression(rng, rng.randint(1, 4)) for _ in range(count)) + " end"
        others = round_ % 3 == 0  # a third of the rounds hold a value Lua must see
        items = []
        for _ in range(6):
            item = {"x": rng.choice(_NUMBERS)}
            if others and rng.random() < 0.3:
                item["x"] = rng.choice(_OTHERS)
            items.append(item)
        common = {"y": rng.choice(_NUMBERS)}
        got = three_ways(
            script,
            items,
            common=common,
            item_input=("x",),
            common_input=("y",),
            outputs=tuple(f"o{k}" for k in range(count)),
        )
        assert same_values(got["built"], got["general"]), (script, items, common, got)
        assert same_values(got["inline"], got["general"]), (script, items, common, got)
        direct = _direct(script, items, common)  # the module itself, compiled or pure
        if direct is not None:
            assert same_values(direct, got["general"]), (script, items, common, direct, got)
            answered += 1
        if got["lua_calls"] == 0:
            without_lua += 1
        else:
            with_lua += 1
    # Both kinds were met often enough for the comparison to mean something.
    assert answered >= 50, answered
    if WITHOUT_LUA:
        assert without_lua >= 50 and with_lua >= 30, (without_lua, with_lua)
    else:
        assert without_lua == 0


def test_fewer_expressions_than_outputs_write_nil_and_more_are_dropped() -> None:
    op = lua_op(
        "function f() return x * 2 end", item="f", item_input=("x",), item_output=("a", "b")
    )
    assert run(op, {}, [{"x": 1.5}]).item_write_map() == {0: {"a": 3, "b": None}}
    assert op.stats()["borrow_count"] == (0 if WITHOUT_LUA else 1)
    op = lua_op(
        "function f() return x * 2, x / 4 end", item="f", item_input=("x",), item_output=("a",)
    )
    assert run(op, {}, [{"x": 2}]).item_write_map() == {0: {"a": 4}}
    assert op.stats()["borrow_count"] == (0 if WITHOUT_LUA else 1)


def test_a_field_that_is_both_item_and_common_is_the_items() -> None:
    got = three_ways(
        "function f() return x + y end",
        [{"x": 1, "y": 10}, {"x": 2, "y": 20}],
        common={"y": 1000},
        item_input=("x", "y"),
        common_input=("y",),
    )
    assert got["built"] == {0: {"out": 11}, 1: {"out": 22}}
    assert got["lua_calls"] == (0 if WITHOUT_LUA else 1)
    assert same_values(got["built"], got["general"])
