"""The instruction profile's reading of callgrind_annotate, and the frame primitives' sides."""

from __future__ import annotations

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
