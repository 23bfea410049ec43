from __future__ import annotations

from ._run import run

META = {"common_input": ["page", "size"]}


def test_keeps_one_page() -> None:
    out = run("filter_paginate", meta=META, common={"page": 1, "size": 2}, items=[{}] * 5)
    assert out.removed == {0, 1, 4}


def test_defaults_for_bad_values() -> None:
    out = run("filter_paginate", meta=META, common={"page": -1, "size": "x"}, items=[{}] * 12)
    assert out.removed == {10, 11}


def test_a_page_past_the_end_removes_every_item() -> None:
    out = run("filter_paginate", meta=META, common={"page": 3, "size": 2}, items=[{}] * 5)
    assert out.removed == {0, 1, 2, 3, 4}
    out = run("filter_paginate", meta=META, common={"page": 0, "size": 9}, items=[{}] * 5)
    assert out.removed == set()
