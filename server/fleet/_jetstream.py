"""The NATS JetStream backend of the fleet store: an Object Store bucket and Key-Value buckets.

Records live in one Key-Value bucket per name of :data:`BUCKETS` (stream
``KV_<bucket>``, subject ``$KV.<bucket>.<key>``: a revision is the stream
sequence, history is ``max_msgs_per_subject``, compare-and-set is the
``Nats-Expected-Last-Subject-Sequence`` header). Objects live in the Object
Store bucket :data:`OBJECTS` (stream ``OBJ_<bucket>``: chunks of 128 KiB on
``$O.<bucket>.C.<nuid>``, the info with its ``SHA-256`` digest on
``$O.<bucket>.M.<base64 name>``), written and read here chunk by chunk so
that every chunk has a deadline and a download is verified whole. Buckets are
created on first use with ``replicas`` (default min(3, the servers the
client knows)), the bucket's history, ``discard: new`` and a byte limit
(:attr:`FleetLimits.max_bucket_bytes` for objects, :data:`RECORD_BUCKET_BYTES`
for records).

Guarantees:
- One event loop on the store's own thread (``LoopThread``) runs every
  coroutine of nats-py; each sync method waits for its answer at most
  ``timeout`` seconds (objects: a chunk at most ``timeout``, the whole
  transfer at most ``FleetLimits.download_timeout``), else
  :class:`StoreUnavailableError` naming :attr:`url` and the operation. A
  store down or unreachable answers that, and nothing else, within the deadline.
- The connection is made in the background and kept by nats-py (it
  reconnects by itself, across the cluster's servers); an operation waits
  for a connection within its deadline. ``open_store`` never blocks on it.
- A failed or cancelled upload purges the chunks it wrote; an object's info
  is written after all its chunks, so a listed object has its chunks
  unless something outside removed them (then a get says it is truncated).
- A watch is its own thread pulling the ordered consumer's updates from the
  loop: the callback never runs on the loop (it may call the store).
- Credentials (``_nats_auth``) are passed to nats-py only; :attr:`url` and
  every message carry the sanitised server list.
- A store belongs to the process that opened it (its loop thread and socket
  do not survive a fork): a child process opens its own.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import datetime
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
import orjson
from nats.aio.client import Client
from nats.js import JetStreamContext, api
from nats.js.kv import KeyValue

from ._errors import (
    FleetError,
    ObjectMissingError,
    RevisionConflictError,
    SnapshotTooLargeError,
    StoreUnavailableError,
)
from ._loop_thread import LoopThread
from ._nats_auth import connect_options, replicas_setting, sanitised, servers
from ._store import (
    BUCKET_HISTORY,
    MAX_RECORD_BYTES,
    OBJECTS,
    FleetLimits,
    ObjectInfo,
    Record,
    check_key,
    check_object_name,
    check_record,
)
from ._transfer import DIGEST_PREFIX, Download, digest_of
from ._watch_thread import WatchThread

__all__ = ["CHUNK_BYTES", "RECORD_BUCKET_BYTES", "JetStreamStore"]

CHUNK_BYTES = 128 * 1024
"""An object's chunk (as the NATS Object Store writes them)."""
_CHUNK_OVERHEAD = 256
"""What a chunk message takes in a stream beyond its bytes (subject, headers), at most."""
UPLOAD_WINDOW = 16
"""Chunks an upload keeps unacknowledged (2 MiB in flight)."""
RECORD_BUCKET_BYTES = 256 * 1024 * 1024
"""The byte limit of each record bucket (records are at most 1 MiB each)."""
ERROR_LOG_SECONDS = 60.0
"""The same connection error (a store down: one per reconnect attempt) is logged at most
this often; a different one at once."""
WATCH_PULL_SECONDS = 1.0
"""A watch thread asks the loop for the next update at least this often (to see stop)."""
_KV_OP = "KV-Operation"
_DELETED_OPS = ("DEL", "PURGE")
_EXPECTED_LAST = "Nats-Expected-Last-Subject-Sequence"
_WRONG_LAST_SEQUENCE = (10071, 10164)
_NO_PEERS = 10005
"""JetStream API code: no suitable peers for placement (a cluster forming, or short of nodes)."""
_STORE_FULL = (10047, 10028, 10077)
"""JetStream API codes: insufficient resources; maximum messages; maximum bytes exceeded."""

_log = logging.getLogger("pineapple.fleet")
T = TypeVar("T")

_UNAVAILABLE = (
    TimeoutError,
    asyncio.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.ConnectionDrainingError,
    nats.errors.NoServersError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.NoStreamResponseError,
    ConnectionError,
)


def _seconds(when: object) -> float:
    """A message's time (a datetime from nats-py) as unix seconds."""
    return when.timestamp() if isinstance(when, datetime.datetime) else 0.0


def _hex_digest(nats_digest: str | None) -> str:
    """``SHA-256=<base64url>`` -> ``sha256=<hex>`` ("" when absent or malformed)."""
    if not nats_digest or "=" not in nats_digest:
        return ""
    try:
        raw = base64.urlsafe_b64decode(nats_digest.split("=", 1)[1])
    except ValueError:
        return ""
    return DIGEST_PREFIX + raw.hex()


def _abandon(futures: list[asyncio.Future[Any]]) -> None:
    """Read each future's outcome when it comes (on the loop): an abandoned chunk's
    acknowledgement that fails is then not reported as "never retrieved"."""
    for future in futures:  # bounded: at most UPLOAD_WINDOW
        future.add_done_callback(_retrieved)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class JetStreamStore:
    """A :class:`~server.fleet.FleetStore` on NATS JetStream (see the module's Guarantees).

    >>> store = JetStreamStore("nats://127.0.0.1:4222")   # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 5.0,
        limits: FleetLimits | None = None,
        replicas: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.url = sanitised(url)
        self._servers = servers(url)
        self._options = connect_options(env)
        self._replicas = replicas if replicas is not None else replicas_setting(env)
        self.timeout = timeout
        self.limits = limits or FleetLimits()
        self._nc: Client | None = None
        self._attempt: Client | None = None
        """The client of the connection attempt in progress (closed with the store)."""
        self._js: JetStreamContext | None = None
        self._made: set[str] = set()
        """Streams known to exist (created or found): looked up once per store."""
        self._watches: list[_JetStreamWatch] = []
        self._watches_lock = threading.Lock()
        self._closed = False
        self.reconnections = 0
        """How often the connection came back (written on the loop; read by watch threads)."""
        self._loop = LoopThread(f"fleet-nats {self.url}")
        self._up = self._loop.call(self._event(), timeout)
        self._connector = self._loop.submit(self._connect())

    @staticmethod
    async def _event() -> asyncio.Event:
        return asyncio.Event()

    # connection

    async def _connect(self) -> None:
        """Connect (retrying every half second until it works); nats-py keeps it after."""

        async def disconnected() -> None:
            self._up.clear()
            if not self._closed:
                _log.warning("fleet store %s: disconnected; reconnecting", self.url)

        async def reconnected() -> None:
            self.reconnections += 1  # each watch opens its watcher again (_JetStreamWatch)
            self._up.set()
            _log.info("fleet store %s: reconnected", self.url)

        said: list[Any] = [None, 0.0, 0]  # the error last logged, when, and how many since

        async def error(exc: Exception) -> None:
            # nats-py calls this on every reconnect attempt (each 0.5 s while the store is
            # down): a new kind of error is logged at once, the same one once a minute.
            name, now = type(exc).__name__, time.monotonic()
            if name == said[0] and now - said[1] < ERROR_LOG_SECONDS:
                said[2] += 1
                return
            again = f" ({said[2]} more since)" if name == said[0] and said[2] else ""
            said[:] = [name, now, 0]
            _log.warning("fleet store %s: %s%s", self.url, name, again)

        logged = False
        while True:
            nc = self._attempt = Client()
            try:
                await nc.connect(
                    servers=self._servers,
                    connect_timeout=max(1, round(min(self.timeout, 5.0))),
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.5,  # type: ignore[arg-type]  # typed int; floats work
                    ping_interval=max(1, round(self.timeout)),
                    max_outstanding_pings=2,
                    disconnected_cb=disconnected,
                    reconnected_cb=reconnected,
                    error_cb=error,
                    **self._options,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not logged:
                    _log.warning(
                        "fleet store %s: cannot connect (%s); retrying",
                        self.url,
                        type(exc).__name__,
                    )
                    logged = True
                await _close_quietly(nc)  # a failed attempt's socket
                await asyncio.sleep(0.5)
                continue
            self._nc = nc
            self._js = nc.jetstream(timeout=self.timeout)
            self._up.set()
            return

    async def _jetstream(self) -> JetStreamContext:
        await self._up.wait()
        assert self._js is not None
        return self._js

    def _call(
        self,
        operation: str,
        subject: str,
        work: Callable[[], Coroutine[Any, Any, T]],
        timeout: float | None = None,
    ) -> T:
        """Run ``work()`` on the loop within ``timeout``; nats-py's errors as the fleet's."""
        timeout = self.timeout if timeout is None else timeout
        if self._closed:
            raise FleetError(f"fleet store {self.url}: {operation} {subject}: the store is closed")
        try:
            return self._loop.call(work(), timeout)
        except nats.js.errors.KeyWrongLastSequenceError as exc:
            raise RevisionConflictError(
                f"{self.url}: {operation} {subject}: {exc.description}"
            ) from None
        except nats.js.errors.APIError as exc:
            if exc.err_code in _STORE_FULL:
                raise SnapshotTooLargeError(
                    f"{self.url}: {operation} {subject}: the bucket is full ({exc.description})"
                ) from None
            if exc.err_code in _WRONG_LAST_SEQUENCE:
                raise RevisionConflictError(
                    f"{self.url}: {operation} {subject}: {exc.description}"
                ) from None
            if exc.code == 503 or exc.err_code == _NO_PEERS:
                raise self._unavailable(operation, subject, exc) from None
            raise FleetError(
                f"{self.url}: {operation} {subject}: JetStream refused: {exc.description}"
            ) from None
        except _UNAVAILABLE as exc:
            raise self._unavailable(operation, subject, exc, timeout) from None
        except nats.errors.Error as exc:
            raise FleetError(f"{self.url}: {operation} {subject}: {type(exc).__name__}") from None

    def _unavailable(
        self, operation: str, subject: str, exc: BaseException, timeout: float | None = None
    ) -> StoreUnavailableError:
        within = f" within {timeout:g}s" if timeout is not None else ""
        return StoreUnavailableError(
            f"fleet store {self.url}: {operation} {subject}: no answer{within}"
            f" ({type(exc).__name__})"
        )

    # buckets

    async def _stream(self, js: JetStreamContext, name: str, create: Callable[[], Any]) -> None:
        if name in self._made:
            return
        try:
            await js.stream_info(name)
        except nats.js.errors.NotFoundError:
            try:
                await create()
            except nats.js.errors.BadRequestError:
                await js.stream_info(name)  # created meanwhile by another store
        self._made.add(name)

    def _replicas_for(self) -> int:
        if self._replicas is not None:
            return self._replicas
        known = len(self._nc.servers) if self._nc is not None else 1
        return max(1, min(3, known))

    async def _kv(self, bucket: str) -> tuple[JetStreamContext, str]:
        """JetStream and the stream of record bucket ``bucket`` (created on first use)."""
        js = await self._jetstream()

        async def create() -> None:
            await js.create_key_value(
                bucket=bucket,
                history=BUCKET_HISTORY[bucket],
                replicas=self._replicas_for(),
                max_bytes=RECORD_BUCKET_BYTES,
                max_value_size=MAX_RECORD_BYTES,
            )

        stream = f"KV_{bucket}"
        await self._stream(js, stream, create)
        return js, stream

    async def _objects(self) -> JetStreamContext:
        js = await self._jetstream()

        async def create() -> None:
            await js.create_object_store(
                bucket=OBJECTS,
                config=api.ObjectStoreConfig(
                    bucket=OBJECTS,
                    replicas=self._replicas_for(),
                    max_bytes=self.limits.max_bucket_bytes,
                ),
            )

        await self._stream(js, f"OBJ_{OBJECTS}", create)
        return js

    # records

    def _record(self, key: str, msg: api.RawStreamMsg) -> Record:
        deleted = (msg.headers or {}).get(_KV_OP) in _DELETED_OPS
        return Record(
            key=key,
            value=b"" if deleted else (msg.data or b""),
            revision=int(msg.seq or 0),
            time=_seconds(msg.time),
            deleted=deleted,
        )

    def get(self, bucket: str, key: str) -> Record | None:
        check_key(bucket, key)

        async def work() -> Record | None:
            js, stream = await self._kv(bucket)
            try:
                msg = await js.get_last_msg(stream, f"$KV.{bucket}.{key}")
            except nats.js.errors.NotFoundError:
                return None
            record = self._record(key, msg)
            return None if record.deleted else record

        return self._call("get", f"{bucket}/{key}", work)

    async def _publish(
        self, bucket: str, key: str, value: bytes, headers: dict[str, str] | None = None
    ) -> int:
        js, stream = await self._kv(bucket)
        ack = await js.publish(f"$KV.{bucket}.{key}", value, stream=stream, headers=headers)
        return int(ack.seq)

    def put(self, bucket: str, key: str, value: bytes) -> int:
        check_record(bucket, key, value)
        return self._call("put", f"{bucket}/{key}", lambda: self._publish(bucket, key, value))

    def update(self, bucket: str, key: str, value: bytes, *, revision: int) -> int:
        check_record(bucket, key, value)

        async def work() -> int:
            expected = revision
            if revision == 0:
                js, stream = await self._kv(bucket)
                try:
                    last = self._record(key, await js.get_last_msg(stream, f"$KV.{bucket}.{key}"))
                except nats.js.errors.NotFoundError:
                    last = None
                if last is not None and not last.deleted:
                    raise RevisionConflictError(
                        f"{self.url}: update {bucket}/{key}: exists (revision {last.revision})"
                    )
                expected = 0 if last is None else last.revision
            headers = {_EXPECTED_LAST: str(expected)}
            return await self._publish(bucket, key, value, headers)

        return self._call("update", f"{bucket}/{key}", work)

    def delete(self, bucket: str, key: str) -> None:
        check_key(bucket, key)
        self._call(
            "delete", f"{bucket}/{key}", lambda: self._publish(bucket, key, b"", {_KV_OP: "DEL"})
        )

    def keys(self, bucket: str) -> list[str]:
        check_key(bucket, "x")

        async def work() -> list[str]:
            await self._kv(bucket)
            assert self._js is not None
            kv: KeyValue = await self._js.key_value(bucket)
            try:
                return sorted(await kv.keys())
            except nats.js.errors.NoKeysError:
                return []

        return self._call("keys", bucket, work)

    def history(self, bucket: str, key: str) -> list[Record]:
        check_key(bucket, key)

        async def work() -> list[Record]:
            await self._kv(bucket)
            assert self._js is not None
            kv = await self._js.key_value(bucket)
            try:
                entries = await kv.history(key)
            except nats.js.errors.NoKeysError:
                return []
            return [_entry_record(entry) for entry in entries]

        return self._call("history", f"{bucket}/{key}", work)

    def watch(self, bucket: str, on_change: Callable[[Record], None]) -> _JetStreamWatch:
        check_key(bucket, "x")

        top, watcher = self.open_watcher(bucket)
        watch = _JetStreamWatch(self, bucket, watcher, on_change, top)
        with self._watches_lock:
            self._watches.append(watch)
        watch.start()
        return watch

    def open_watcher(self, bucket: str) -> tuple[int, KeyValue.KeyWatcher]:
        """nats-py's watcher of every key of ``bucket`` (current values first), and the
        bucket's last revision before it began."""

        async def work() -> tuple[int, KeyValue.KeyWatcher]:
            js, stream = await self._kv(bucket)
            top = int((await js.stream_info(stream)).state.last_seq)
            kv = await js.key_value(bucket)
            return top, await kv.watchall()

        return self._call("watch", bucket, work)

    # objects

    def _meta_subject(self, name: str) -> str:
        return f"$O.{OBJECTS}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"

    async def _info(self, js: JetStreamContext, name: str) -> api.ObjectInfo | None:
        try:
            msg = await js.get_last_msg(f"OBJ_{OBJECTS}", self._meta_subject(name))
        except nats.js.errors.NotFoundError:
            return None
        try:
            info = api.ObjectInfo.from_response(orjson.loads(msg.data or b"{}"))
        except (orjson.JSONDecodeError, TypeError, KeyError, ValueError):
            raise FleetError(f"{self.url}: object {name}: its info is not JSON") from None
        return None if info.deleted else info

    def put_object(self, name: str, source: Path) -> ObjectInfo:
        check_object_name(name)
        local = digest_of(source, name=name, max_bytes=self.limits.max_snapshot_bytes)
        deadline = time.monotonic() + self.limits.download_timeout
        js = self._call("put_object", name, self._objects)
        assert self._nc is not None
        nuid = self._nc._nuid.next().decode()
        chunks = f"$O.{OBJECTS}.C.{nuid}"
        stream = f"OBJ_{OBJECTS}"
        try:
            old = self._call("put_object", name, lambda: self._info(js, name))
            self._check_room(js, name, local.size)
            count = self._send_chunks(js, name, source, chunks, deadline)
            raw = bytes.fromhex(local.digest[len(DIGEST_PREFIX) :])
            info = api.ObjectInfo(
                name=name,
                bucket=OBJECTS,
                nuid=nuid,
                size=local.size,
                chunks=count,
                mtime=datetime.datetime.now(datetime.UTC).isoformat(),
                digest="SHA-256=" + base64.urlsafe_b64encode(raw).decode(),
                options=api.ObjectMetaOptions(max_chunk_size=CHUNK_BYTES),
            )
            meta = orjson.dumps(info.as_dict())
            self._call(
                "put_object",
                name,
                lambda: js.publish(
                    self._meta_subject(name), meta, stream=stream, headers={"Nats-Rollup": "sub"}
                ),
            )
        except BaseException:
            self._purge_quietly(js, chunks)
            raise
        if old is not None and old.nuid:
            self._purge_quietly(js, f"$O.{OBJECTS}.C.{old.nuid}")
        return local

    def _send_chunks(
        self, js: JetStreamContext, name: str, source: Path, chunks: str, deadline: float
    ) -> int:
        """Publish ``source`` in chunks to ``chunks``, at most :data:`UPLOAD_WINDOW` unacknowledged
        at a time, each acknowledged within ``timeout`` and all before ``deadline``; their count."""
        pending: collections.deque[asyncio.Future[api.PubAck]] = collections.deque()
        count = 0

        def acknowledged(oldest: asyncio.Future[api.PubAck]) -> None:
            wait = self._left("put_object", name, deadline)
            self._call("put_object", name, lambda: asyncio.wait_for(oldest, wait), wait + 1)

        try:
            with open(source, "rb") as src:
                while chunk := src.read(CHUNK_BYTES):
                    wait = self._left("put_object", name, deadline)
                    pending.append(
                        self._call(
                            "put_object",
                            name,
                            lambda c=chunk: js.publish_async(chunks, c, stream=f"OBJ_{OBJECTS}"),  # type: ignore[misc]
                            wait,
                        )
                    )
                    count += 1
                    if len(pending) >= UPLOAD_WINDOW:
                        acknowledged(pending.popleft())
            while pending:
                acknowledged(pending.popleft())
        finally:
            if pending:  # a failed upload: the acknowledgements left are nobody's to read
                self._loop.loop.call_soon_threadsafe(_abandon, list(pending))
        return count

    def _check_room(self, js: JetStreamContext, name: str, size: int) -> None:
        """:class:`SnapshotTooLargeError` unless the object bucket has room for ``size`` bytes.

        Checked before the upload: the server refuses a chunk past the bucket's
        ``max_bytes`` with a 503 that nats-py's asynchronous publish does not
        hand to its future (the upload would wait out its deadline instead).
        """
        info = self._call(
            "put_object", name, lambda: js.stream_info(f"OBJ_{OBJECTS}"), self.timeout
        )
        limit = info.config.max_bytes or -1
        needed = size + (size // CHUNK_BYTES + 1) * _CHUNK_OVERHEAD
        if limit > 0 and info.state.bytes + needed > limit:
            raise SnapshotTooLargeError(
                f"{self.url}: object {name} of {size} bytes: the bucket holds"
                f" {info.state.bytes} of its {limit} bytes (--fleet-max-bucket-bytes)"
            )

    def _left(self, operation: str, name: str, deadline: float) -> float:
        """The wait one step of a transfer may take: ``timeout``, within ``deadline``."""
        left = deadline - time.monotonic()
        if left <= 0:
            whole = self.limits.download_timeout
            raise self._unavailable(operation, name, TimeoutError(), whole)
        return min(self.timeout, left)

    def _purge_quietly(self, js: JetStreamContext, subject: str) -> None:
        """Best effort: purge ``subject`` from the object stream (a failure is only logged)."""
        try:
            self._call("purge", subject, lambda: js.purge_stream(f"OBJ_{OBJECTS}", subject=subject))
        except FleetError as exc:
            _log.warning("fleet store %s: cannot purge %s: %s", self.url, subject, exc)

    def get_object(self, name: str, dest: Path, *, max_bytes: int) -> ObjectInfo:
        check_object_name(name)
        deadline = time.monotonic() + self.limits.download_timeout
        js = self._call("get_object", name, self._objects)
        stored = self._call("get_object", name, lambda: self._info(js, name))
        if stored is None:
            raise ObjectMissingError(f"object {name} is not in {self.url}")
        info = ObjectInfo(name=name, size=int(stored.size or 0), digest=_hex_digest(stored.digest))
        chunks = f"$O.{OBJECTS}.C.{stored.nuid}"
        with Download(info, dest, max_bytes=max_bytes, deadline=deadline, url=self.url) as d:
            held = self._call(
                "get_object",
                name,
                lambda: js.stream_info(f"OBJ_{OBJECTS}", subjects_filter=chunks),
            )
            count = (held.state.subjects or {}).get(chunks, 0)
            if count:
                self._read_chunks(js, name, chunks, count, d, deadline)
            return d.finish()

    def _read_chunks(
        self,
        js: JetStreamContext,
        name: str,
        chunks: str,
        count: int,
        download: Download,
        deadline: float,
    ) -> None:
        """Pull ``count`` chunks of ``chunks`` into ``download``, each within its deadline."""
        sub = self._call("get_object", name, lambda: js.subscribe(chunks, ordered_consumer=True))
        try:
            for _ in range(count):
                wait = self._left("get_object", name, deadline)
                msg = self._call("get_object", name, lambda w=wait: sub.next_msg(w), wait + 1)  # type: ignore[misc]
                download.write(msg.data)
        finally:
            with contextlib.suppress(FleetError):
                self._call("get_object", name, sub.unsubscribe)

    def delete_object(self, name: str) -> None:
        check_object_name(name)
        js = self._call("delete_object", name, self._objects)
        stored = self._call("delete_object", name, lambda: self._info(js, name))
        if stored is None:
            return
        self._call(
            "delete_object",
            name,
            lambda: js.purge_stream(f"OBJ_{OBJECTS}", subject=self._meta_subject(name)),
        )
        self._purge_quietly(js, f"$O.{OBJECTS}.C.{stored.nuid}")

    def objects(self) -> list[ObjectInfo]:
        async def work() -> list[ObjectInfo]:
            js = await self._objects()
            held = await js.stream_info(f"OBJ_{OBJECTS}", subjects_filter=f"$O.{OBJECTS}.M.>")
            found = []
            for subject in sorted(held.state.subjects or {}):
                encoded = subject.rpartition(".")[2]
                name = base64.urlsafe_b64decode(encoded).decode()
                info = await self._info(js, name)
                if info is not None:
                    found.append(
                        ObjectInfo(
                            name=name, size=int(info.size or 0), digest=_hex_digest(info.digest)
                        )
                    )
            return sorted(found, key=lambda o: o.name)

        return self._call("objects", OBJECTS, work)

    def close(self) -> None:
        if self._closed:
            return
        with self._watches_lock:
            watches, self._watches = self._watches, []
        for watch in watches:
            watch.stop()
        self._connector.cancel()
        self._closed = True

        async def close() -> None:
            for nc in {id(c): c for c in (self._attempt, self._nc) if c is not None}.values():
                await _close_quietly(nc)

        with contextlib.suppress(TimeoutError):
            self._loop.call(close(), self.timeout)
        self._loop.stop(self.timeout)


async def _close_quietly(nc: Client) -> None:
    """Close ``nc`` and its socket; a connection already lost is closed already."""
    try:
        await nc.close()
    except (TimeoutError, OSError, nats.errors.Error) as exc:
        _log.debug("fleet store: closing a connection: %s", type(exc).__name__)


def _entry_record(entry: KeyValue.Entry) -> Record:
    deleted = entry.operation in _DELETED_OPS
    return Record(
        key=entry.key,
        value=b"" if deleted else (entry.value or b""),
        revision=int(entry.revision or 0),
        time=_seconds(entry.created),
        deleted=deleted,
    )


class _JetStreamWatch(WatchThread):
    """Pulls nats-py's watcher updates from the loop and delivers them (never on the loop).

    After the connection comes back it opens a new watcher (the server may
    have lost the old consumer): its current values are delivered where they
    are newer than what this watch delivered of their key, so a pod catches
    up at once; changes in between are folded into each key's latest.
    """

    def __init__(
        self,
        store: JetStreamStore,
        bucket: str,
        watcher: KeyValue.KeyWatcher,
        on_change: Callable[[Record], None],
        top: int,
    ) -> None:
        super().__init__(bucket, on_change, join_seconds=WATCH_PULL_SECONDS + store.timeout + 1)
        self._store = store
        self._watcher = watcher
        self._reconnections = store.reconnections
        self._top = top
        """The bucket's last revision before the watch began: up to it, current values."""
        self._delivered: dict[str, int] = {}
        """``key -> revision`` last delivered (as many entries as the bucket has keys)."""

    def stopping(self) -> None:
        self._stop_watcher()

    def _stop_watcher(self) -> None:
        with contextlib.suppress(TimeoutError, nats.errors.Error, RuntimeError):
            self._store._loop.call(self._watcher.stop(), self._store.timeout)  # type: ignore[no-untyped-call]

    def _reopen(self) -> None:
        """A new watcher after a reconnection (retried on the next pull when it fails)."""
        reconnections = self._store.reconnections
        try:
            top, watcher = self._store.open_watcher(self.bucket)
        except FleetError as exc:
            _log.warning("fleet watch of %s: reopening: %s", self.bucket, exc)
            self.stopped.wait(WATCH_PULL_SECONDS)
            return
        self._stop_watcher()
        self._watcher, self._top, self._reconnections = watcher, top, reconnections

    def follow(self) -> None:
        while not self.stopped.is_set():
            if self._store.reconnections != self._reconnections:
                self._reopen()
                continue
            try:
                entry = self._store._loop.call(
                    self._watcher.updates(WATCH_PULL_SECONDS),  # type: ignore[no-untyped-call]
                    WATCH_PULL_SECONDS + 1,
                )
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            except RuntimeError:
                return  # the loop stopped: the store closed
            except Exception as exc:
                _log.warning("fleet watch of %s in %s: %s", self.bucket, self._store.url, exc)
                self.stopped.wait(WATCH_PULL_SECONDS)
                continue
            if entry is None:
                continue  # nats-py's mark after the first values (it moves with new changes)
            if not isinstance(entry, KeyValue.Entry):
                continue  # a stopped watcher's end (a reopened one replaced it)
            record = _entry_record(entry)
            if (
                record.deleted
                and record.revision <= self._top
                and record.key not in self._delivered
            ):
                continue  # a key deleted before the watch began, never seen: no current value
            if record.revision <= self._delivered.get(record.key, 0):
                continue  # delivered already (a reopened watcher starts at current values)
            self._delivered[record.key] = record.revision
            self.deliver(record)
