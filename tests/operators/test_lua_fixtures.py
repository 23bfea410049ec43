"""Every case of the four ``operators/transform_by_lua*.json`` fixtures, run directly.

Stricter than the Go runner's ``%v`` text comparison: a number must come
back as a number (``int``/``float``, not ``bool``), a string as a string.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from ..conformance._fixtures import missing_dir_param
from ._lua_helpers import each_backend, load_fixture, lua_op, run

pytestmark = pytest.mark.usefixtures(each_backend.__name__)

FILES = (
    "operators/transform_by_lua.json",
    "operators/transform_by_lua_edge_cases.json",
    "operators/transform_by_lua_format.json",
    "operators/transform_by_lua_tables.json",
)


def _cases() -> list[Any]:
    params = []
    for relative in FILES:
        data = load_fixture(relative)
        if data is None:
            params.append(missing_dir_param(name=f"{relative}-absent"))
            continue
        assert data["operator"] == "transform_by_lua"
        params.extend(
            pytest.param(case, id=f"{relative}::{case['name']}") for case in data["cases"]
        )
    return params


def same(expected: Any, got: Any) -> bool:
    """Equal values of the same JSON kind (1 and 1.0 are one number; "1" is not)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    if isinstance(expected, int | float):
        return isinstance(got, int | float) and (
            expected == got or (math.isnan(expected) and math.isnan(got))
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(same(e, g) for e, g in zip(expected, got, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same(v, got[k]) for k, v in expected.items())
        )
    return type(expected) is type(got) and expected == got


@pytest.mark.parametrize("case", _cases())
def test_fixture_case(case: dict[str, Any]) -> None:
    params, meta = case["params"], case["metadata"]
    op = lua_op(
        params["lua_script"],
        item=params.get("function_for_item", ""),
        common=params.get("function_for_common", ""),
        common_input=tuple(meta.get("common_input") or ()),
        item_input=tuple(meta.get("item_input") or ()),
        common_output=tuple(meta.get("common_output") or ()),
        item_output=tuple(meta.get("item_output") or ()),
    )
    try:
        out = run(op, case["input"].get("common"), case["input"].get("items"))
    finally:
        op.close()
    expected = case["expected"]
    problems = []
    for key, want in (expected.get("common") or {}).items():
        got = (out.common_writes or {}).get(key, "<missing>")
        if not same(want, got):
            problems.append(f"common[{key}] = {got!r}, expected {want!r}")
    writes = out.item_write_map()
    for i, row in enumerate(expected.get("items") or ()):
        for key, want in row.items():
            got = writes.get(i, {}).get(key, "<missing>")
            if not same(want, got):
                problems.append(f"items[{i}].{key} = {got!r}, expected {want!r}")
    if expected.get("items") == []:
        assert not out.used()[1], "no items: no item writes"
    assert problems == []
