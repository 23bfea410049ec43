"""Issue 11, item 14: ``/config`` tells the truth after a fix.

After a bad edit, restoring the file to the content being served used to
leave ``last_reload`` showing the old error for good (an ``unchanged``
result from the watcher or the poll was never recorded). Now the next watch
event or poll records ``unchanged``, with its time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import server

from .._serve import Serve
from ._reload import PLUGIN, digest, invalid, valid, wait_config


def _replace_with(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_restoring_the_served_content_after_a_bad_edit_records_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    config_file = folder / "pineapple.json"
    good, bad = valid("v0"), invalid("v1")
    config_file.write_bytes(good)
    serve = Serve(config_file, "--plugin", PLUGIN)
    try:
        with serve.new_client() as http:
            _replace_with(config_file, bad)
            failed = wait_config(
                http, lambda b: (b["last_reload"] or {}).get("content_hash") == digest(bad)
            )["last_reload"]
            assert failed["result"] == "error" and failed["step"] == "engine", failed

            _replace_with(config_file, good)  # the watcher sees it; its content is served
            body = wait_config(
                http,
                lambda b: (b["last_reload"] or {}).get("content_hash") == digest(good),
                timeout=10,
            )
            last = body["last_reload"]
            assert last["result"] == "unchanged" and last["trigger"] == "watch", last
            assert last["error"] is None and last["at"] > failed["at"]
            assert body["config"]["content_hash"] == digest(good)
            assert body["last_reload_error"]["content_hash"] == digest(bad)  # kept as history
        assert serve.terminate(timeout=15) == 0
    finally:
        serve.close()


def test_the_next_poll_after_the_fix_records_unchanged_with_its_time(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    good = valid("v0")
    path.write_bytes(good)
    service = server.lowlevel.Service(
        server.Config(config_path=path, watch=False, plugins=("tests.server.process_plugin",))
    )
    service.start()
    try:
        reloader = service.reloader
        path.write_bytes(invalid("v1"))
        assert reloader.reload("poll").result == "error"
        attempts = reloader.attempts
        path.write_bytes(good)
        outcome = reloader.reload("poll")
        assert outcome.result == "unchanged" and outcome.error is None
        assert reloader.last == outcome  # used to stay the error
        assert reloader.attempts == attempts + 1
        assert outcome.at >= reloader.last_error.at  # type: ignore[union-attr]
        # Once the truth is recorded, later idle polls stay quiet again.
        assert reloader.reload("poll").result == "unchanged"
        assert reloader.last == outcome and reloader.attempts == attempts + 1
    finally:
        service.stop()
