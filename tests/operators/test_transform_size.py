from __future__ import annotations

from ._run import run


def test_writes_item_count() -> None:
    out = run("transform_size", meta={"common_output": ["n"]}, items=[{}, {}, {}])
    assert out.common_writes == {"n": 3}
