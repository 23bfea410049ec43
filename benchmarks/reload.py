"""Target 3: a reload that changes only ``pipeline_config`` carries a 200,000-row table over.

Two :class:`server.lowlevel.Service` instances run in one child process, one serving a
1,000-row ``feed_data`` table and one a 200,000-row table. Rounds alternate
between them; each round rewrites the config file with the other ``top_n``
(so only ``pipeline_config`` changes) and times ``Reloader.reload`` — the path
every trigger (watcher, SIGHUP, ``POST /admin/reload``) takes. The carried-over
table must make the big reload cost what the small one costs, and the
process's peak RSS during the reload must stay near its steady RSS (no copy of
the table, no re-read of it).

Peak RSS is exact on Linux: ``/proc/self/clear_refs`` resets ``VmHWM`` to the
current RSS just before the reload and ``VmHWM`` is read just after it. Where
that is unavailable a thread samples RSS with psutil every 0.2 ms instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from ._configs import feed_config
from ._mariadb import feed_table, unreachable
from ._measure import Result, median

__all__ = ["reload_carry_over"]

BIG, SMALL = 200_000, 1_000


class _Peak:
    """Peak RSS over a block: VmHWM after a clear_refs reset, or a sampling thread."""

    def __init__(self) -> None:
        self.exact = self._reset()
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def _reset() -> bool:
        try:
            Path("/proc/self/clear_refs").write_text("5")
            return True
        except OSError:
            return False

    @staticmethod
    def _status(field: str) -> int:
        text = Path("/proc/self/status").read_text()
        match = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
        assert match is not None
        return int(match.group(1)) * 1024

    @staticmethod
    def rss() -> int:
        import psutil

        return int(psutil.Process().memory_info().rss)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.0002)

    def __enter__(self) -> _Peak:
        if self.exact:
            self._reset()
        else:
            self.peak = self.rss()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.exact:
            self.peak = self._status("VmHWM")
        else:
            self._stop.set()
            assert self._thread is not None
            self._thread.join()
            self.peak = max(self.peak, self.rss())


def _child(small_table: str, big_table: str, rounds: int) -> dict[str, object]:
    """Runs in the child process: both services, interleaved reloads, timings and RSS."""
    from server import Config
    from server.lowlevel import Service

    with tempfile.TemporaryDirectory() as tmp:
        services: dict[str, tuple[Service, Path, str]] = {}
        for label, table in (("small", small_table), ("big", big_table)):
            path = Path(tmp) / f"{label}.json"
            path.write_bytes(orjson.dumps(feed_config(table, top_n=20)))
            service = Service(Config(path, watch=False))
            service.start()
            services[label] = (service, path, table)
        times: dict[str, list[float]] = {"small": [], "big": []}
        ratios: list[float] = []
        steady_big = 0
        exact = True
        reloads = {"small": 0, "big": 0}
        try:

            def reload(label: str, measure: Callable[[float, int, int], None] | None) -> None:
                reloads[label] += 1
                service, path, table = services[label]
                top_n = 20 + reloads[label] % 2  # 21, 20, 21, ...: always a change
                path.write_bytes(orjson.dumps(feed_config(table, top_n=top_n)))
                before = _Peak.rss()
                with _Peak() as peak:
                    started = time.perf_counter()
                    outcome = service.reloader.reload("admin")
                    elapsed = time.perf_counter() - started
                if outcome.result != "ok":
                    raise AssertionError(f"reload of {label}: {outcome.result} {outcome.error}")
                snap = service.holder.current
                assert snap is not None
                status = snap.manager.status_of("feed")
                if status is None or status.version != 1:
                    raise AssertionError(f"{label}: the table was fetched again, not carried")
                if measure is not None:
                    measure(elapsed, before, peak.peak)

            for label in ("small", "big", "small", "big"):  # warm-up
                reload(label, None)
            for r in range(rounds):
                for label in ("small", "big") if r % 2 == 0 else ("big", "small"):

                    def record(elapsed: float, before: int, peak: int, label: str = label) -> None:
                        nonlocal steady_big
                        times[label].append(elapsed)
                        if label == "big":
                            steady_big = max(steady_big, before)
                            ratios.append(peak / before)

                    reload(label, record)
            exact = _Peak().exact
        finally:
            for service, _, _ in services.values():
                service.stop()
    return {
        "small": median(times["small"]),
        "big": median(times["big"]),
        "rss_ratio": max(ratios),
        "steady": steady_big,
        "exact": exact,
    }


def reload_carry_over(rounds: int = 40) -> list[Result]:
    """Big vs small reload time (medians), and the worst peak/steady RSS of the big one."""
    name_time = f"reload, pipeline_config only: {BIG:,}-row feed_data / {SMALL:,}-row"
    name_rss = f"reload with {BIG:,}-row feed_data: peak RSS / steady RSS"
    reason = unreachable()
    if reason:
        return [Result(3, name_time, None, 1.2, reason), Result(3, name_rss, None, 1.1, reason)]
    with feed_table(SMALL, "r") as small, feed_table(BIG, "r") as big:
        code = (
            "import json, sys; from benchmarks.reload import _child; "
            f"print(json.dumps(_child({small!r}, {big!r}, {rounds})))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=Path(__file__).resolve().parent.parent,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
    if proc.returncode != 0:
        raise RuntimeError(f"reload child failed:\n{proc.stderr[-2000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    how = "VmHWM after clear_refs" if got["exact"] else "psutil sampling"
    return [
        Result(
            3,
            name_time,
            got["big"] / got["small"],
            1.2,
            f"{got['big'] * 1e3:.2f} ms vs {got['small'] * 1e3:.2f} ms "
            f"(median of {rounds}; server.lowlevel.Reloader.reload, table carried over)",
        ),
        Result(
            3,
            name_rss,
            got["rss_ratio"],
            1.1,
            f"worst of {rounds} reloads; steady {got['steady'] / 2**20:.0f} MiB ({how})",
        ),
    ]
