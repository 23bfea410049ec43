from __future__ import annotations

import pytest

from pineapple import RegistryError

from ._run import run


def test_emits_copies_of_items_and_common() -> None:
    items = [{"id": "a"}, {"id": "b"}]
    out = run("recall_static", {"items": items, "set_common": {"rid": "r1"}})
    # The step's name as the engine writes it (run() names the step by its type).
    assert out.added_items == [{**row, "_source": "recall_static"} for row in items]
    assert out.added_items[0] is not items[0]
    assert items == [{"id": "a"}, {"id": "b"}]
    assert out.common_writes == {"rid": "r1"}
    assert out.finite_added is True


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("x", "'items' must be a JSON array, got string"),
        ([1], "items[0] must be an object, got float64"),
    ],
)
def test_bad_items(items: object, message: str) -> None:
    with pytest.raises(RegistryError) as info:
        run("recall_static", {"items": items})
    assert message in str(info.value)


def _flow(items: list[dict[str, object]]) -> dict[str, object]:
    """recall_static, then a transform that writes over a recalled field on item 0."""
    return {
        "pipeline_config": {
            "operators": {
                "recall": {"type_name": "recall_static", "recall": True, "items": items},
                "write": {
                    "type_name": "transform_by_lua",
                    "lua_script": "function f() return 'written' end",
                    "function_for_item": "f",
                    "$metadata": {"item_output": ["id"]},
                },
            },
            "pipeline_map": {"stage": {"pipeline": ["recall", "write"]}},
        },
        "pipeline_group": {"main": {"pipeline": ["stage"]}},
        "flow_contract": {"item_output": ["id", "n", "_source"]},
    }


@pytest.mark.parametrize(
    "items",
    [
        [{"id": "a", "n": 1}, {"n": 2, "id": "b"}],  # one shape: added as columns
        [{"id": "a", "n": 1}, {"id": "b"}],  # two shapes: added as dicts
    ],
)
def test_the_configured_items_are_never_changed_by_a_request(
    items: list[dict[str, object]],
) -> None:
    from pineapple import Context
    from pineapple.engine import Engine
    from pineapple.operators.recall_static import RecallStatic

    with Engine(_flow(items)) as engine:
        op = engine._main.steps[0].op
        assert isinstance(op, RecallStatic)
        assert (op.columns is not None) == (len(items[1]) == 2)
        for _ in range(2):
            got = engine.execute(Context(), {"common": {}, "items": []})
            want = [{**row, "id": "written", "_source": "recall"} for row in items]
            assert got["items"] == want
        if op.columns is not None:
            assert op.columns == {"id": ["a", "b"], "n": [1, 2], "_source": ["recall"] * 2}
        else:
            assert op.items == [{**row, "_source": "recall"} for row in items]


def test_a_row_with_its_own_source_gets_the_step_name() -> None:
    out = run("recall_static", {"items": [{"_source": "x", "id": 1}]})
    assert out.added_items == [{"_source": "recall_static", "id": 1}]
