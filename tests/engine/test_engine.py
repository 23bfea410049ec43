"""Executing requests: contract checks, skip guards, field modes, templating, errors."""

from __future__ import annotations

import copy
import math
import threading
from typing import Any

import pytest

from pineapple import (
    Context,
    ExecutionError,
    ParamSpec,
    PineappleError,
    RegistryError,
    ValidationError,
)
from pineapple.engine import (
    Engine,
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorRegistry,
    OperatorSchema,
    UnknownGroupError,
)

from ._configs import config, op

RECALL = op(
    "recall_static",
    items=[{"id": "a", "s": 1}, {"id": "b", "s": 3}, {"id": "c", "s": 2}],
    meta={"item_output": ["id", "s"]},
)


class _Probe(Operator):
    """A test operator whose execute is supplied per test."""

    concurrent_safe = True
    run: Any = None
    closed = 0

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        type(self).run(self, ctx, inp, out)

    def close(self) -> None:
        type(self).closed += 1


def _registry(kind: str = "transform", **params: ParamSpec) -> OperatorRegistry:
    reg = OperatorRegistry()
    reg.register(OperatorSchema("probe", kind, "test probe", params), _Probe)  # type: ignore[arg-type]
    return reg


def test_contract_projection_and_source_field() -> None:
    engine = Engine(config({"r": RECALL}, contract={"item_output": ["id", "_source", "nope"]}))
    got = engine.execute(Context(), {"common": {}})
    assert got == {
        "common": {},
        "items": [
            {"id": "a", "_source": "r"},
            {"id": "b", "_source": "r"},
            {"id": "c", "_source": "r"},
        ],
    }


@pytest.mark.parametrize(
    ("promises", "answer"),
    [
        ([None], ["p", "p"]),  # no promise: written
        (["p"], ["p", "kept"]),  # the step's name promised: trusted, not written
        (["other"], ["p", "p"]),  # another name: written over
        (["p", "x"], ["p", "p"]),  # two calls that disagree: no promise left
        (["p", "p"], ["p", "kept"]),
    ],
)
def test_a_recall_steps_source_is_written_unless_its_items_promise_it(
    promises: list[str | None], answer: list[str]
) -> None:
    def run(self: Any, ctx: Any, inp: OperatorInput, out: OperatorOutput) -> None:
        out.add_items([{"id": 0, "_source": "p"}], source=promises[0])
        for promised in promises[1:]:
            out.add_items([{"id": 1, "_source": "kept"}], source=promised)
        if len(promises) == 1:
            out.add_items([{"id": 1, "_source": "kept"}], source=promises[0])

    _Probe.run = run
    cfg = config(
        {"p": op("probe", recall=True, meta={"item_output": ["id"]})},
        contract={"item_output": ["_source"]},
    )
    got = Engine(cfg, registry=_registry("recall")).execute(None, {"common": {}})
    assert [row["_source"] for row in got["items"]] == answer


def test_a_flow_without_item_outputs_answers_an_empty_object_per_item() -> None:
    engine = Engine(config({"r": RECALL}))  # no item_output in the contract
    first = engine.execute(Context(), {"common": {}})
    assert first == {"common": {}, "items": [{}, {}, {}]}
    # One shared empty dict (the result is read-only), and no run writes into it.
    assert len({id(row) for row in first["items"]}) == 1
    again = engine.execute(Context(), {"common": {}, "items": [{"id": "x"}]})
    assert again["items"] == [{}, {}, {}, {}]
    assert first["items"] == [{}, {}, {}]


def test_request_is_not_mutated() -> None:
    engine = Engine(
        config(
            {
                "r": RECALL,
                "d": op("transform_dispatch", meta={"common_input": ["u"], "item_output": ["u"]}),
            },
            contract={"item_output": ["id", "u"]},
        )
    )
    request = {"common": {"u": 7}, "items": [{"id": "z"}]}
    before = copy.deepcopy(request)
    got = engine.execute(None, request)
    assert request == before
    assert got["items"][0] == {"id": "z", "u": 7}


def test_contract_violations() -> None:
    engine = Engine(config({"r": RECALL}, contract={"common_input": ["uid"], "item_input": ["id"]}))
    with pytest.raises(ValidationError, match='missing required common input field "uid"'):
        engine.execute(None, {"common": {}})
    with pytest.raises(ValidationError, match='item\\[1\\] missing required item input field "id"'):
        engine.execute(None, {"common": {"uid": 1}, "items": [{"id": 1}, {}]})
    with pytest.raises(ValidationError, match=r"request\.Common must not be nil"):
        engine.execute(None, {"items": []})


@pytest.mark.parametrize(
    ("flag", "skipped"), [(True, True), (0, True), ("", True), (False, False), (None, False)]
)
def test_skip_guard_truthiness(flag: Any, skipped: bool) -> None:
    engine = Engine(
        config(
            {
                "t": op("filter_truncate", top_n=1, skip="_if_1", meta={"common_input": ["_if_1"]}),
                "r": RECALL,
            },
            ["r", "t"],
            contract={"item_output": ["id"]},
        )
    )
    common = {} if flag is None else {"_if_1": flag}
    assert len(engine.execute(None, {"common": common})["items"]) == (3 if skipped else 1)


def test_skip_fields_are_hidden_from_the_operator() -> None:
    seen: list[dict[str, Any]] = []
    _Probe.run = lambda self, ctx, inp, out: seen.append(dict(inp.common))
    cfg = config({"p": op("probe", skip=["_if"], meta={"common_input": ["_if", "x"]})})
    Engine(cfg, registry=_registry()).execute(None, {"common": {"_if": False, "x": 1}})
    assert seen == [{"x": 1}]


def test_field_modes_strict_defaulted_nullable() -> None:
    seen: list[Any] = []
    _Probe.run = lambda self, ctx, inp, out: seen.append((dict(inp.common), inp.column("i")))
    cfg = config(
        {
            "p": op(
                "probe",
                strict_common=["s"],
                common_defaults={"d": 5},
                item_defaults={"i": 0},
                meta={"common_input": ["s", "d", "n"], "item_input": ["i"]},
            )
        }
    )
    engine = Engine(cfg, registry=_registry())
    engine.execute(None, {"common": {"s": 1, "d": None, "n": None}, "items": [{"i": None}, {}]})
    assert seen == [({"s": 1, "d": 5, "n": None}, [0, 0])]
    with pytest.raises(ExecutionError, match='required field "s" is nil in common'):
        engine.execute(None, {"common": {"s": None, "n": 1}})
    with pytest.raises(ExecutionError, match='required field "n" is missing in common'):
        engine.execute(None, {"common": {"s": 1}})


def test_item_field_checks_report_the_first_item_in_item_major_order() -> None:
    _Probe.run = lambda self, ctx, inp, out: None
    cfg = config({"p": op("probe", strict_item=["b"], meta={"item_input": ["a", "b"]})})
    engine = Engine(cfg, registry=_registry())
    with pytest.raises(ExecutionError) as info:
        engine.execute(None, {"common": {}, "items": [{"a": 1, "b": 1}, {"b": None}, {}]})
    assert (
        str(info.value)
        == 'pine: execution error in operator "p": required field "b" is nil on item[1]'
    )


def test_templated_param_resolves_per_request_and_reports_missing_field() -> None:
    engine = Engine(
        config(
            {
                "r": RECALL,
                "t": op(
                    "filter_truncate", top_n="{{limit}}", meta={"common_input_template": ["limit"]}
                ),
            },
            contract={"item_output": ["id"]},
        )
    )
    assert len(engine.execute(None, {"common": {"limit": 2.0}})["items"]) == 2
    with pytest.raises(ExecutionError, match='references common field "limit" which is missing'):
        engine.execute(None, {"common": {}})
    with pytest.raises(ExecutionError, match=r'cannot coerce "2\.5" to int64'):
        engine.execute(None, {"common": {"limit": 2.5}})


def test_operator_exception_is_wrapped_with_cause_and_partial_result() -> None:
    boom = KeyError("x")

    def run(self: Any, ctx: Any, inp: Any, out: Any) -> None:
        raise boom

    _Probe.run = run
    cfg = config(
        {"r": RECALL, "p": op("probe", meta={"item_input": ["id"]})},
        contract={"item_output": ["id"]},
    )
    with pytest.raises(ExecutionError) as info:
        Engine(cfg, registry=_with_recall(_registry())).execute(None, {"common": {}})
    err = info.value
    assert err.operator == "p" and err.__cause__ is boom
    assert str(err).startswith('pine: execution error in operator "p": ')
    assert err.result == {"common": {}, "items": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}


def _with_recall(reg: OperatorRegistry) -> OperatorRegistry:
    from pineapple.operators import recall_static

    reg.register(recall_static.SCHEMA, recall_static.RecallStatic)
    return reg


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda out: out.set_common("c", math.nan), 'common write: field "c": NaN/Inf'),
        (lambda out: out.set_item(0, "f", math.inf), 'item[0] write: field "f": NaN/Inf'),
        (lambda out: out.set_column("f", [1.0, -math.inf]), 'item[1] write: field "f": NaN/Inf'),
        (lambda out: out.set_item(9, "f", 1), "SetItem index 9 out of range [0, 2)"),
        (lambda out: out.set_column("f", [1]), "length 1 does not match item count 2"),
    ],
)
def test_invalid_writes_fail_the_request(write: Any, message: str) -> None:
    _Probe.run = lambda self, ctx, inp, out: write(out)
    engine = Engine(config({"p": op("probe")}), registry=_registry())
    with pytest.raises(ExecutionError) as info:
        engine.execute(None, {"common": {}, "items": [{}, {}]})
    assert message in str(info.value)


def test_a_fill_of_a_bad_float_fails_as_a_column_write_does() -> None:
    _Probe.run = lambda self, ctx, inp, out: out.fill_column("f", math.nan, len(inp))
    engine = Engine(config({"p": op("probe")}), registry=_registry())
    with pytest.raises(ExecutionError, match=r'item\[0\] write: field "f": NaN/Inf'):
        engine.execute(None, {"common": {}, "items": [{}, {}]})


def test_reorder_must_be_a_permutation() -> None:
    _Probe.run = lambda self, ctx, inp, out: out.set_item_order([0, 0])
    engine = Engine(config({"p": op("probe")}), registry=_registry("reorder"))
    with pytest.raises(ExecutionError, match="duplicate index 0"):
        engine.execute(None, {"common": {}, "items": [{}, {}]})


@pytest.mark.parametrize("checked", [False, True])
def test_a_reorder_is_applied_checked_or_promised(checked: bool) -> None:
    _Probe.run = lambda self, ctx, inp, out: out.set_item_order([1, 0], checked=checked)
    engine = Engine(
        config({"p": op("probe")}, contract={"item_output": ["x"]}), registry=_registry("reorder")
    )
    got = engine.execute(None, {"common": {}, "items": [{"x": 0}, {"x": 1}]})
    assert got["items"] == [{"x": 1}, {"x": 0}]


def test_a_promised_order_of_the_wrong_length_fails_the_request() -> None:
    _Probe.run = lambda self, ctx, inp, out: out.set_item_order([0], checked=True)
    engine = Engine(config({"p": op("probe")}), registry=_registry("reorder"))
    with pytest.raises(ExecutionError, match="length 1 does not match item count 2"):
        engine.execute(None, {"common": {}, "items": [{}, {}]})


def test_kind_violation() -> None:
    _Probe.run = lambda self, ctx, inp, out: out.add_item({"x": 1})
    engine = Engine(config({"p": op("probe")}), registry=_registry("transform"))
    with pytest.raises(
        ExecutionError, match=r"type violation: operator type Transform must not call \[AddItem\]"
    ):
        engine.execute(None, {"common": {}})


def test_additive_and_mutating_markers_are_exclusive() -> None:
    _Probe.run = lambda self, ctx, inp, out: None
    with pytest.raises(RegistryError, match="mutually exclusive"):
        Engine(config({"p": op("probe", mutates_row_set=True)}), registry=_registry("recall"))


def test_data_parallel_shards_merge_with_offsets() -> None:
    def run(self: Any, ctx: Any, inp: OperatorInput, out: OperatorOutput) -> None:
        out.set_column("y", [v * 10 for v in inp.column("x")])
        out.warn(f"shard of {len(inp)}")

    _Probe.run = run
    engine = Engine(
        config(
            {"p": op("probe", data_parallel=3, meta={"item_input": ["x"], "item_output": ["y"]})},
            contract={"item_output": ["y"]},
        ),
        registry=_registry(),
    )
    result = engine.run(None, {"common": {}, "items": [{"x": i} for i in range(7)]})
    assert [row["y"] for row in result.items] == [0, 10, 20, 30, 40, 50, 60]
    assert result.warnings == ['operator "p": shard of 3']


def test_warnings_are_collected_in_run() -> None:
    _Probe.run = lambda self, ctx, inp, out: out.warn("careful")
    result = Engine(config({"p": op("probe")}), registry=_registry()).run(None, {"common": {}})
    assert result.warnings == ['operator "p": careful'] and result.error is None


def test_close_closes_each_operator_once_and_blocking_flag() -> None:
    _Probe.closed = 0
    engine = Engine(config({"p": op("probe"), "q": op("probe")}), registry=_registry())
    assert engine.blocking is False
    engine.close()
    engine.close()
    assert _Probe.closed == 2
    redis_engine = Engine(
        config(
            {
                "g": op(
                    "transform_redis_get",
                    resource_name="r",
                    key_prefix="k:",
                    meta={"common_output": ["v", "hit"]},
                )
            }
        )
    )
    assert redis_engine.blocking is True


def test_concurrent_executions_do_not_share_state() -> None:
    engine = Engine(
        config(
            {
                "r": RECALL,
                "d": op("transform_dispatch", meta={"common_input": ["u"], "item_output": ["u"]}),
                "s": op("reorder_sort", meta={"item_input": ["s"]}),
            },
            contract={"item_output": ["id", "u"]},
        )
    )
    start = threading.Barrier(4)
    failures: list[str] = []

    def worker(k: int) -> None:
        start.wait()
        for _ in range(200):
            got = engine.execute(None, {"common": {"u": k}})
            if got["items"] != [{"id": i, "u": k} for i in ("b", "c", "a")]:
                failures.append(repr(got))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_execution_order_is_a_topological_order_of_the_graph() -> None:
    engine = Engine(
        config(
            {
                "r": RECALL,
                "n": op("transform_normalize", meta={"item_input": ["s"], "item_output": ["z"]}),
                "t": op("filter_truncate", top_n=2),
                "z": op("transform_size", meta={"common_output": ["k"]}),
            }
        )
    )
    pos = {name: i for i, name in enumerate(engine.operators)}
    edges = engine.graph.edges()
    assert ("r", "n") in edges and ("n", "t") in edges and ("t", "z") in edges
    assert all(pos[a] < pos[b] for a, b in edges)


def _two_groups() -> dict[str, Any]:
    meta = {"item_output": ["id"]}
    return {
        "pipeline_config": {
            "operators": {
                "feed": {"type_name": "recall_static", "items": [{"id": "f"}], "$metadata": meta},
                "search": {
                    "type_name": "recall_static",
                    "items": [{"id": "s"}],
                    "$metadata": meta,
                },
            }
        },
        "pipeline_group": {"main": {"pipeline": ["feed"]}, "search": {"pipeline": ["search"]}},
        "flow_contract": {"item_output": ["id"]},
    }


def test_a_request_may_name_another_pipeline_group() -> None:
    engine = Engine(_two_groups())
    request: dict[str, Any] = {"common": {}, "items": []}
    assert engine.groups == ["main", "search"]
    assert engine.default_group == "main"
    assert engine.execute(None, request)["items"] == [{"id": "f"}]
    assert engine.execute(None, request, "main")["items"] == [{"id": "f"}]
    assert engine.execute(None, request, "search")["items"] == [{"id": "s"}]
    with pytest.raises(UnknownGroupError, match="'nope'"):
        engine.execute(None, request, "nope")


def test_every_group_is_compiled_up_front() -> None:
    config = _two_groups()
    config["pipeline_group"]["search"] = {"pipeline": ["missing_op"]}
    with pytest.raises(PineappleError, match="missing_op"):
        Engine(config)
