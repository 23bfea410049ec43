"""Pods in a fleet for the pod tests: a store, what is published into it, real pods.

:class:`Fleet` holds a store (a directory, or a NATS URL) and publishes with
the real producer side (``publish_snapshot`` of a ``json_file`` value read by
the type's own fetcher and written by its codec); the source file is deleted
right after, so a pod that read its source instead of the fleet could not
serve. :meth:`Fleet.pod` starts a real ``pineapple serve --fleet`` in a process
model (:data:`MODES`); :class:`Pod` reads what it serves. Every wait is
bounded (``WAIT``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Self

import httpx
import orjson
import pytest

from pineapple import builtins
from pineapple._params import validate_params
from server.fleet import CONFIG, PINS, Announcement, FleetStore, open_store, publish_snapshot
from server.workers._store_format import entry_key

from .._serve import Serve, cli_env
from ..server.fakes import dump, unified_config

__all__ = ["IN_BOTH_MODES", "MODES", "NAME", "WAIT", "Fleet", "Pod", "wait_until"]

MODES = {"one process": (), "--workers 2": ("--workers", "2")}
"""The process models every pod test runs in, with the same expected answers."""
IN_BOTH_MODES = pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
"""A pod test's ``mode`` (the flags of its process model): it runs in each."""
NAME = "cands"
"""The fleet resource of the tests' config (a ``json_file`` list, recalled by ``/execute``)."""
WAIT = 30.0
"""Seconds: the bound of every wait for a pod to change (a real process on a busy box)."""


def wait_until(what: str, check: Any, timeout: float = WAIT) -> None:
    """Poll ``check()`` until it is true; fail naming ``what`` past ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():  # bounded by the deadline
        assert time.monotonic() < deadline, f"timed out after {timeout:g}s waiting for {what}"
        time.sleep(0.05)


class Fleet:
    """A fleet store under ``root`` (or at ``url``) and the config its pods serve."""

    def __init__(self, root: Path, url: str | None = None, source: Path | None = None) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.url = url or f"file://{root / 'store'}"
        self.store: FleetStore = open_store(self.url, timeout=5.0)
        self.source = source or root / "cands.json"
        self.params = {"path": str(self.source), "format": "list"}
        self.config_path = root / "pod.json"
        self.config_path.write_bytes(dump(self.config("pod")))
        self._registry = builtins.resource_registry()
        self._pods = 0

    def config(self, tag: str) -> dict[str, Any]:
        """A config whose ``/execute`` answers ``static`` tagged ``tag`` and every row of
        the fleet resource."""
        resources = {NAME: {"type": "json_file", "interval": 60, "params": self.params}}
        return unified_config(tag, resources=resources, recall_from=NAME)

    def params_hash(self) -> str:
        schema = self._registry.get("json_file")
        assert schema is not None
        params = validate_params(NAME, schema.params, dict(self.params))
        return entry_key(NAME, "json_file", params)

    def value(self, generation: int) -> Any:
        """Generation ``generation``'s value: ``generation`` rows ``g<generation>-<i>``, read
        by the type's own fetcher (then the file is gone)."""
        rows = [{"id": f"g{generation}-{i}", "tag": "fleet"} for i in range(generation)]
        self.source.write_bytes(orjson.dumps(rows))
        factory = self._registry.factory("json_file")
        assert factory is not None
        try:
            return factory(dict(self.params))()
        finally:
            self.source.unlink()

    def publish(self, generation: int) -> Announcement:
        """Publish generation ``generation`` as a producer does."""
        schema = self._registry.get("json_file")
        assert schema is not None and schema.codec is not None
        workdir = self.root / "producer"
        workdir.mkdir(exist_ok=True)
        return publish_snapshot(
            self.store,
            name=NAME,
            type_name="json_file",
            params_hash=self.params_hash(),
            codec=schema.codec,
            value=self.value(generation),
            generation=generation,
            source_version=None,
            workdir=workdir,
        )

    def pin(self, generation: int, reason: str = "a test pins it") -> None:
        body = {"generation": generation, "reason": reason, "by": "tests", "time": time.time()}
        self.store.put(PINS, NAME, orjson.dumps(body))

    def put_config(self, config: dict[str, Any] | bytes) -> int:
        """Make ``config`` the fleet's config; its revision."""
        data = config if isinstance(config, bytes) else dump(config)
        return self.store.put(CONFIG, "current", data)

    def pod(
        self,
        mode: tuple[str, ...],
        *args: str,
        own_config: bool = True,
        cache: Path | None = None,
        pod_id: str | None = None,
        wait: bool = True,
    ) -> Pod:
        """A pod of this fleet in process model ``mode`` (its own cache unless ``cache``)."""
        self._pods += 1
        folder = self.root / f"pod{self._pods}"
        folder.mkdir()
        if mode:  # the workers' store under the test's folder, never the machine's /dev/shm
            mode = (*mode, "--shared-dir", str(folder))
        flags = [
            "--fleet",
            self.url,
            "--fleet-cache",
            str(cache or folder / "cache"),
            "--fleet-poll-seconds",
            "60",  # the watch must do it: the poll is far past every bound below
            "--fleet-heartbeat-seconds",
            "0.5",
        ]
        if pod_id is not None:
            flags += ["--fleet-pod-id", pod_id]
        config = self.config_path if own_config else None
        return Pod(config, *mode, *flags, *args, wait=wait)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Pod(Serve):
    """A real ``pineapple serve --fleet`` (see :meth:`Fleet.pod`)."""

    def __init__(self, config: Path | None, *args: str, wait: bool = True) -> None:
        super().__init__(config, "--no-watch", *args, env=cli_env(), wait=wait)

    def get(self, path: str) -> httpx.Response:
        with self.new_client(WAIT) as client:
            return client.get(path)

    def answer(self) -> list[dict[str, Any]]:
        """One ``/execute`` answer's items."""
        with self.new_client(WAIT) as client:
            response = client.post("/execute", content=b'{"common": {}, "items": []}')
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    def generations(self) -> set[int]:
        """The fleet generations one answer's rows come from."""
        ids = [str(item["id"]) for item in self.answer() if str(item["id"]).startswith("g")]
        return {int(i[1:].split("-")[0]) for i in ids}

    def tag(self) -> str:
        """The tag of the config that answered (its ``static`` item)."""
        return str(next(i["tag"] for i in self.answer() if i["id"] == "static"))

    def serves(self, generation: int, answers: int = 6) -> bool:
        """Whether ``answers`` answers in a row (any worker) come from ``generation`` only."""
        return all(self.generations() == {generation} for _ in range(answers))

    def status(self) -> dict[str, Any]:
        """``GET /resources/cands``'s status."""
        response = self.get(f"/resources/{NAME}")
        assert response.status_code == 200, response.text
        status: dict[str, Any] = response.json()["status"]
        return status

    def fresh(self) -> dict[str, Any]:
        cond: dict[str, Any] = next(c for c in self.status()["conditions"] if c["type"] == "Fresh")
        return cond
