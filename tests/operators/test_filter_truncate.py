from __future__ import annotations

import pytest

from pineapple import RegistryError

from ._run import run


def test_keeps_first_n_and_uses_templated_value() -> None:
    items: list[dict[str, int]] = [{}] * 5
    assert run("filter_truncate", {"top_n": 2}, items=items).removed == {2, 3, 4}
    assert run(
        "filter_truncate", {"top_n": "{{k}}"}, items=items, templated={"top_n": 4}
    ).removed == {4}
    assert run("filter_truncate", {"top_n": 9}, items=items).removed is None


@pytest.mark.parametrize(
    ("top_n", "message"),
    [
        ("x", 'top_n must be numeric \\(an integer\\), got string "x"'),
        (None, "top_n must be numeric \\(an integer\\), got null"),
        (True, "top_n must be numeric \\(an integer\\), got true"),
        (2.5, "top_n must be numeric \\(an integer\\), got float 2.5"),
        (-1, "non-negative"),
    ],
)
def test_bad_top_n(top_n: object, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        run("filter_truncate", {"top_n": top_n})


def test_negative_templated_value_fails_at_execute() -> None:
    with pytest.raises(ValueError, match="top_n must be non-negative, got -3"):
        run("filter_truncate", {"top_n": "{{k}}"}, items=[{}], templated={"top_n": -3})
