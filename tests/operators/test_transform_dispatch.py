from __future__ import annotations

from ._run import run


def test_copies_common_to_every_item() -> None:
    out = run(
        "transform_dispatch",
        meta={"common_input": ["s"], "item_output": ["t"]},
        common={"s": "x"},
        items=[{}, {}],
    )
    assert out.item_write_map() == {0: {"t": "x"}, 1: {"t": "x"}}


def test_without_fields_does_nothing() -> None:
    assert run("transform_dispatch", items=[{}]).used() == (False,) * 5
