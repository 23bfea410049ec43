"""A pod without a config file serves the fleet's config and follows its revisions.

Real pods (one process and ``--workers 2``, the same answers) on a directory
store: a new revision of ``CONFIG["current"]`` serves within the bound; a
revision that does not build is refused like any bad reload, and the running
config keeps serving; the config the pod accepted is the one its heartbeat
names.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from server.fleet import PODS

from .._serve import run_cli
from ._pods import IN_BOTH_MODES, Fleet, wait_until

FOLLOW_WITHIN = 30.0
"""Seconds from a new config revision to the pod serving it (the watch polls every 50 ms). The
watch itself answers in well under a second; the rest is a reload's build on a CI machine
that may run several suites at once."""

pytestmark = [pytest.mark.timeout(240), IN_BOTH_MODES]


def test_a_pod_without_config_serves_the_fleets_and_follows_it(
    tmp_path: Path, mode: tuple[str, ...]
) -> None:
    with Fleet(tmp_path) as fleet:
        fleet.publish(1)
        fleet.put_config(fleet.config("first"))
        with fleet.pod(mode, own_config=False, pod_id="pod-c") as pod:
            assert pod.tag() == "first" and pod.serves(1)
            revision = fleet.put_config(fleet.config("second"))
            wait_until("the second revision served", lambda: pod.tag() == "second", FOLLOW_WITHIN)
            assert pod.serves(1)  # the resource was carried over, not fetched again

            def beat_revision() -> object:
                record = fleet.store.get(PODS, "pod-c")
                return None if record is None else orjson.loads(record.value)["config_revision"]

            wait_until("the heartbeat names the revision", lambda: beat_revision() == revision)
            source = pod.get("/config").json()["config_source"]  # the fleet config's revision
            assert source == {
                "kind": "fleet",
                "store": fleet.url,
                "revision": revision,
                "stale": None,
            }, source

            bad = fleet.config("bad")
            bad["pipeline_config"]["operators"]["static"]["type_name"] = "no_such_operator"
            fleet.put_config(bad)
            wait_until(
                "the bad revision refused",
                lambda: pod.get("/config").json()["last_reload_error"] is not None,
                FOLLOW_WITHIN,
            )
            error = pod.get("/config").json()["last_reload_error"]
            assert error["step"] == "engine" and "no_such_operator" in error["error"], error
            assert pod.tag() == "second"  # the running config keeps serving
            assert beat_revision() == revision  # and it is still the one the pod says it serves
            assert pod.get("/config").json()["config_source"]["revision"] == revision
            fleet.put_config(fleet.config("third"))
            wait_until("the next good revision served", lambda: pod.tag() == "third", FOLLOW_WITHIN)


def test_a_pod_without_config_and_without_store_or_cache_refuses_to_start(
    tmp_path: Path, mode: tuple[str, ...]
) -> None:
    with Fleet(tmp_path) as fleet:
        pod = fleet.pod(mode, own_config=False, wait=False)  # the store holds no config yet
        try:
            assert pod.wait_exit() == 1
            assert "holds no config" in pod.text()
        finally:
            pod.close()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "CONFIG is required (or --fleet URL"),
        (("--fleet", "file:///tmp/x"), "--fleet needs --fleet-cache DIR"),
        (("--fleet", "x", "--fleet-cache", "c", "--fleet-timeout", "0"), "--fleet-timeout must be"),
    ],
)
def test_serve_names_a_missing_or_bad_fleet_flag(
    args: tuple[str, ...], says: str, mode: tuple[str, ...]
) -> None:
    done = run_cli("serve", *mode, *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
