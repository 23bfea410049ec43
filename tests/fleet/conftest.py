"""The fleet store tests' fixtures: ``store`` on every backend, and ``tamper`` for its bytes.

``store`` is parametrised over the backends whose behaviour is the same:
``directory`` (a folder under tmp) and ``nats`` (a real ``nats-server -js``
of this test session's own, ``tests/fleet/_nats.py``; every stream is deleted
after each test). ``tamper(name, how)`` changes a stored object's bytes
behind the store's back: ``"flip"`` (directory: one byte of its file; NATS: a
chunk replaced by a flipped copy), ``"truncate"`` (directory: the file cut to
half; NATS: its last chunk deleted from the stream).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import nats
import orjson
import pytest

from server.fleet import FleetLimits, FleetStore, open_store
from server.fleet._store import OBJECTS

from ._backends import Tamper, tamper_file
from ._nats import NatsCluster, nats_cluster

NATS_PY_UNCLOSED_WRITER = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <function StreamWriter.__del__"
    r":pytest.PytestUnraisableExceptionWarning"
)
"""nats-py's reconnect loop, when a stopped or silent server times its handshake out,
drops that attempt's ``StreamWriter`` without closing it (inside the library, in a
test's own store client), and its ``__del__`` warns wherever the collector runs. Only
that warning is let through, on the fleet tests alone; any other unraisable exception
still fails the test."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:  # bounded: the collected tests
        if here in item.path.parents:
            item.add_marker(NATS_PY_UNCLOSED_WRITER)


BACKENDS = ("directory", "nats")
LIMITS = FleetLimits(keep_generations=2, max_snapshot_bytes=2**28, max_bucket_bytes=2**30)
"""The tests' limits (a bucket's bytes are reserved on the servers' disk: keep them small)."""


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    """One ``nats-server -js`` for this session's ``store`` tests."""
    with nats_cluster(tmp_path_factory.mktemp("nats")) as cluster:
        yield cluster


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _delete_streams(url: str) -> None:
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=5)
        for info in await js.streams_info():
            await js.delete_stream(info.config.name or "")
    finally:
        await nc.close()


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    if backend == "directory":
        yield f"file://{tmp_path / 'store'}"
        return
    cluster: NatsCluster = request.getfixturevalue("nats_server")
    try:
        yield cluster.url
    finally:
        asyncio.run(_delete_streams(cluster.url))


@pytest.fixture
def store(store_url: str) -> Iterator[FleetStore]:
    opened = open_store(store_url, timeout=5.0, limits=LIMITS)
    try:
        yield opened
    finally:
        opened.close()


async def _tamper_nats(url: str, name: str, how: str) -> None:
    """Replace a chunk of object ``name`` by a flipped copy, or delete its last chunk."""
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=5)
        stream = f"OBJ_{OBJECTS}"
        meta = f"$O.{OBJECTS}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"
        info = orjson.loads((await js.get_last_msg(stream, meta)).data or b"{}")
        chunks = f"$O.{OBJECTS}.C.{info['nuid']}"
        last = await js.get_last_msg(stream, chunks)
        await js.delete_msg(stream, last.seq or 0)
        if how == "flip":
            data = bytearray(last.data or b"")
            data[len(data) // 2] ^= 0xFF
            await js.publish(chunks, bytes(data), stream=stream)
    finally:
        await nc.close()


@pytest.fixture
def tamper(backend: str, store_url: str, tmp_path: Path) -> Tamper:
    def directory(name: str, how: str) -> None:
        tamper_file(tmp_path / "store" / "objects" / f"{name.encode().hex()}.data", how)

    def in_nats(name: str, how: str) -> None:
        asyncio.run(_tamper_nats(store_url, name, how))

    return directory if backend == "directory" else in_nats
