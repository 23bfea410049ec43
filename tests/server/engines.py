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
)
from tests._operators import register_test_operator

from .fakes import GATES


class GateOperator(Operator):
    """Holds the request until ``GATES[gate]`` opens (test only)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.gate = params["gate"]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        GATES[self.gate].pass_through()


register_test_operator(
    "test_gate",
    GateOperator,
    "holds a request until its gate opens.",
    params={"gate": ParamSpec(type="string", required=True)},
    blocking=True,
)


THREADS: list[tuple[str, str]] = []
"""``(operator type, thread name)`` recorded by the probe operators."""


def _probe(type_name: str, blocking: bool) -> None:
    class Probe(Operator):
        def __init__(self, params: dict[str, Any]) -> None:
            pass

        def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            THREADS.append((type_name, threading.current_thread().name))

    register_test_operator(type_name, Probe, "records the thread it runs on.", blocking=blocking)


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
