"""``Engine(wrap_execute=...)``: each operator's ``execute`` replaced once, at construction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pineapple.operators  # noqa: F401  (registers the built-in operator types)
from pineapple import Context
from pineapple.engine import Engine, OperatorInput, OperatorOutput

from ._configs import config, op

_Execute = Callable[[Context, OperatorInput, OperatorOutput], None]

CONFIG = config(
    {
        "recall": op(
            "recall_static", items=[{"id": "a"}, {"id": "b"}], meta={"item_output": ["id"]}
        ),
        "size": op("transform_size", meta={"common_output": ["n"]}),
    },
    contract={"common_output": ["n"], "item_output": ["id"]},
)
REQUEST: dict[str, Any] = {"common": {}, "items": []}


def test_each_operator_runs_through_its_wrapper_in_order() -> None:
    wrapped: list[tuple[str, str]] = []
    ran: list[str] = []

    def wrap(name: str, type_name: str, execute: _Execute) -> _Execute:
        wrapped.append((name, type_name))

        def around(ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            ran.append(name)
            execute(ctx, inp, out)

        return around

    engine = Engine(CONFIG, wrap_execute=wrap)
    try:
        assert wrapped == [("recall", "recall_static"), ("size", "transform_size")]  # once each
        answer = engine.execute(None, REQUEST)
        engine.execute(None, REQUEST)
    finally:
        engine.close()
    assert ran == ["recall", "size", "recall", "size"]
    plain = Engine(CONFIG)
    try:
        assert (
            answer
            == plain.execute(None, REQUEST)
            == {"common": {"n": 2}, "items": [{"id": "a"}, {"id": "b"}]}
        )
    finally:
        plain.close()
