"""Helpers for the masking tests: a real ``pineapple serve`` process and configs.

The server binds 127.0.0.1 on a port the OS picks (read from its log); its
stderr is collected line by line so that tests can search the log for a
secret. ``Serve`` is a context manager that always kills the process.

Importing this module (``--plugin tests.reliability._masking``) registers the
``test_quote_resource`` operator: it logs, warns and (with ``fail``) raises a
message quoting the string value of a resource, as a careless operator or a
driver error quoting an address would.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from pineapple import Context, ExecutionError, ParamSpec, resource
from pineapple.engine import (
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorSchema,
    default_operator_registry,
    register_operator,
)

from .._serve import LISTENING

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.reliability._masking"
_log = logging.getLogger("tests.reliability.quote")


class QuoteResource(Operator):
    """Logs, warns and (with ``fail``) raises a message quoting a resource's value."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name = params["resource_name"]
        self.fail = params["fail"]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        provider = resource.from_context(ctx)
        handle = provider.get(self.resource_name) if provider is not None else None
        if handle is None:
            raise ExecutionError(f"resource {self.resource_name!r} is not loaded")
        with handle as value:
            text = str(value)
        _log.warning("operator log quotes %s", text)
        if self.fail:
            raise ExecutionError(f"operator error quotes {text}")
        out.warn(f"operator warning quotes {text}")


if default_operator_registry().get("test_quote_resource") is None:
    register_operator(
        OperatorSchema(
            name="test_quote_resource",
            kind="observe",
            description="Test only: quotes a resource's value in a log, warning and error.",
            params={
                "resource_name": ParamSpec(type="string", required=True),
                "fail": ParamSpec(type="bool", default=False),
            },
        ),
        QuoteResource,
    )
_META = {"common_input": [], "common_output": [], "item_input": [], "item_output": ["id"]}


class Serve:
    """``pineapple serve CONFIG --addr 127.0.0.1:0 --no-watch`` with extra ``env``."""

    def __init__(self, config: Path, env: Mapping[str, str] | None = None, *args: str) -> None:
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        full_env.pop("PINEAPPLE_ADMIN_TOKEN", None)
        code = "import sys; from pineapple.cli import main; sys.exit(main())"
        argv = [sys.executable, "-c", code, "serve", str(config)]
        self.proc = subprocess.Popen(
            [*argv, "--addr", "127.0.0.1:0", "--shutdown-delay-seconds", "0", "--no-watch", *args],
            stderr=subprocess.PIPE,
            text=True,
            env=full_env,
            cwd=ROOT,
        )
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._listening = threading.Event()
        self.url = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # bounded: ends when the process closes stderr
            with self._lock:
                self._lines.append(line)
            found = LISTENING.search(line)
            if found and not self.url:
                self.url = found.group(1)
                self._listening.set()
        self._listening.set()  # exited: wake a waiter

    def wait_listening(self, timeout: float = 30.0) -> str:
        """The base URL once the server listens; AssertionError (with the log) otherwise."""
        self._listening.wait(timeout)
        if not self.url:
            raise AssertionError("serve is not listening:\n" + self.log)
        return self.url

    @property
    def log(self) -> str:
        with self._lock:
            return "".join(self._lines)

    def stop(self) -> None:
        """SIGTERM, then kill after 15 s; joins the log reader."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def __enter__(self) -> Serve:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def static_entry(value: Any) -> dict[str, Any]:
    """A ``static`` resource entry holding ``value`` (never refreshed)."""
    return {"type": "static", "interval": -1, "params": {"value": value}}


def config(resources: Mapping[str, Mapping[str, Any]], quote: str | None = None) -> bytes:
    """A unified config that recalls from the ``items`` resource and declares ``resources``.

    With ``quote``, groups ``warn`` and ``fail`` run ``test_quote_resource`` on it.
    """
    operators: dict[str, Any] = {
        "recall": {"type_name": "recall_resource", "resource_name": "items", "$metadata": _META}
    }
    groups: dict[str, Any] = {"main": {"pipeline": ["recall"]}}
    if quote is not None:
        for group, fail in (("warn", False), ("fail", True)):
            operators[f"quote_{group}"] = {
                "type_name": "test_quote_resource",
                "resource_name": quote,
                "fail": fail,
                "$metadata": {**_META, "item_output": []},
            }
            groups[group] = {"pipeline": ["recall", f"quote_{group}"]}
    root = {
        "_PINEAPPLE_VERSION": 1,
        "_PINEAPPLE_CREATE_TIME": "2026-01-01T00:00:00Z",
        "pipeline_config": {"operators": operators},
        "pipeline_group": groups,
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": ["id"],
        },
        "resource_config": {"items": static_entry([{"id": "a"}]), **resources},
    }
    return orjson.dumps(root, option=orjson.OPT_INDENT_2)
