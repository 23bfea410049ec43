"""Config parsing and structural checks (messages as the public engines word them)."""

from __future__ import annotations

import pytest

from pineapple import ConfigError, RegistryError, ValidationError
from pineapple.engine import Engine

from ._configs import config, op

SIZE = op("transform_size", meta={"common_output": ["n"]})


def test_accepts_bytes_str_and_dict() -> None:
    import orjson

    cfg = config({"size": SIZE})
    for form in (cfg, orjson.dumps(cfg), orjson.dumps(cfg).decode()):
        assert Engine(form).operators == ["size"]


def test_invalid_json() -> None:
    with pytest.raises(ConfigError, match="pine: config error: JSON parse error"):
        Engine(b"{")


def test_shape_errors_name_the_operator() -> None:
    with pytest.raises(ConfigError, match='operator "size"'):
        Engine(config({"size": {**SIZE, "$metadata": {"common_output": "n"}}}))


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (config({}), "pipeline_config.operators is empty"),
        ({**config({"size": SIZE}), "pipeline_group": {}}, "pipeline_group is empty"),
        (config({"size": {"$metadata": {}}}), 'operator "size": missing type_name'),
        (config({"size": {**SIZE, "sources": ["ghost"]}}), 'undefined operator "ghost"'),
        (config({"size": {**SIZE, "skip": "flag"}}), "must start with '_'"),
        (config({"size": {**SIZE, "skip": ["_f"]}}), "must also appear in $metadata.common_input"),
        (config({"size": SIZE}, ["size", "size"]), "referenced more than once"),
        (config({"size": SIZE}, ["nope"]), "neither an operator nor a sub-flow"),
        (
            config(
                {"size": SIZE},
                ["loop"],
                pipeline_config={"pipeline_map": {"loop": {"pipeline": ["loop"]}}},
            ),
            'cycle detected in sub-flow expansion: "loop"',
        ),
        (
            {
                **config({"size": SIZE}),
                "pipeline_group": {"a": {"pipeline": []}, "b": {"pipeline": []}},
            },
            '"main" entry or exactly one entry',
        ),
    ],
)
def test_config_errors(cfg: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Engine(cfg)
    assert message in str(info.value)
    assert str(info.value).startswith("pine: config error: ")


def test_sub_flows_expand_in_order_and_single_group_is_the_entry() -> None:
    cfg = config(
        {
            "a": op("transform_size", meta={"common_output": ["a"]}),
            "b": op("transform_size", meta={"common_output": ["b"]}),
            "c": op("transform_size", meta={"common_output": ["c"]}),
        },
        ["outer"],
        pipeline_config={
            "pipeline_map": {
                "outer": {"pipeline": ["b", "inner"]},
                "inner": {"pipeline": ["c", "a"]},
            }
        },
    )
    cfg["pipeline_group"] = {"only": cfg["pipeline_group"]["main"]}
    assert Engine(cfg).operators == ["b", "c", "a"]


def test_forward_source_reference_is_a_validation_error() -> None:
    cfg = config(
        {"a": {**SIZE, "sources": ["b"]}, "b": op("transform_size", meta={"common_output": ["m"]})}
    )
    with pytest.raises(ValidationError, match="forward reference"):
        Engine(cfg)


def test_unknown_type_and_bad_params_are_registry_errors() -> None:
    with pytest.raises(RegistryError, match="operator type not registered"):
        Engine(config({"x": op("no_such_op")}))
    with pytest.raises(RegistryError, match='required parameter "direction" missing'):
        Engine(config({"x": op("transform_copy")}))


def test_templated_param_must_be_a_bare_marker_of_a_templatable_param() -> None:
    with pytest.raises(ConfigError, match=r"must be a bare \{\{field\}\} marker"):
        Engine(
            config(
                {
                    "t": op(
                        "transform_redis_get",
                        resource_name="r",
                        key_prefix="x{{n}}",
                        meta={"common_output": ["r", "hit"]},
                    )
                }
            )
        )
    with pytest.raises(ConfigError, match="not declared templatable"):
        Engine(config({"t": op("observe_log", log_prefix="{{p}}")}))


def test_data_parallel_rules() -> None:
    with pytest.raises(ValidationError, match="only supported for Transform operators, got Filter"):
        Engine(config({"t": op("filter_truncate", top_n=1, data_parallel=2)}))
    with pytest.raises(ValidationError, match="ConcurrentSafe"):
        Engine(
            config(
                {
                    "t": op(
                        "transform_normalize",
                        data_parallel=2,
                        meta={"item_input": ["x"], "item_output": ["y"]},
                    )
                }
            )
        )
    with pytest.raises(ValidationError, match=r"requires empty \$metadata\.common_output"):
        Engine(config({"t": op("transform_size", data_parallel=2, meta={"common_output": ["n"]})}))


def test_unused_operators_are_not_built() -> None:
    cfg = config({"size": SIZE, "broken": op("transform_copy")}, ["size"])
    assert Engine(cfg).operators == ["size"]
