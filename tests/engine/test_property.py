"""Seeded, bounded property test: random pipelines from the operator schemas.

What needs no second engine: for random configs (operators, params and
``$metadata`` drawn from the registered schemas) and random requests (edge
floats included), ``Engine(config)`` fails only with a ``PineappleError``;
``respond`` never raises; its body is valid JSON with a trailing newline;
and the same config answers byte for byte the same whatever its
``storage_mode`` (``row``/``column``) and with ``data_parallel`` shards on
the operators that allow them. Fixed seed; ``CASES`` configs of at most
``MAX_OPS`` operators, ``REQUESTS`` requests each of at most ``MAX_ITEMS``
items; every execution has a deadline, and the whole test has an alarm.
"""

from __future__ import annotations

import copy
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

import pineapple.operators  # noqa: F401  (registers the built-ins)
from pineapple import Context, ParamSpec, PineappleError
from pineapple.engine import Engine, OperatorSchema, all_operator_schemas, default_operator_registry
from pineapple.engine.http import respond

SEED = 20260113
CASES = 150
REQUESTS = 3
MAX_OPS = 5
MAX_ITEMS = 6
TEST_SECONDS = 240  # the alarm: generous, the test takes a few seconds alone

COMMON = ["x", "y", "s"]
ITEM = ["id", "a", "b"]
EDGE_FLOATS = [
    1e10,
    1e15,
    1e16,
    1.5e17,
    1e20,
    1e21,
    1e22,
    5e-324,
    1.7976931348623157e308,
    -0.0,
    0.0,
    1e-6,
    1.5e-6,
    1e-7,
    0.1 + 0.2,
    100 / 3,
    -1e20,
    2.0**63,
]
LUA_BODIES = [
    "return {X, X * 2}",
    "return X * X",
    "return {k = X, n = {X, -X}}",
    "return tostring(X)",
    "return nil",
    "error('boom')",
    "return X .. 'a'",
    "local t = {} for i = 1, 3 do t[i] = X end return t",
]
INTERNAL = (IndexError, KeyError, AttributeError, TypeError, ZeroDivisionError)
"""Exception types that mean a bug when they cause a refused config."""

# Operators that reach a network resource (nothing is provided here: they
# must degrade or fail by name, never escape).
NETWORK = {"transform_redis_get", "transform_redis_set", "transform_redis_zrangebyscore"}


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"property test over its {seconds} s budget")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _scalar(rng: random.Random) -> Any:
    pick = rng.randrange(7)
    if pick == 0:
        return rng.choice(EDGE_FLOATS)
    if pick == 1:
        return rng.randint(-5, 5)
    if pick == 2:
        return rng.uniform(-100, 100)
    if pick == 3:
        return rng.choice(["", "a", "b<&>", "é", "1", "x,y"])
    if pick == 4:
        return rng.choice([True, False])
    if pick == 5:
        return None
    return rng.choice([*EDGE_FLOATS, 1, 2, 3])


def _value(rng: random.Random, depth: int = 0) -> Any:
    if depth < 2 and rng.random() < 0.2:
        if rng.random() < 0.5:
            return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
        return {rng.choice(ITEM + COMMON): _value(rng, depth + 1) for _ in range(rng.randrange(3))}
    return _scalar(rng)


def _fields(rng: random.Random, pool: list[str], most: int = 2) -> list[str]:
    return rng.sample(pool, rng.randint(0, min(most, len(pool))))


def _param(rng: random.Random, name: str, spec: ParamSpec, meta: dict[str, list[str]]) -> Any:
    if name == "lua_script":
        inputs = meta["common_input"] + meta["item_input"]
        body = rng.choice(LUA_BODIES).replace("X", inputs[0] if inputs else "1")
        return f"function f() {body} end"
    if name in ("function_for_item", "function_for_common"):
        return "f"
    if name == "direction":
        return rng.choice(["common_to_common", "common_to_item", "item_to_common", "item_to_item"])
    if name == "items":
        return [{f: _scalar(rng) for f in _fields(rng, ITEM, 3)} for _ in range(rng.randrange(4))]
    if name in ("iterations", "top_n", "size"):
        return rng.randint(0, 3)
    if spec.default is not None and rng.random() < 0.5:
        return spec.default
    makers: dict[str, Callable[[], Any]] = {
        "string": lambda: rng.choice(["", "first", "asc", "desc", "min_max", "r"]),
        "int": lambda: rng.randint(-2, 5),
        "float": lambda: rng.uniform(-2, 2),
        "bool": lambda: rng.random() < 0.5,
        "list": lambda: [_scalar(rng)],
        "dict": lambda: {},
        "any": lambda: _value(rng),
    }
    return makers[spec.type]()


def _operator(rng: random.Random, schema: OperatorSchema) -> dict[str, Any]:
    meta = {
        "common_input": _fields(rng, COMMON),
        "common_output": _fields(rng, COMMON),
        "item_input": _fields(rng, ITEM),
        "item_output": _fields(rng, ITEM),
    }
    op: dict[str, Any] = {"type_name": schema.name, "$metadata": meta}
    for name, spec in sorted(schema.params.items()):
        if spec.required or rng.random() < 0.3:
            op[name] = _param(rng, name, spec, meta)
    if schema.name == "transform_by_lua":  # exactly one of the two modes
        mode = rng.choice(["function_for_item", "function_for_common"])
        op.pop("function_for_item", None)
        op.pop("function_for_common", None)
        op[mode] = "f"
    return op


def _config(rng: random.Random, schemas: list[OperatorSchema]) -> dict[str, Any]:
    ops = {f"op{i}": _operator(rng, rng.choice(schemas)) for i in range(rng.randint(1, MAX_OPS))}
    return {
        "pipeline_config": {"operators": ops, "pipeline_map": {}},
        "pipeline_group": {"main": {"pipeline": list(ops)}},
        "flow_contract": {
            "common_input": [],
            "common_output": _fields(rng, COMMON, 3),
            "item_input": [],
            "item_output": _fields(rng, ITEM, 3),
        },
    }


def _request(rng: random.Random) -> bytes:
    if rng.random() < 0.05:
        return rng.choice([b"{", b"[]", b'{"common": null}', b'{"common": {"x": 1e400}}'])
    common = {f: _value(rng) for f in _fields(rng, COMMON, 3)}
    count = rng.randrange(MAX_ITEMS)
    items = [{f: _value(rng) for f in _fields(rng, ITEM, 3)} for _ in range(count)]
    return orjson.dumps({"common": common, "items": items})


def _variants(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The same pipeline in row and column storage, and with data_parallel shards."""
    row, column, sharded = (copy.deepcopy(config) for _ in range(3))
    row["storage_mode"] = "row"
    column["storage_mode"] = "column"
    for op in sharded["pipeline_config"]["operators"].values():
        factory = default_operator_registry().factory(op["type_name"])
        if getattr(factory, "concurrent_safe", False):
            op["data_parallel"] = 3
    return [row, column, sharded]


def _answers(config: dict[str, Any], requests: list[bytes]) -> list[tuple[int, bytes]] | None:
    try:
        engine = Engine(config)
    except PineappleError as exc:
        # Refused by name: allowed, unless the cause is a Python slip (the
        # ``tuple index out of range`` of an operator reading a missing field).
        assert not isinstance(exc.__cause__, INTERNAL), repr(exc.__cause__)
        return None
    with engine:
        answers = []
        for body in requests:
            status, out = respond(engine, Context().with_timeout(10.0), body)
            assert out.endswith(b"\n"), out
            orjson.loads(out)  # valid JSON
            answers.append((status, out))
        return answers


def test_random_pipelines_never_escape_respond_and_storage_modes_agree() -> None:
    pytest.importorskip("lupa")
    rng = random.Random(SEED)
    schemas = [s for s in all_operator_schemas() if not s.name.startswith("test_")]
    built = 0
    with _alarm(TEST_SECONDS):
        for case in range(CASES):
            config = _config(rng, schemas)
            requests = [_request(rng) for _ in range(REQUESTS)]
            results = [_answers(v, requests) for v in _variants(config)]
            ctx = f"case {case}: {orjson.dumps(config).decode()[:2000]}"
            assert results[0] == results[1], ctx
            if results[0] is not None and results[2] is not None:
                assert results[0] == results[2], ctx
            built += results[0] is not None
    # The generator must reach the engine, not only config errors.
    assert built >= CASES // 4, built
