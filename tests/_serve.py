"""One way for a test to start a real ``pineapple serve`` (and to run the CLI to its end).

:class:`Serve` starts the process on a free loopback port, reads its stderr
on a thread into :attr:`Serve.log`, waits (bounded) until it listens, and
stops it: SIGTERM, then SIGKILL at a deadline, and every worker process it
had is killed too, so none outlives its test or holds the log pipe open.
It passes ``--shutdown-delay-seconds 0`` unless the test gives its own: the
default 5 s delay would cost every stop 5 s.

Guarantees: every wait here has a deadline; the reader thread ends at the
process's end of file (exit or kill), and ``close`` joins it with a timeout.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Self

import httpx
import psutil

__all__ = [
    "CLI",
    "CLOSE_GRACE",
    "GO_RUN",
    "GO_SERVER",
    "LISTENING",
    "ROOT",
    "START_WITHIN",
    "STOP_WITHIN",
    "Serve",
    "cli_env",
    "run_cli",
]

ROOT = Path(__file__).resolve().parents[1]
CLI = "import sys; from pineapple.cli import main; sys.exit(main())"
"""``python -c`` code that runs the ``pineapple`` command (no installed script needed)."""
GO_SERVER = "import sys; from server.cli._go_commands import server_main; sys.exit(server_main())"
"""``python -c`` code that runs ``pineapple-server`` (the console script's function)."""
GO_RUN = "import sys; from server.cli._go_commands import run_main; sys.exit(run_main())"
"""``python -c`` code that runs ``pineapple-run``."""
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
"""The line ``serve`` logs once it accepts connections (port 0: the port it got)."""
START_WITHIN = 60.0  # seconds a server may take to listen: Python processes on a busy box
STOP_WITHIN = 30.0  # seconds a test's SIGTERM may take to end the server (stop, terminate)
CLOSE_GRACE = 5.0  # seconds close() waits after its SIGTERM before it kills the server


def cli_env(extra: Mapping[str, str] | None = None, *, drop: Iterable[str] = ()) -> dict[str, str]:
    """The environment of a child ``pineapple``: ours without the names in ``drop`` and
    without an admin token (the tests' admin calls come from loopback), the repository
    on ``PYTHONPATH``, and ``extra`` on top."""
    # Servers keep their config history under one folder of the temporary directory,
    # never in the user's ~/.local/state (each test's config path has its own).
    state = os.path.join(tempfile.gettempdir(), "pineapple-tests-state")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": state}
    for name in ("PINEAPPLE_ADMIN_TOKEN", *drop):
        env.pop(name, None)
    return {**env, **(extra or {})}


def run_cli(
    *args: str,
    timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
    cwd: Path = ROOT,
    main: str = CLI,
) -> subprocess.CompletedProcess[str]:
    """``pineapple ARGS`` to its end; killed and ``TimeoutExpired`` past ``timeout``."""
    return subprocess.run(
        [sys.executable, "-c", main, *args],
        capture_output=True,
        text=True,
        env=cli_env() if env is None else dict(env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


class Serve:
    """``pineapple serve CONFIG ARGS...`` on a free loopback port; always :meth:`close` it
    (or use it as a context manager).

    ``env`` replaces the environment (build it with :func:`cli_env`); ``main``
    replaces the ``python -c`` code that runs the CLI (a test that sets a limit
    first). ``go``: run ``pineapple-server -config CONFIG -addr 127.0.0.1:0 ARGS...``
    instead (the Go server's command line). With ``wait`` (the default) the
    constructor returns once the server listens, and raises ``AssertionError``
    with the log if it exits or takes over ``START_WITHIN`` seconds first;
    without, call :meth:`start` or :meth:`listening_or_exited`.
    """

    def __init__(
        self,
        config: Path | None,
        *args: str,
        env: Mapping[str, str] | None = None,
        main: str = CLI,
        wait: bool = True,
        go: bool = False,
    ) -> None:
        if go:  # the Go server's command line: pineapple-server -config C -addr 127.0.0.1:0
            named = [] if config is None else ["-config", str(config)]
            argv = [sys.executable, "-c", GO_SERVER, *named, "-addr", "127.0.0.1:0"]
        else:  # config None: a fleet pod serves the fleet's
            named = [] if config is None else [str(config)]
            argv = [sys.executable, "-c", main, "serve", *named, "--addr", "127.0.0.1:0"]
        if "--shutdown-delay-seconds" not in args:
            argv += ["--shutdown-delay-seconds", "0"]
        self.proc = subprocess.Popen(
            [*argv, *args],
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env() if env is None else dict(env),
            cwd=ROOT,
        )
        self.log: list[str] = []
        """Every stderr line so far (appended by the reader thread)."""
        self._listeners = _listeners(args)
        self.url = ""
        """``http://127.0.0.1:PORT`` once :meth:`start` saw the server listen."""
        self._new_line = threading.Condition()
        self._workers_seen: set[psutil.Process] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if wait:
            try:
                self.start()
            except BaseException:
                self.close()
                raise

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # bounded: ends at EOF, when the process exits or is killed
            with self._new_line:
                self.log.append(line)
                self._new_line.notify_all()
        with self._new_line:
            self._new_line.notify_all()  # a waiter learns the log is complete

    @property
    def addr(self) -> str:
        """``127.0.0.1:PORT``, as ``--addr`` of another command takes it."""
        return self.url.removeprefix("http://")

    def new_client(self, timeout: float = 5.0) -> httpx.Client:
        """A new HTTP client of the server (close it: use it in a ``with``)."""
        return httpx.Client(base_url=self.url, timeout=timeout)

    def text(self) -> str:
        """The log so far, as one string."""
        return "".join(list(self.log))

    def count(self, pattern: str | re.Pattern[str]) -> int:
        """How many log lines so far match ``pattern``."""
        regex = re.compile(pattern)
        return sum(1 for line in list(self.log) if regex.search(line))

    def wait_line(
        self, pattern: str | re.Pattern[str], timeout: float = 20.0, *, times: int = 1
    ) -> re.Match[str]:
        """The ``times``-th log line matching ``pattern``; ``AssertionError`` (with the log)
        past ``timeout`` seconds or once the log is complete without it."""
        regex = re.compile(pattern)
        end = time.monotonic() + timeout
        with self._new_line:
            while True:  # bounded: the deadline, or the end of the log
                found = [m for line in self.log if (m := regex.search(line))]
                if len(found) >= times:
                    return found[times - 1]
                left = end - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    raise AssertionError(f"no line /{regex.pattern}/ x{times}:\n{self.text()}")
                self._new_line.wait(left)

    def start(self, timeout: float = START_WITHIN) -> Self:
        """Wait until the server listens (see :meth:`listening_or_exited`); an exit first
        is an ``AssertionError``."""
        if not self.listening_or_exited(timeout):
            raise AssertionError("serve exited before listening:\n" + self.text())
        return self

    def listening_or_exited(self, timeout: float = START_WITHIN) -> bool:
        """Whether it listens (sets :attr:`url`); False once it exited without listening.

        With ``--workers N`` it listens once each of the N workers logged so: a
        request or signal sent then finds every worker serving, none still
        starting. Still starting after ``timeout`` seconds is an ``AssertionError``.
        """
        try:
            self.url = self.wait_line(LISTENING, timeout, times=self._listeners).group(1)
        except AssertionError:
            if self._reader.is_alive():
                raise AssertionError(
                    f"serve not listening after {timeout:g}s:\n{self.text()}"
                ) from None
            self.proc.wait(10)  # its stderr is closed: it is exiting (bounded)
            return False
        return True

    def wait_exit(self, timeout: float = START_WITHIN) -> int:
        """The exit code of a server that exits on its own within ``timeout`` seconds
        (``subprocess.TimeoutExpired`` otherwise); the log is then complete."""
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    def workers(self) -> list[psutil.Process]:
        """The worker processes of a supervisor (``--workers N``) that run now."""
        try:
            children = psutil.Process(self.proc.pid).children()
        except psutil.NoSuchProcess:
            return []
        found = []
        for child in children:
            try:
                if "multiprocessing.spawn" in " ".join(child.cmdline()):
                    found.append(child)
                    self._workers_seen.add(child)
            except (psutil.ZombieProcess, psutil.NoSuchProcess):
                continue  # a worker that just died, not yet reaped by the supervisor
        return found

    def terminate(self, timeout: float = STOP_WITHIN) -> int:
        """SIGTERM; the exit code (``subprocess.TimeoutExpired`` past ``timeout`` seconds)."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self, timeout: float = STOP_WITHIN) -> int:
        """SIGTERM, the exit code, then :meth:`close` (also when it did not exit in time)."""
        try:
            return self.terminate(timeout)
        finally:
            self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, grace: float = CLOSE_GRACE) -> None:
        """Stop the server if it runs (SIGTERM, SIGKILL after ``grace`` seconds), kill every
        process it started, and close the pipe. Safe to call more than once."""
        try:
            spawned = set(psutil.Process(self.proc.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            spawned = set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for child in spawned | self._workers_seen:  # none may outlive the test
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        self._reader.join(5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


def _listeners(args: tuple[str, ...]) -> int:
    """How many processes of ``serve ARGS`` log that they listen: each of ``--workers N``
    (``auto``: at least one), else the one process."""
    for flag, value in itertools.pairwise(args):
        if flag == "--workers" and value.isdigit():
            return max(1, int(value))
    return 1
