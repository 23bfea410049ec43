"""The engine the server tests run: the real one when it is there, else the test double.

``TrackedEngine`` counts its instances and closes. With the real engine, the
test-only operator ``test_gate`` (an observe operator marked blocking, which
holds a request until its :class:`Gate` opens) is registered in the default
operator registry. (Transitional: once the engine is on main, the fallback to
``FakeEngine`` goes away.)
"""

from __future__ import annotations

import importlib
from typing import Any

from pineapple import Context, ParamSpec

from .fakes import GATES, FakeEngine

_api: Any = importlib.import_module("pineapple.engine")
REAL_ENGINE = hasattr(_api, "Engine")


def _register_gate() -> None:
    class GateOperator(_api.Operator):  # type: ignore[misc]
        """Holds the request until ``GATES[gate]`` opens (test only)."""

        def __init__(self, params: dict[str, Any]) -> None:
            self.gate = params["gate"]

        def execute(self, ctx: Context, inp: Any, out: Any) -> None:
            GATES[self.gate].pass_through()

    if _api.default_operator_registry().get("test_gate") is None:
        _api.register_operator(
            _api.OperatorSchema(
                name="test_gate",
                kind="observe",
                description="Test only: holds a request until its gate opens.",
                params={"gate": ParamSpec(type="string", required=True)},
                blocking=True,
            ),
            GateOperator,
        )


if REAL_ENGINE:
    _register_gate()
_Base: Any = _api.Engine if REAL_ENGINE else FakeEngine


class TrackedEngine(_Base):  # type: ignore[misc]
    """The engine under test, counting instances and closes."""

    instances: list[TrackedEngine] = []

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.closes = 0
        TrackedEngine.instances.append(self)

    def close(self) -> None:
        self.closes += 1
        super().close()
