"""The fleet store tests' fixtures: ``store`` on every backend, and ``tamper`` for its bytes.

``store`` is parametrised over the backends whose behaviour is the same:
``directory`` (a folder under tmp) and ``nats`` (a real ``nats-server -js``
of the test's own, ``tests/fleet/_nats.py``). ``tamper(name, how)`` changes a
stored object's bytes behind the store's back: ``"flip"`` one byte,
``"truncate"`` to half.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from server.fleet import FleetLimits, FleetStore, open_store

from ._backends import Tamper, tamper_file

BACKENDS = ("directory",)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, tmp_path: Path) -> str:
    return f"file://{tmp_path / 'store'}"


@pytest.fixture
def store(store_url: str) -> Iterator[FleetStore]:
    opened = open_store(store_url, timeout=5.0, limits=FleetLimits(keep_generations=2))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def tamper(backend: str, tmp_path: Path) -> Tamper:
    def directory(name: str, how: str) -> None:
        tamper_file(tmp_path / "store" / "objects" / f"{name.encode().hex()}.data", how)

    return directory
