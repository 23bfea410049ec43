"""``FleetHeartbeat``: what a pod serves, written to the fleet store every few seconds.

``PODS[pod id]`` = ``{"pod", "resources": {name: generation}, "config_revision",
"since", "time"}``: the generation of every resource the pod reads from the
fleet, the fleet config revision it serves (None: it serves its own file),
since when it serves exactly that (the skew at a glance in ``pineapple fleet
status``), and when this beat was written. A change of what the pod serves
beats at once (:meth:`FleetHeartbeat.changed`); a clean stop deletes the key.

Guarantees:
- It runs on its own thread; each beat is one ``put`` bounded by the store's
  deadline; every wait is bounded by ``interval``. A failed beat is logged
  (once per run of failures, then at debug level) and never raised: the pod
  serves whatever happens to its heartbeat.
- ``_since`` and ``_last`` are written by the beat thread only.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from ._link import StoreLink
from ._store import PODS

__all__ = ["HEARTBEAT_SECONDS", "FleetHeartbeat", "default_pod_id"]

HEARTBEAT_SECONDS = 5.0
"""How often a pod writes its heartbeat (``--fleet-heartbeat-seconds``)."""

_NOT_KEY = re.compile(r"[^-_=.a-zA-Z0-9]")
_log = logging.getLogger("pineapple.fleet")


def default_pod_id() -> str:
    """This pod's id when ``--fleet-pod-id`` is not given: ``<hostname>-<pid>``."""
    host = _NOT_KEY.sub("-", socket.gethostname()).strip(".-") or "pod"
    return f"{host[:200]}-{os.getpid()}"


class FleetHeartbeat:
    """Writes ``PODS[pod_id]`` every ``interval`` seconds and at each change (see module docs)."""

    def __init__(
        self,
        link: StoreLink,
        pod_id: str,
        served: Callable[[], dict[str, int]],
        config_revision: Callable[[], int | None],
        *,
        interval: float = HEARTBEAT_SECONDS,
    ) -> None:
        self._link = link
        self.pod_id = pod_id
        self._served = served
        self._config_revision = config_revision
        self._interval = max(0.05, interval)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._since = time.time()
        self._last: tuple[Any, ...] | None = None
        self._failing = False
        self.beats = 0
        """Beats written so far."""
        self._thread = threading.Thread(
            target=self._run, name="pineapple-fleet-heartbeat", daemon=True
        )

    def start(self) -> None:
        """Beat now, then every ``interval``."""
        self._thread.start()

    def changed(self) -> None:
        """What the pod serves changed: beat now."""
        self._wake.set()

    def stop(self) -> None:
        """Stop beating and delete this pod's key (best effort, bounded)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._interval + 30)
        try:
            self._link.run(lambda store: store.delete(PODS, self.pod_id), probe=True)
        except Exception as exc:  # best effort: the pod is stopping
            _log.debug("cannot delete the heartbeat of pod %s: %s", self.pod_id, exc)

    def body(self) -> dict[str, Any]:
        """This pod's heartbeat now."""
        resources = self._served()
        revision = self._config_revision()
        state = (tuple(sorted(resources.items())), revision)
        now = time.time()
        if state != self._last:
            self._last, self._since = state, now
        return {
            "pod": self.pod_id,
            "resources": resources,
            "config_revision": revision,
            "since": self._since,
            "time": now,
        }

    def _run(self) -> None:
        # Bounded: each wait lasts at most ``interval``; ends on stop().
        while not self._stop.is_set():
            self._beat()
            self._wake.wait(self._interval)
            self._wake.clear()

    def _beat(self) -> None:
        try:
            body = orjson.dumps(self.body())
            self._link.run(lambda store: store.put(PODS, self.pod_id, body), probe=True)
        except Exception as exc:  # never raised: the pod serves whatever its heartbeat does
            level = logging.DEBUG if self._failing else logging.WARNING
            _log.log(level, "pod %s: cannot write its heartbeat: %s", self.pod_id, exc)
            self._failing = True
            return
        if self._failing:
            _log.info("pod %s: its heartbeat is written again", self.pod_id)
        self._failing = False
        self.beats += 1
