"""Real ``nats-server -js`` processes for the fleet tests: one node, or a 3-node cluster.

Every node listens on loopback, on ports of :data:`PORTS` (this suite's range:
clients and cluster routes), with its own ``-sd`` store directory under the
test's tmp. A port is claimed by an ``flock`` on a file in
:data:`LOCK_DIR` for as long as its node lives, then checked free by binding
it, so tests running in parallel never pick the same one. A node can be
killed, stopped (SIGSTOP: it accepts connections and answers nothing),
resumed and restarted on its ports and store.

:func:`nats_server_binary` skips the test (or fails it with
``PINEAPPLE_REQUIRE_SERVICES=1``) when ``nats-server`` is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import nats
import nats.errors

from ..conftest import service_unavailable

__all__ = ["LOCK_DIR", "PORTS", "NatsCluster", "NatsNode", "nats_cluster", "nats_server_binary"]

PORTS = range(20500, 20600)
"""This suite's ports (clients and routes of the test servers)."""
LOCK_DIR = Path("/tmp/pineapple-fleet-store-ports")
READY_SECONDS = 30.0
"""How long a node or cluster may take until JetStream answers."""


def nats_server_binary() -> str:
    """The ``nats-server`` executable (skips, or fails under PINEAPPLE_REQUIRE_SERVICES=1)."""
    found = shutil.which("nats-server")
    if found is None:
        service_unavailable("nats-server", FileNotFoundError("nats-server is not on PATH"))
    return found


class _Port:
    """A port of :data:`PORTS` held (flock) until :meth:`release`."""

    def __init__(self, taken: set[int]) -> None:
        LOCK_DIR.mkdir(exist_ok=True)
        for port in random.sample(list(PORTS), len(PORTS)):
            if port in taken:
                continue
            handle = open(LOCK_DIR / str(port), "w")  # noqa: SIM115 (held while the port is)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            if _bindable(port):
                self.port, self._handle = port, handle
                return
            handle.close()
        raise RuntimeError(f"no free port in {PORTS}")

    def release(self) -> None:
        self._handle.close()


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _stopped(task: Path) -> bool:
    """A thread (``/proc/<pid>/task/<tid>``) is stopped by a signal, or gone."""
    try:
        stat = (task / "stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("T", "t")


class NatsNode:
    """One ``nats-server -js`` process (started by :meth:`start`)."""

    def __init__(self, name: str, root: Path, client: _Port, route: _Port | None) -> None:
        self.name = name
        self.store_dir = root / name
        self.log = root / f"{name}.log"
        self._client = client
        self._route = route
        self.port = client.port
        self.route_port = route.port if route is not None else None
        self.routes: list[int] = []
        self.extra: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start (or restart) the process on its ports and store directory."""
        command = [
            nats_server_binary(),
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-sd",
            str(self.store_dir),
            "-n",
            self.name,
        ]
        if self.route_port is not None:
            command += [
                "--cluster_name",
                "fleet",
                "--cluster",
                f"nats://127.0.0.1:{self.route_port}",
                "--routes",
                ",".join(f"nats://127.0.0.1:{port}" for port in self.routes),
            ]
        self._log_file = open(self.log, "ab")  # noqa: SIM115 (closed in stop/kill)
        self.proc = subprocess.Popen(
            [*command, *self.extra], stdout=self._log_file, stderr=subprocess.STDOUT
        )

    def _signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def pause(self) -> None:
        """SIGSTOP: its sockets stay open and nothing answers (returns once every thread
        of the process is stopped, at most :data:`READY_SECONDS`)."""
        self._signal(signal.SIGSTOP)
        assert self.proc is not None
        tasks = Path(f"/proc/{self.proc.pid}/task")
        deadline = time.monotonic() + READY_SECONDS
        while not all(_stopped(task) for task in tasks.iterdir()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"nats-server {self.name}: not stopped by SIGSTOP")
            time.sleep(0.01)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, and wait for the process (bounded)."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), and wait for the process (bounded)."""
        self._end(signal.SIGTERM)

    def _end(self, sig: int) -> None:
        if self.proc is not None:
            self._signal(signal.SIGCONT)
            self._signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
            self.proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def release(self) -> None:
        self.kill()
        self._client.release()
        if self._route is not None:
            self._route.release()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


async def _quiet(exc: Exception) -> None:
    """nats-py's error callback: the caller sees the error (its default logs a traceback)."""


async def _jetstream_answers(url: str, env: dict[str, Any]) -> None:
    nc = await nats.connect(url, connect_timeout=1, allow_reconnect=False, error_cb=_quiet, **env)
    try:
        await nc.jetstream(timeout=1).account_info()
    finally:
        await nc.close()


async def _place_probe(url: str, replicas: int, env: dict[str, Any]) -> None:
    nc = await nats.connect(
        url.split(","), connect_timeout=1, allow_reconnect=False, error_cb=_quiet, **env
    )
    try:
        js = nc.jetstream(timeout=2)
        await js.add_stream(name="fleet-probe", subjects=["fleet-probe"], num_replicas=replicas)
        await js.delete_stream("fleet-probe")
    finally:
        await nc.close()


class NatsCluster:
    """``size`` nodes (1: a lone server; 3: a cluster with JetStream replication)."""

    def __init__(self, root: Path, size: int, extra: list[str] | None = None) -> None:
        taken: set[int] = set()
        self.nodes: list[NatsNode] = []
        for i in range(size):
            client = _Port(taken)
            taken.add(client.port)
            route = _Port(taken) if size > 1 else None
            if route is not None:
                taken.add(route.port)
            node = NatsNode(f"n{i}", root, client, route)
            node.extra = list(extra or [])
            self.nodes.append(node)
        for node in self.nodes:
            node.routes = [n.route_port for n in self.nodes if n.route_port is not None]
        self.connect_options: dict[str, Any] = {}
        """``nats.connect`` credentials the test servers require (for :meth:`wait_ready`)."""

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (what ``--fleet`` takes)."""
        return ",".join(node.url for node in self.nodes)

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        self.wait_ready()

    def wait_ready(self, nodes: list[NatsNode] | None = None) -> None:
        """Until every (running) node's JetStream answers; at most :data:`READY_SECONDS`."""
        deadline = time.monotonic() + READY_SECONDS
        for node in nodes or self.nodes:
            while True:
                if node.proc is None or node.proc.poll() is not None:
                    raise RuntimeError(f"nats-server {node.name} exited:\n{node.log_text()}")
                try:
                    asyncio.run(_jetstream_answers(node.url, self.connect_options))
                    break
                except (TimeoutError, nats.errors.Error, OSError):
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"nats-server {node.name}: JetStream not ready in {READY_SECONDS}s:\n"
                            f"{node.log_text()}"
                        ) from None
                    time.sleep(0.1)

        if len(self.nodes) > 1 and (nodes is None or len(nodes) == len(self.nodes)):
            self._wait_placement(deadline)

    def _wait_placement(self, deadline: float) -> None:
        """Until a stream with a replica on every node can be made (the peers all joined)."""
        while True:
            try:
                asyncio.run(_place_probe(self.url, len(self.nodes), self.connect_options))
                return
            except (TimeoutError, nats.errors.Error, OSError) as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"JetStream cannot place {len(self.nodes)} replicas: {exc}"
                    ) from None
                time.sleep(0.2)

    def restart(self, node: NatsNode) -> None:
        node.kill()
        node.start()

    def release(self) -> None:
        for node in self.nodes:
            node.release()


@contextlib.contextmanager
def nats_cluster(
    root: Path,
    size: int = 1,
    extra: list[str] | None = None,
    connect_options: dict[str, Any] | None = None,
) -> Iterator[NatsCluster]:
    """Start ``size`` nodes under ``root`` (JetStream ready), and kill them at the end.

    ``extra``: more ``nats-server`` flags; a ``--auth`` token or ``--user``/``--pass``
    there is what :meth:`NatsCluster.wait_ready` connects with, unless
    ``connect_options`` (``nats.connect`` keywords, e.g. ``tls``) says otherwise.
    """
    nats_server_binary()
    root.mkdir(parents=True, exist_ok=True)
    cluster = NatsCluster(root, size, extra)
    if extra and "--auth" in extra:
        cluster.connect_options = {"token": extra[extra.index("--auth") + 1]}
    if extra and "--user" in extra:
        cluster.connect_options = {
            "user": extra[extra.index("--user") + 1],
            "password": extra[extra.index("--pass") + 1],
        }
    if connect_options is not None:
        cluster.connect_options = connect_options
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.release()
