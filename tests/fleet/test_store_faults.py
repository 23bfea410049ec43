"""The fleet store when its servers fail: named errors within the deadline, and recovery.

Against real ``nats-server -js`` processes of the test's own (``_nats.py``):
a server that accepts and says nothing, a SIGSTOPped one, a node of a
3-node cluster killed in the middle of an upload, every node stopped and
started again. Each test has a timeout of its own; each wait is bounded.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import nats
import nats.js.errors
import pytest

from resources.lowlevel import FILE_CODEC
from server.fleet import (
    PINS,
    FleetError,
    FleetLimits,
    SnapshotCache,
    StoreUnavailableError,
    _jetstream,
    open_store,
    publish_snapshot,
)
from server.fleet._jetstream import JetStreamStore
from server.fleet._store import OBJECTS

from ._nats import NatsCluster, nats_cluster

pytestmark = pytest.mark.timeout(300)

T = TypeVar("T")
LIMITS = FleetLimits(keep_generations=2, max_snapshot_bytes=2**28, max_bucket_bytes=2**30)
DEADLINE = 1.5
"""The store's operation timeout in these tests."""
SLACK = 1.5
"""What a refusal may take beyond the deadline (thread hand-overs on a busy machine)."""


def _refused_within(action: Callable[[], Any], bound: float) -> StoreUnavailableError:
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        action()
    assert time.monotonic() - started < bound, "refused, but not within the deadline"
    return caught.value


def _eventually(action: Callable[[], T], seconds: float = 60.0) -> T:
    """``action()`` retried while the store is unavailable, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return action()
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A TCP listener that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"nats://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        server.close()


def test_a_server_that_says_nothing_is_unavailable_within_the_deadline(
    silent_listener: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    store = open_store(silent_listener, timeout=DEADLINE, limits=LIMITS)
    assert time.monotonic() - started < DEADLINE  # opening never waits for the server
    try:
        error = _refused_within(lambda: store.get(PINS, "a"), DEADLINE + SLACK)
        assert silent_listener in str(error) and "get pineapple-pins/a" in str(error)
        _refused_within(lambda: store.put(PINS, "a", b"x"), DEADLINE + SLACK)
        source = tmp_path / "s"
        source.write_bytes(b"x" * 1000)
        _refused_within(lambda: store.put_object("o", source), DEADLINE + SLACK)
        _refused_within(lambda: store.objects(), DEADLINE + SLACK)
    finally:
        store.close()


def test_a_directory_store_whose_lock_is_held_is_unavailable_within_the_deadline(
    tmp_path: Path,
) -> None:
    store = open_store(str(tmp_path / "store"), timeout=DEADLINE, limits=LIMITS)
    lock = os.open(tmp_path / "store" / "kv" / PINS / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another writer that hangs
        error = _refused_within(lambda: store.put(PINS, "a", b"x"), DEADLINE + SLACK)
        assert "lock is held" in str(error)
        assert store.get(PINS, "a") is None  # readers do not wait for writers
    finally:
        os.close(lock)
    assert store.put(PINS, "a", b"x") > 0


@pytest.fixture
def one_node(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "nats", 1) as cluster:
        yield cluster


def test_a_stopped_server_is_unavailable_within_the_deadline_then_serves_again(
    one_node: NatsCluster, tmp_path: Path
) -> None:
    store = open_store(one_node.url, timeout=DEADLINE, limits=LIMITS)
    try:
        revision = store.put(PINS, "a", b"before")
        one_node.nodes[0].pause()  # SIGSTOP: the socket stays open, nothing answers
        try:
            _refused_within(lambda: store.get(PINS, "a"), DEADLINE + SLACK)
            _refused_within(lambda: store.put(PINS, "a", b"x"), DEADLINE + SLACK)
        finally:
            one_node.nodes[0].resume()
        record = _eventually(lambda: store.get(PINS, "a"))
        assert record is not None and record.revision >= revision
    finally:
        store.close()


def test_a_store_down_logs_its_connection_error_once_not_per_attempt(
    one_node: NatsCluster, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(one_node.url, timeout=DEADLINE, limits=LIMITS)
    try:
        store.put(PINS, "a", b"before")
        with caplog.at_level(logging.WARNING, logger="pineapple"):
            one_node.nodes[0].stop()
            time.sleep(3.0)  # six reconnect attempts, 0.5 s apart, each refused
        # This store's lines only: a store another test of this process left reconnecting
        # logs its own count once a minute (seen in a full run).
        mine = f"fleet store {one_node.url}:"
        refused = [
            r
            for r in caplog.records
            if "ConnectionRefusedError" in r.getMessage() and r.getMessage().startswith(mine)
        ]
        assert len(refused) == 1, [r.getMessage() for r in refused]
        one_node.nodes[0].start()
        assert _eventually(lambda: store.get(PINS, "a")) is not None
    finally:
        store.close()


def test_the_cache_serves_while_the_store_is_down(one_node: NatsCluster, tmp_path: Path) -> None:
    store = open_store(one_node.url, timeout=DEADLINE, limits=LIMITS)
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    try:
        announcements = [
            publish_snapshot(
                store,
                name="t",
                type_name="json_file",
                params_hash="h",
                codec=FILE_CODEC,
                value={"n": n},
                generation=n,
                source_version=None,
                workdir=tmp_path,
            )
            for n in (1, 2)
        ]
        cache.fetch(store, announcements[1], FILE_CODEC, max_bytes=10**6)
        one_node.nodes[0].kill()
        latest = cache.latest("t")
        assert latest == announcements[1]
        assert cache.open(latest, FILE_CODEC) == {"n": 2}
        _refused_within(
            lambda: cache.fetch(store, announcements[0], FILE_CODEC, max_bytes=10**6),
            DEADLINE + SLACK,
        )
        assert cache.latest("t") == announcements[1]  # a failed fetch changes nothing
    finally:
        store.close()


@pytest.fixture
def three_nodes(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "nats", 3) as cluster:
        yield cluster


async def _replicas(url: str, stream: str) -> int:
    nc = await nats.connect(url.split(","), connect_timeout=2, allow_reconnect=False)
    try:
        info = await nc.jetstream(timeout=5).stream_info(stream)
        return int(info.config.num_replicas or 1)
    finally:
        await nc.close()


def test_a_node_killed_during_an_upload_leaves_a_verified_object(
    three_nodes: NatsCluster, tmp_path: Path
) -> None:
    store = open_store(three_nodes.url, timeout=5.0, limits=LIMITS)
    assert isinstance(store, JetStreamStore)
    try:
        store.put(PINS, "warm", b"x")  # buckets created, connected
        assert asyncio.run(_replicas(three_nodes.url, f"KV_{PINS}")) == 3
        source = tmp_path / "big"
        source.write_bytes(os.urandom(6 * 1024 * 1024))  # 48 chunks
        calls = 0
        killed = threading.Event()
        real_call = store._call

        def call_killing_at_the_tenth_chunk(operation: str, subject: str, *args: Any) -> Any:
            nonlocal calls
            if operation == "put_object":
                calls += 1
                if calls == 12 and not killed.is_set():  # info lookups first, then chunks
                    connected = store._nc.connected_url if store._nc else None
                    victim = next(
                        n for n in three_nodes.nodes if connected and n.port == connected.port
                    )
                    victim.kill()
                    killed.set()
            return real_call(operation, subject, *args)

        store._call = call_killing_at_the_tenth_chunk  # type: ignore[method-assign,assignment]
        try:
            info = store.put_object("snapshots/big/1-x", source)
        except FleetError:  # failed cleanly: nothing of it is listed
            info = None
            assert "snapshots/big/1-x" not in [o.name for o in _eventually(store.objects)]
        assert killed.is_set()
        store._call = real_call  # type: ignore[method-assign]
        if info is None:
            info = _eventually(lambda: store.put_object("snapshots/big/1-x", source))
        dest = tmp_path / "dest"
        got = _eventually(lambda: store.get_object("snapshots/big/1-x", dest, max_bytes=2**24))
        assert got == info and dest.read_bytes() == source.read_bytes()
        assert asyncio.run(_replicas(three_nodes.url, f"OBJ_{OBJECTS}")) == 3
    finally:
        store.close()


def test_every_node_stopped_is_unavailable_then_started_again_works(
    three_nodes: NatsCluster,
) -> None:
    store = open_store(three_nodes.url, timeout=DEADLINE, limits=LIMITS)
    try:
        revision = _eventually(lambda: store.put(PINS, "kept", b"v"))
        for node in three_nodes.nodes:
            node.stop()
        error = _refused_within(lambda: store.get(PINS, "kept"), DEADLINE + SLACK)
        assert "no answer" in str(error)
        _refused_within(lambda: store.keys(PINS), DEADLINE + SLACK)
        for node in three_nodes.nodes:
            node.start()
        three_nodes.wait_ready()
        record = _eventually(lambda: store.get(PINS, "kept"))
        assert record is not None and (record.value, record.revision) == (b"v", revision)
        assert _eventually(lambda: store.put(PINS, "kept", b"w")) > revision
    finally:
        store.close()


def test_a_watch_goes_on_after_the_server_restarts(one_node: NatsCluster) -> None:
    store = open_store(one_node.url, timeout=DEADLINE, limits=LIMITS)
    seen: list[bytes] = []
    arrived = threading.Condition()

    def on_change(record: Any) -> None:
        with arrived:
            seen.append(record.value)
            arrived.notify_all()

    def wait_for(value: bytes) -> bool:
        with arrived:
            return arrived.wait_for(lambda: value in seen, timeout=60)

    try:
        store.put(PINS, "a", b"before")
        store.put(PINS, "gone", b"here")
        watch = store.watch(PINS, on_change)
        assert wait_for(b"before") and wait_for(b"here")
        one_node.restart(one_node.nodes[0])  # SIGKILL, then the same port and store
        one_node.wait_ready()
        _eventually(lambda: store.delete(PINS, "gone"))
        _eventually(lambda: store.put(PINS, "a", b"after"))
        assert wait_for(b"after"), seen
        assert wait_for(b""), seen  # the delete, once
        watch.stop()
        assert seen.count(b"before") == 1 and seen.count(b"") == 1, seen
    finally:
        store.close()


def test_an_abandoned_upload_acknowledgement_that_fails_is_not_reported_unretrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failed upload leaves up to UPLOAD_WINDOW acknowledgements nobody awaits; when they
    fail later, asyncio would log "Future exception was never retrieved" for each."""
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            kept, dropped = loop.create_future(), loop.create_future()
            _jetstream._abandon([kept])
            for future in (kept, dropped):
                future.set_exception(nats.js.errors.NoStreamResponseError())
            loop.run_until_complete(asyncio.sleep(0))  # the done callbacks run
            del kept, dropped, future
            gc.collect()
        unretrieved = [r for r in caplog.records if "never retrieved" in r.getMessage()]
        assert len(unretrieved) == 1  # the one not abandoned: the check can fail
    finally:
        loop.close()
