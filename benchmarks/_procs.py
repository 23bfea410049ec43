"""Child processes of the serving benchmarks: servers on free loopback ports, load runs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "REPO",
    "finish_load",
    "free_port",
    "load",
    "post",
    "running",
    "serve_bare",
    "serve_pineapple",
    "start_load",
    "stop",
]

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def post(port: int, path: str, body: bytes = b"", timeout: float = 120) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


@contextlib.contextmanager
def running(
    cmd: list[str], port: int, what: str, timeout: float = 60, log: Any = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``cmd``, wait until ``GET /readyz`` answers 200, SIGTERM it on exit; yields it.

    ``log``: an open binary file for its output (default: a temporary one)."""
    with contextlib.nullcontext(log) if log is not None else tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=log, stderr=log)
        try:
            yield from _ready_then_stop(proc, log, port, what, timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _ready_then_stop(
    proc: subprocess.Popen[bytes], log: Any, port: int, what: str, timeout: float
) -> Iterator[subprocess.Popen[bytes]]:
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read()[-2000:]!r}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not become ready in {timeout:.0f}s")
            time.sleep(0.1)
        yield proc
    finally:
        stop(proc, 30)


def stop(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """SIGTERM ``proc``, then SIGKILL it if it has not exited within ``seconds``."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve_pineapple(
    config: Path, port: int, extra: Sequence[str] = (), timeout: float = 60
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """``pineapple serve CONFIG`` on ``127.0.0.1:port`` (no file watching, quiet logs),
    with ``extra`` flags (e.g. ``--workers 2``); yields the server's (root) process."""
    exe = Path(sys.executable).parent / "pineapple"
    head = [str(exe)] if exe.exists() else [sys.executable, "-m", "pineapple.cli"]
    cmd = [*head, "serve", str(config), "--addr", f"127.0.0.1:{port}", "--no-watch"]
    return running([*cmd, "--log-level", "warning", *extra], port, "pineapple serve", timeout)


def serve_bare(
    response: Path, port: int, *, raw: bool = False
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """The bare Starlette endpoint (``benchmarks._bare_server``) on ``127.0.0.1:port``;
    ``raw``: a raw ASGI app instead."""
    cmd = [sys.executable, "-m", "benchmarks._bare_server", "--port", str(port)]
    cmd += ["--response-file", str(response), *(["--raw"] if raw else [])]
    return running(cmd, port, "bare server")


def start_load(
    port: int,
    body: Path,
    seconds: float,
    out: Path,
    *,
    concurrency: int = 16,
    latencies: bool = False,
    rate: float | None = None,
) -> subprocess.Popen[bytes]:
    """Start the load generator in its own process.

    A closed-loop run (no ``rate``) uses the C generator (``benchmarks/_loadgen.c``,
    built on first use), which leaves the cores to the servers it measures; an
    open-loop run (``rate`` requests per second, optionally keeping every
    latency), the Python one (``benchmarks._loadgen``), whose CPU is small at
    the rates those runs ask.
    """
    if rate is None:
        if latencies:
            raise ValueError("latencies are kept by open-loop runs only: give a rate")
        gen = [str(_c_loadgen()), str(port), str(body), str(concurrency), str(seconds), str(out)]
        return subprocess.Popen(gen, cwd=REPO)
    cmd = [sys.executable, "-m", "benchmarks._loadgen", "--port", str(port)]
    cmd += ["--body-file", str(body), "--concurrency", str(concurrency)]
    cmd += ["--seconds", str(seconds), "--out", str(out)]
    cmd += ["--rate", str(rate), *(["--latencies"] if latencies else [])]
    return subprocess.Popen(cmd, cwd=REPO, env=_env())


_LOADGEN_C = REPO / "benchmarks" / "_loadgen.c"
_LOADGEN = REPO / "build" / "benchmarks" / "loadgen"


def _c_loadgen() -> Path:
    """The C load generator, compiled (``cc -O2``) when absent or older than its source."""
    if _LOADGEN.exists() and _LOADGEN.stat().st_mtime >= _LOADGEN_C.stat().st_mtime:
        return _LOADGEN
    _LOADGEN.parent.mkdir(parents=True, exist_ok=True)
    built = _LOADGEN.with_name(f".loadgen.{os.getpid()}")
    cc = os.environ.get("CC", "cc")
    done = subprocess.run(
        [cc, "-O2", "-o", str(built), str(_LOADGEN_C)], capture_output=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"{cc} could not build {_LOADGEN_C}: {done.stderr.decode()[-2000:]}")
    os.replace(built, _LOADGEN)
    return _LOADGEN


def finish_load(proc: subprocess.Popen[bytes], out: Path) -> dict[str, Any]:
    if proc.wait(120) != 0:
        raise RuntimeError(f"load generator exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def load(
    port: int,
    body: Path,
    seconds: float,
    *,
    concurrency: int = 16,
    latencies: bool = False,
    rate: float | None = None,
) -> dict[str, Any]:
    """One load run to completion: count, errors, seconds (and latencies if asked)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "load.json"
        proc = start_load(
            port, body, seconds, out, concurrency=concurrency, latencies=latencies, rate=rate
        )
        return finish_load(proc, out)
