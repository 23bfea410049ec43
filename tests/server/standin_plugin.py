"""A ``--plugin`` for the process-level tests (``pineapple serve/check``).

It registers the ``test_items`` resource type in the default registry (its
values append ``close <label> <tag> <pid>-<serial>`` to the file named by env
``PINEAPPLE_TEST_CLOSE_LOG`` when closed), and, while ``pineapple.engine`` has
no ``Engine`` yet (it is being written on another branch), installs the
``FakeEngine`` test double in its place.
"""

from __future__ import annotations

import itertools
import os
import threading
from typing import Any

import pineapple.engine
from pineapple import ParamSpec, resource

from .fakes import FakeEngine

if not hasattr(pineapple.engine, "Engine"):
    setattr(pineapple.engine, "Engine", FakeEngine)  # noqa: B010 (a stand-in, on purpose)

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


def _factory(params: dict[str, Any]) -> resource.Fetcher:
    def fetch() -> LoggedList:
        if params["fail"]:
            raise RuntimeError(f"cannot reach {params['dsn']}")
        return LoggedList(params["items"] or [], params["label"])

    return fetch


if resource.default_registry().get("test_items") is None:
    resource.register_resource(
        resource.ResourceSchema(
            name="test_items",
            description="A list of items whose close is logged (process tests).",
            default_interval=-1,
            params={
                "label": ParamSpec(type="string", required=True),
                "items": ParamSpec(type="list"),
                "fail": ParamSpec(type="bool", default=False),
                "password": ParamSpec(type="string"),
                "dsn": ParamSpec(type="string", default="mysql://app:hunter2@db/x"),
            },
        ),
        _factory,
    )
