"""A ``--plugin`` for the process-level tests (``pineapple serve/check``).

It registers the ``test_items`` resource type in the default registry (its
values append ``close <label> <tag> <pid>-<serial>`` to the file named by env
``PINEAPPLE_TEST_CLOSE_LOG`` when closed; a fetch fails with ``fail``, or while
the file ``fail_if_exists`` names exists; with ``hold_until_exists`` it first
waits, bounded, for that file, in processes whose name starts with ``hold_in``)
the ``test_file_gate``
operator (holds a request until a file appears) and the ``test_scaled`` operator
(trusts its ``float`` param ``factor`` on every request).
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from pineapple import Context, ParamSpec, resource
from pineapple.engine import (
    Operator,
    OperatorInput,
    OperatorOutput,
)
from tests._operators import register_test_operator

from .fakes import file_gate


class FileGateOperator(Operator):
    """Holds a request until ``<folder>/go`` exists (process tests only)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.folder = params["folder"]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        file_gate(self.folder)


register_test_operator(
    "test_file_gate",
    FileGateOperator,
    "holds a request until a file appears.",
    params={"folder": ParamSpec(type="string", required=True)},
    blocking=True,
)


class ScaledOperator(Operator):
    """Multiplies by ``factor`` per request: a string ``factor`` fails every request."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.factor = params["factor"]  # trusts its schema, as a plugin may

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        float(self.factor * 2.0)


register_test_operator(
    "test_scaled",
    ScaledOperator,
    "multiplies by its float param factor on every request.",
    params={"factor": ParamSpec(type="float", required=True)},
)

_lock = threading.Lock()
_serials = itertools.count(1)


class LoggedList(list[Any]):
    """A list of items whose close is logged to a file."""

    def __init__(self, items: list[Any], label: str) -> None:
        super().__init__(items)
        self.label = label
        self.serial = next(_serials)

    def close(self) -> None:
        path = os.environ.get("PINEAPPLE_TEST_CLOSE_LOG")
        if path:
            tag = self[0].get("tag", "") if self else ""
            with _lock, open(path, "a") as f:
                f.write(f"close {self.label} {tag} {os.getpid()}-{self.serial}\n")


HOLD_SECONDS = 60.0
"""The longest a ``hold_until_exists`` fetch waits for its file."""


def _hold(path: str) -> None:
    """Say this process holds (``<path>.<pid>``), then wait until ``path`` exists.

    Bounded: ``HOLD_SECONDS``, in 20 ms steps (a test's gate, not a product wait)."""
    Path(f"{path}.{os.getpid()}").touch()
    end = time.monotonic() + HOLD_SECONDS
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.02)


def _factory(params: dict[str, Any]) -> resource.Fetcher:
    def fetch() -> LoggedList:
        here = multiprocessing.current_process().name  # "pineapple-worker-0", "pineapple-trial"
        if params["hold_until_exists"] and here.startswith(params["hold_in"]):
            _hold(params["hold_until_exists"])
        marker = params["fail_if_exists"]
        if params["fail"] or (marker and os.path.exists(marker)):
            raise RuntimeError(f"cannot reach {params['dsn']}")
        return LoggedList(params["items"] or [], params["label"])

    return fetch


if resource.lowlevel.default_registry().get("test_items") is None:
    resource.register_resource(
        resource.ResourceSchema(
            name="test_items",
            description="A list of items whose close is logged (process tests).",
            default_interval=-1,
            params={
                "label": ParamSpec(type="string", required=True),
                "items": ParamSpec(type="list"),
                "fail": ParamSpec(type="bool", default=False),
                "fail_if_exists": ParamSpec(type="string", default=""),
                "hold_until_exists": ParamSpec(type="string", default=""),
                "hold_in": ParamSpec(type="string", default=""),  # a process-name prefix
                "password": ParamSpec(type="string"),
                "dsn": ParamSpec(type="string", default="mysql://app:hunter2@db/x"),
            },
        ),
        _factory,
    )


class _HttpJsonPrinter:
    """Sizes a value by its ``size`` field (as the plugin of the issue did: fails on None)."""

    def summarize(self, value: Any) -> str:
        return f"http_json: {value['size']} bytes"

    def describe(self, value: Any) -> str:
        return self.summarize(value)

    def size_of(self, value: Any) -> int:
        return int(value["size"])


def _http_json(params: dict[str, Any]) -> resource.Fetcher:
    """GET ``url`` (loopback only), saying which process asks (header ``X-Pineapple-Pid``)."""

    def fetch() -> dict[str, Any]:
        request = urllib.request.Request(
            params["url"], headers={"X-Pineapple-Pid": str(os.getpid())}
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            body = answer.read(1 << 20)  # bounded: 1 MiB
        return {"size": len(body), "body": json.loads(body)}

    return fetch


for _name, _codec in (
    ("test_http_json", None),
    ("test_http_json_shared", resource.lowlevel.PickleCodec()),
):
    if resource.lowlevel.default_registry().get(_name) is None:
        resource.register_resource(
            resource.ResourceSchema(
                name=_name,
                description="A JSON document read over HTTP (process tests; shared: with a codec).",
                params={"url": ParamSpec(type="string", required=True)},
                printer=_HttpJsonPrinter(),
                codec=_codec,
            ),
            _http_json,
        )


class SlowBuildOperator(Operator):
    """Its construction holds in processes whose name starts with ``hold_in``: it sleeps
    ``seconds``, or (``gate``) waits for that file; bounded by ``HOLD_SECONDS``. In those
    whose name starts with ``fail_in`` it raises."""

    def __init__(self, params: dict[str, Any]) -> None:
        here = multiprocessing.current_process().name  # "pineapple-worker-0", "pineapple-trial"
        if params["fail_in"] and here.startswith(params["fail_in"]):
            raise RuntimeError(f"test_slow_build cannot be built in {here}")
        if params["hold_in"] and here.startswith(params["hold_in"]):
            if params["gate"]:
                _hold(params["gate"])
            else:
                time.sleep(min(float(params["seconds"]), HOLD_SECONDS))

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        return None


register_test_operator(
    "test_slow_build",
    SlowBuildOperator,
    "an operator whose construction takes long in some processes (slow builds).",
    params={
        "hold_in": ParamSpec(type="string", default=""),  # a process-name prefix
        "seconds": ParamSpec(type="float", default=0.0),
        "gate": ParamSpec(type="string", default=""),
        "fail_in": ParamSpec(type="string", default=""),  # a process-name prefix
    },
)
