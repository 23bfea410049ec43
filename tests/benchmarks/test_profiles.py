"""The instruction profile's reading of callgrind_annotate, and the frame primitives' sides."""

from __future__ import annotations

from typing import Any

from benchmarks import frame_primitives
from benchmarks.instruction_profile import parse_annotation

ANNOTATION = """\
--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
191,515,264 (100.0%)  PROGRAM TOTALS
19,499,478 (10.18%)  ???:0x0000000000033b40'2 [/x/lupa/lua51.cpython-311-x86_64-linux-gnu.so]
 3,095,051 ( 1.62%)  ???:0x0000000000033590 [/x/lupa/lua51.cpython-311-x86_64-linux-gnu.so]
13,734,718 ( 7.17%)  /b/Objects/dictobject.c:_Py_dict_lookup [/p/libpython3.11.so.1.0]
 2,592,000 ( 1.35%)  /b/./Include/object.h:free_keys_object
 2,566,074 ( 1.34%)  /b/Objects/dictobject.c:free_keys_object [/p/libpython3.11.so.1.0]
 3,370,380 ( 1.76%)  build/__native_pineapple_core.c:CPyDef__io____column [/w/core.so]
"""


def test_self_counts_add_a_functions_parts_and_name_code_without_a_symbol_by_library() -> None:
    counts = parse_annotation(ANNOTATION, inclusive=False)
    assert counts == {
        "(no symbol) lua51.cpython-311-x86_64-linux-gnu.so": 19_499_478 + 3_095_051,
        "_Py_dict_lookup": 13_734_718,
        "free_keys_object": 2_592_000 + 2_566_074,
        "CPyDef__io____column": 3_370_380,
    }


def test_inclusive_counts_keep_the_largest_part_and_skip_cycles_and_unnamed_code() -> None:
    counts = parse_annotation(ANNOTATION, inclusive=True)
    assert counts == {
        "_Py_dict_lookup": 13_734_718,
        "free_keys_object": 2_592_000,
        "CPyDef__io____column": 3_370_380,
    }


def _as_rows(value: Any) -> Any:
    """A column side's answer turned into rows, to compare with the row side's."""
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        names = list(value)
        return [dict(zip(names, row, strict=True)) for row in zip(*value.values(), strict=True)]
    return value


def test_both_sides_of_each_primitive_compute_the_same_thing() -> None:
    rows = frame_primitives._row_primitives()
    cols = frame_primitives._column_primitives()
    assert set(rows) == set(cols) == set(frame_primitives.PRIMITIVES)
    for name in frame_primitives.PRIMITIVES:
        by_rows: Any = rows[name]()
        by_cols = cols[name]()
        if name == "answer two fields":
            assert by_rows[1] == by_cols
        elif by_rows is not None:
            assert by_rows == _as_rows(by_cols), name
