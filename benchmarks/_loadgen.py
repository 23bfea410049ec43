"""The open-loop HTTP/1.1 keep-alive load generator (run as its own process).

Requests are *scheduled* ``rate`` per second; an idle connection of the
``concurrency`` keep-alive ones sends each at its time (``POST path``, a
fixed body), or the earliest free one as soon as it frees up, and reads the
whole answer (``content-length`` framing). Latency counts from the scheduled
time, so a stalled server shows up in full (no coordinated omission); it
measures latency at a given load. One asyncio ``Protocol`` per connection
with one pre-built request. (Closed-loop throughput runs use the C
generator, ``benchmarks/_loadgen.c``: see ``benchmarks._procs.start_load``.)

    python -m benchmarks._loadgen --port 8080 --body-file req.json \\
        --concurrency 16 --seconds 5 --rate 500 --out result.json [--latencies]

The result: requests completed, errors (non-200 status or a broken
connection), elapsed seconds, the generator's own CPU seconds, the requests
still waiting for a connection at the end (``backlog``), and with
``--latencies`` every request's start time (``time.monotonic``, comparable
across processes) and latency.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import time
from array import array
from pathlib import Path
from typing import Any

__all__ = ["main"]


class _Connection(asyncio.Protocol):
    def __init__(self, gen: _Generator) -> None:
        self.gen = gen
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.sent = 0.0
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.gen.idle(self)

    def send(self, scheduled: float) -> None:
        assert self.transport is not None
        self.sent = scheduled
        self.transport.write(self.gen.request)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).lower()
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self.gen.errors += 1
                assert self.transport is not None
                self.transport.close()
                return
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : stop if stop >= 0 else len(head)])
            total = end + 4 + length
            if len(buf) < total:
                return
            ok = head.startswith(b"http/1.1 200")
            del buf[:total]
            self.gen.done(self.sent, ok)
            self.gen.idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.gen.stopping:
            self.gen.errors += 1
        if not self.lost.done():
            self.lost.set_result(None)


class _Generator:
    def __init__(
        self, host: str, port: int, path: str, body: bytes, latencies: bool, rate: float
    ) -> None:
        self.request = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        self.stopping = False
        self.count = 0
        self.errors = 0
        self.keep = latencies
        self.starts = array("d")
        self.latencies = array("d")
        self.backlog: collections.deque[float] = collections.deque()
        self.idle_conns: collections.deque[_Connection] = collections.deque()

    def idle(self, conn: _Connection) -> None:
        if self.stopping:
            assert conn.transport is not None
            conn.transport.close()
        elif self.backlog:
            conn.send(self.backlog.popleft())
        else:
            self.idle_conns.append(conn)

    def due(self, scheduled: float) -> None:
        if self.idle_conns:
            self.idle_conns.popleft().send(scheduled)
        else:
            self.backlog.append(scheduled)

    def done(self, sent: float, ok: bool) -> None:
        if ok:
            self.count += 1
            if self.keep:
                self.starts.append(sent)
                self.latencies.append(time.monotonic() - sent)
        else:
            self.errors += 1


async def _ticker(gen: _Generator, rate: float, until: float) -> None:
    step = 1.0 / rate
    next_at = time.monotonic()
    while next_at < until:
        now = time.monotonic()
        while next_at <= now and next_at < until:
            gen.due(next_at)
            next_at += step
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    body = Path(args.body_file).read_bytes()
    gen = _Generator(args.host, args.port, args.path, body, args.latencies, args.rate)
    loop = asyncio.get_running_loop()
    conns: list[_Connection] = []
    for _ in range(args.concurrency):
        _, conn = await loop.create_connection(lambda: _Connection(gen), args.host, args.port)
        conns.append(conn)
    started, cpu = time.monotonic(), time.process_time()
    gen.count = 0  # count from here, once every connection is open
    gen.starts, gen.latencies = array("d"), array("d")
    until = started + args.seconds
    await _ticker(gen, args.rate, until)
    await asyncio.sleep(max(0.0, until - time.monotonic()))
    gen.stopping = True
    elapsed = time.monotonic() - started
    cpu = time.process_time() - cpu
    count, errors = gen.count, gen.errors  # what completed inside the window
    for conn in gen.idle_conns:
        assert conn.transport is not None
        conn.transport.close()
    await asyncio.wait([c.lost for c in conns], timeout=10)
    result: dict[str, Any] = {
        "count": count,
        "errors": errors,
        "seconds": elapsed,
        "cpu_seconds": cpu,  # the generator's own CPU: well under `seconds` = not the bottleneck
        "backlog": len(gen.backlog),
    }
    if args.latencies:
        result["starts"] = gen.starts.tolist()
        result["latencies"] = gen.latencies.tolist()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._loadgen", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/execute")
    parser.add_argument("--body-file", required=True)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=float, required=True, help="requests scheduled per second")
    parser.add_argument("--latencies", action="store_true", help="keep every request's latency")
    parser.add_argument("--out", required=True, help="where to write the JSON result")
    args = parser.parse_args(argv)
    result = asyncio.run(_run(args))
    Path(args.out).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
