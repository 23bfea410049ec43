"""Test helpers for the server tests: gates, counting resource types, config builders.

Resource values are counted (fetches, closes) so that carry-over and
retirement can be asserted exactly; gates hold a request inside an operator
so that an in-flight request can be observed across a swap or a shutdown.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from pineapple import ExecutionError, ParamSpec, resource


def file_gate(folder: str, timeout: float = 20.0) -> None:
    """Cross-process gate: create ``folder/entered``, wait until ``folder/go`` exists."""
    base = Path(folder)
    (base / "entered").touch()
    deadline = time.monotonic() + timeout
    while not (base / "go").exists():
        if time.monotonic() > deadline:
            raise ExecutionError("test file gate was never opened")
        time.sleep(0.01)


class Gate:
    """Blocks a request inside an operator: ``entered`` is set on arrival, waits for ``go``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()

    def pass_through(self, timeout: float = 10.0) -> None:
        self.entered.set()
        if not self.go.wait(timeout):
            raise ExecutionError("test gate was never opened")


GATES: dict[str, Gate] = {}


class TrackedList(list[Any]):
    """A resource value (a list of items) that counts its closes."""

    def __init__(self, items: list[Any], tracker: Tracker, name: str) -> None:
        super().__init__(items)
        self.tracker = tracker
        self.name = name
        self.closes = 0

    def close(self) -> None:
        self.closes += 1
        self.tracker.closed(self)


class Tracker:
    """Counts fetches and closes per resource name; can gate a fetch."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fetches: Counter[str] = Counter()
        self.closed_values: list[TrackedList] = []
        self.fetch_gates: dict[str, Gate] = {}

    def fetched(self, name: str) -> None:
        with self.lock:
            self.fetches[name] += 1
        gate = self.fetch_gates.get(name)
        if gate is not None:
            gate.pass_through()

    def closed(self, value: TrackedList) -> None:
        with self.lock:
            self.closed_values.append(value)


def tracked_registry(tracker: Tracker) -> resource.Registry:
    """An isolated registry with ``test_items`` (a list of items; ``fail`` makes it fail)."""
    registry = resource.Registry()

    def factory(params: dict[str, Any]) -> resource.Fetcher:
        name = params["label"]

        def fetch() -> TrackedList:
            tracker.fetched(name)
            if params["fail"]:
                raise RuntimeError(f"cannot reach {params['dsn']}")
            return TrackedList(params["items"] or [], tracker, name)

        return fetch

    registry.register(
        resource.ResourceSchema(
            name="test_items",
            description="A list of items, for server tests.",
            default_interval=-1,
            params={
                "label": ParamSpec(type="string", required=True),
                "items": ParamSpec(type="list"),
                "password": ParamSpec(type="string"),
                "fail": ParamSpec(type="bool", default=False),
                "dsn": ParamSpec(type="string", default="mysql://app:hunter2@db/x"),
            },
        ),
        factory,
    )
    return registry


def unified_config(
    tag: str,
    *,
    resources: Mapping[str, Mapping[str, Any]] | None = None,
    recall_from: str | None = None,
    gate: str | None = None,
    extra_ops: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A valid unified config whose static recall yields one item tagged ``tag``."""
    meta = {"common_input": [], "common_output": [], "item_input": [], "item_output": ["id", "tag"]}
    operators: dict[str, Any] = {
        "static": {
            "type_name": "recall_static",
            "items": [{"id": "static", "tag": tag}],
            "$metadata": meta,
        }
    }
    stages = ["static"]
    if recall_from is not None:
        operators["from_resource"] = {
            "type_name": "recall_resource",
            "resource_name": recall_from,
            "$metadata": meta,
        }
        stages.append("from_resource")
    if gate is not None:
        operators["gate"] = {"type_name": "test_gate", "gate": gate}
        stages.append("gate")
    for name, op in (extra_ops or {}).items():
        operators[name] = op
        stages.append(name)
    root: dict[str, Any] = {
        "_PINEAPPLE_VERSION": 1,
        "_PINEAPPLE_CREATE_TIME": f"2026-01-01T00:00:00Z/{tag}",
        "pipeline_config": {"operators": operators},
        "pipeline_group": {"main": {"pipeline": stages}},
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": ["id", "tag"],
        },
    }
    if resources is not None:
        root["resource_config"] = {name: dict(entry) for name, entry in resources.items()}
    return root


def items_resource(label: str, tag: str, **params: Any) -> dict[str, Any]:
    """A ``test_items`` entry yielding one item ``{"id": label, "tag": tag}``."""
    return {
        "type": "test_items",
        "interval": -1,
        "params": {"label": label, "items": [{"id": label, "tag": tag}], **params},
    }


def dump(config: Mapping[str, Any]) -> bytes:
    return orjson.dumps(config, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)


class FakeTransport(asyncio.Transport):
    """What an HTTP protocol writes, and whether it closed (no socket), for in-process tests."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = asyncio.Event()
        self.protocol: asyncio.BaseProtocol | None = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 4242), "sockname": ("127.0.0.1", 80)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed.set()

    def is_closing(self) -> bool:
        return self.closed.is_set()

    def get_protocol(self) -> asyncio.BaseProtocol:
        assert self.protocol is not None
        return self.protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass
