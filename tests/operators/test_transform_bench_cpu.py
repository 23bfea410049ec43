from __future__ import annotations

import pytest

from pineapple import Context, RegistryError
from pineapple.engine import Engine, build_operator
from pineapple.operators.transform_bench_cpu import cpu_work


def test_result_matches_the_public_engines_bit_for_bit() -> None:
    assert cpu_work(2) == 4356611.465081713
    assert cpu_work(0) == 0.0


def test_writes_one_result_per_item() -> None:
    config = {
        "pipeline_config": {
            "operators": {
                "bench": {
                    "type_name": "transform_bench_cpu",
                    "iterations": 1,
                    "$metadata": {"item_output": ["r"]},
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["bench"]}},
        "flow_contract": {"item_input": ["id"], "item_output": ["id", "r"]},
    }
    out = Engine(config).execute(Context(), {"common": {}, "items": [{"id": 1}, {"id": 2}]})
    assert [item["r"] for item in out["items"]] == [cpu_work(1)] * 2


def test_negative_iterations_are_refused() -> None:
    with pytest.raises(RegistryError, match="iterations"):
        build_operator("transform_bench_cpu", {"iterations": -1}, {"item_output": ["r"]})
