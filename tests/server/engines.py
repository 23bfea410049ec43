"""The engine the server tests run: the real one when it is there, else the test double.

``TrackedEngine`` counts its instances and closes. With the real engine, the
test-only operator ``test_gate`` (an observe operator marked blocking, which
holds a request until its :class:`Gate` opens) is registered in the default
operator registry.
"""

from __future__ import annotations

from typing import Any

from pineapple import Context, ParamSpec
from pineapple import engine as _engine_module

from .fakes import GATES, FakeEngine

REAL_ENGINE = hasattr(_engine_module, "Engine")

if REAL_ENGINE:
    from pineapple.engine import (
        Engine as _Base,
    )
    from pineapple.engine import (
        Operator,
        OperatorInput,
        OperatorOutput,
        OperatorSchema,
        default_operator_registry,
        register_operator,
    )

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
else:
    _Base = FakeEngine  # type: ignore[assignment,misc]


class TrackedEngine(_Base):  # type: ignore[misc,valid-type]
    """The engine under test, counting instances and closes."""

    instances: list[TrackedEngine] = []

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.closes = 0
        TrackedEngine.instances.append(self)

    def close(self) -> None:
        self.closes += 1
        super().close()
