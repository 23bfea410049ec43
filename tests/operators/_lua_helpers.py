"""Shared helpers of the Lua operator tests: build and run ``transform_by_lua`` directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import pineapple.operators  # noqa: F401  (registers transform_by_lua)
from pineapple import Context
from pineapple.engine import OperatorInput, OperatorOutput, build_operator
from pineapple.operators._lua import LuaBackend, available_backends
from pineapple.operators._lua import _sandbox as _lua_sandbox
from pineapple.operators.transform_by_lua import TransformByLua

from ..conformance._fixtures import fixtures_dir

ROOT = Path(__file__).resolve().parents[2]


def load_fixture(relative: str) -> dict[str, Any] | None:
    """One fixture file, parsed, or None when the fixture directory is absent."""
    base = fixtures_dir()
    if base is None or not (base / relative).is_file():
        return None
    data: dict[str, Any] = orjson.loads((base / relative).read_bytes())
    return data


def lua_op(
    script: str,
    *,
    item: str = "",
    common: str = "",
    common_input: tuple[str, ...] = (),
    item_input: tuple[str, ...] = (),
    common_output: tuple[str, ...] = (),
    item_output: tuple[str, ...] = (),
    name: str = "lua_test",
    timeout_ms: int | None = None,
) -> TransformByLua:
    """A built and bound ``transform_by_lua`` operator (``timeout_ms``: the operator's own
    default unless given; a test whose bound is not time gives a long one, so a loaded
    machine cannot stop it by the clock first)."""
    params: dict[str, Any] = {
        "lua_script": script,
        "function_for_item": item,
        "function_for_common": common,
    }
    if timeout_ms is not None:
        params["timeout_ms"] = timeout_ms
    op, _ = build_operator(
        "transform_by_lua",
        params,
        {
            "common_input": list(common_input),
            "item_input": list(item_input),
            "common_output": list(common_output),
            "item_output": list(item_output),
        },
        name=name,
    )
    assert isinstance(op, TransformByLua)
    return op


def run(
    op: TransformByLua,
    common: dict[str, Any] | None = None,
    items: list[dict[str, Any]] | None = None,
) -> OperatorOutput:
    """Execute ``op`` once on ``common`` and ``items``; the collected writes."""
    out = OperatorOutput()
    op.execute(Context(), OperatorInput(common or {}, items or []), out)
    return out


@pytest.fixture(params=available_backends(), ids=lambda b: b.name)
def each_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> LuaBackend:
    """Run the test once per available Lua backend (operators built inside use it)."""
    backend: LuaBackend = request.param
    monkeypatch.setattr(_lua_sandbox, "_DEFAULT", backend)
    return backend
