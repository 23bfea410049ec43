"""The engine under test: the real ``Engine``, counting instances and closes.

Also registers the test-only operator ``test_gate`` (an observe operator
marked blocking, so the server runs it on a worker thread) that holds a
request until its :class:`~tests.server.fakes.Gate` opens.
"""

from __future__ import annotations

import threading
from typing import Any

from pineapple import Context, ParamSpec
from pineapple.engine import (
    Engine,
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorSchema,
    default_operator_registry,
    register_operator,
)

from .fakes import GATES


class GateOperator(Operator):
    """Holds the request until ``GATES[gate]`` opens (test only)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.gate = params["gate"]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        GATES[self.gate].pass_through()


if default_operator_registry().get("test_gate") is None:
    register_operator(
        OperatorSchema(
            name="test_gate",
            kind="observe",
            description="Test only: holds a request until its gate opens.",
            params={"gate": ParamSpec(type="string", required=True)},
            blocking=True,
        ),
        GateOperator,
    )


THREADS: list[tuple[str, str]] = []
"""``(operator type, thread name)`` recorded by the probe operators."""


def _probe(type_name: str, blocking: bool) -> None:
    class Probe(Operator):
        def __init__(self, params: dict[str, Any]) -> None:
            pass

        def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            THREADS.append((type_name, threading.current_thread().name))

    if default_operator_registry().get(type_name) is None:
        register_operator(
            OperatorSchema(
                name=type_name,
                kind="observe",
                description="Test only: records the thread it runs on.",
                blocking=blocking,
            ),
            Probe,
        )


_probe("test_probe_inline", blocking=False)
_probe("test_probe_blocking", blocking=True)


class TrackedEngine(Engine):
    """The real engine, counting its instances and closes."""

    instances: list[TrackedEngine] = []

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.closes = 0
        TrackedEngine.instances.append(self)

    def close(self) -> None:
        self.closes += 1
        super().close()
