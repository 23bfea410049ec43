"""``pineapple fleet status|pin|unpin|rollback|config-rollback``: the real command against
the store's backends; each action's change is read back from the store."""

from __future__ import annotations

import importlib
import time
import tomllib
from pathlib import Path

import orjson
import pytest

import resources
from resources.lowlevel import FILE_CODEC
from server.fleet import CONFIG, PINS, PODS, FleetStore, publish_snapshot
from server.fleet._commands import add_commands
from tests._serve import ROOT

from ._producer import fleet_cli

pytestmark = pytest.mark.timeout(300)


def _publish(store: FleetStore, tmp_path: Path, generation: int) -> None:
    value = resources.FileMapping({"k": {"generation": generation}})
    value.source = "feed.json"
    publish_snapshot(
        store,
        name="feed",
        type_name="json_file",
        params_hash="json_file-abc",
        codec=FILE_CODEC,
        value=value,
        generation=generation,
        source_version=None,
        workdir=tmp_path,
    )


@pytest.fixture
def fleet(store: FleetStore, tmp_path: Path) -> FleetStore:
    """Generations 1, 2, 3 of ``feed`` published (the store keeps 2: 2 and 3), a config."""
    for generation in (1, 2, 3):
        _publish(store, tmp_path, generation)
    store.put(CONFIG, "current", b'{"v": 1}')
    return store


def _pin(store: FleetStore) -> dict[str, object] | None:
    record = store.get(PINS, "feed")
    return None if record is None else dict(orjson.loads(record.value))


def test_status_shows_each_resource_and_each_pod_with_its_skew(
    fleet: FleetStore, store_url: str
) -> None:
    revision = fleet.get(CONFIG, "current")
    assert revision is not None
    now = time.time()
    beat = {"config_revision": revision.revision, "since": now - 60, "time": now}
    fleet.put(PODS, "pod-a", orjson.dumps({**beat, "pod": "pod-a", "resources": {"feed": 3}}))
    fleet.put(
        PODS,
        "pod-b",
        orjson.dumps({**beat, "pod": "pod-b", "resources": {"feed": 2}, "time": now - 600}),
    )

    shown = fleet_cli("fleet", "status", "--fleet", store_url)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"fleet store: {fleet.url}"
    assert lines[1].startswith(f"config: revision {revision.revision} (")
    feed = next(line for line in lines if line.startswith("feed "))
    assert feed.split()[:4] == ["feed", "json_file", "3", "2,3"]  # announced, kept
    pod_a = next(line for line in lines if line.startswith("pod-a "))
    pod_b = next(line for line in lines if line.startswith("pod-b "))
    assert pod_a.endswith("feed=3") and "*" not in pod_a and "STALE" not in pod_a
    assert pod_b.endswith("feed=2*") and "STALE" in pod_b  # off the announced, old beat
    assert lines[-1] == "2 pod(s): 1 off what the fleet serves (*), 1 stale"

    as_json = fleet_cli("fleet", "status", "--fleet", store_url, "--json")
    assert as_json.returncode == 0, as_json.stderr
    view = orjson.loads(as_json.stdout)
    (resource,) = view["resources"]
    assert (resource["generation"], resource["kept"], resource["pin"]) == (3, [2, 3], None)
    pods = {p["pod"]: p for p in view["pods"]}
    assert pods["pod-a"]["skew"] == [] and not pods["pod-a"]["stale"]
    assert pods["pod-b"]["skew"] == ["feed"] and pods["pod-b"]["stale"]
    assert view["config"]["revision"] == revision.revision


def test_pin_rollback_and_unpin_write_the_fleet_pin(fleet: FleetStore, store_url: str) -> None:
    def fleet_do(*args: str) -> tuple[int, str]:
        done = fleet_cli("fleet", *args, "--fleet", store_url)
        return done.returncode, done.stdout + done.stderr

    assert fleet_do("pin", "feed", "--reason", "bad data upstream") == (
        0,
        "pinned feed at generation 3 for every pod\n",
    )
    pin = _pin(fleet)
    assert pin is not None
    assert (pin["generation"], pin["reason"]) == (3, "bad data upstream")
    assert "@" in str(pin["by"]) and abs(float(str(pin["time"])) - time.time()) < 60

    code, said = fleet_do("pin", "feed", "1")
    assert code == 1
    assert "resource 'feed': generation 1 is no longer kept" in said and "(kept: 2, 3)" in said
    assert _pin(fleet) == pin  # unchanged

    assert fleet_do("rollback", "feed")[0] == 0  # the kept one before the pinned 3
    assert _pin(fleet) is not None and _pin(fleet)["generation"] == 2  # type: ignore[index]
    code, said = fleet_do("rollback", "feed")
    assert code == 1 and "resource 'feed': no generation before 2 is kept" in said
    assert fleet_do("rollback", "feed", "3")[0] == 0
    assert _pin(fleet)["generation"] == 3  # type: ignore[index]

    shown = fleet_cli("fleet", "status", "--fleet", store_url)
    assert "3 by " in next(line for line in shown.stdout.splitlines() if line.startswith("feed "))

    assert fleet_do("unpin", "feed") == (0, "unpinned feed: pods serve the announced generation\n")
    assert _pin(fleet) is None
    assert fleet_do("unpin", "feed") == (0, "feed was not pinned\n")

    code, said = fleet_do("pin", "nope")
    assert code == 1 and "resource 'nope': nothing is announced for it" in said


def test_config_rollback_makes_a_kept_revision_current_again(
    store: FleetStore, store_url: str
) -> None:
    first = store.put(CONFIG, "current", b'{"v": 1}')
    second = store.put(CONFIG, "current", b'{"v": 2}')

    done = fleet_cli("fleet", "config-rollback", str(first), "--fleet", store_url)
    assert done.returncode == 0, done.stderr
    current = store.get(CONFIG, "current")
    assert current is not None
    assert current.value == b'{"v": 1}' and current.revision > second
    assert done.stdout == (
        f"config revision {first} is current again, as revision {current.revision}\n"
    )

    again = fleet_cli("fleet", "config-rollback", str(current.revision), "--fleet", store_url)
    assert again.returncode == 0 and "is the current one already" in again.stdout
    assert store.get(CONFIG, "current") == current

    missing = fleet_cli("fleet", "config-rollback", "999", "--fleet", store_url)
    assert missing.returncode == 1
    assert "config revision 999 is not kept" in missing.stderr
    assert store.get(CONFIG, "current") == current


def test_an_unreachable_store_exits_2_naming_it() -> None:
    url = "nats://127.0.0.1:20699"  # this helper's range; nothing listens there
    done = fleet_cli("fleet", "status", "--fleet", url, "--fleet-timeout", "1", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "127.0.0.1:20699" in done.stderr


def test_an_empty_fleet_says_so(store: FleetStore, store_url: str) -> None:
    shown = fleet_cli("fleet", "status", "--fleet", store_url)
    assert shown.returncode == 0, shown.stderr
    assert "config: none published" in shown.stdout
    assert "no resource announced" in shown.stdout and "no pod heartbeat" in shown.stdout


def test_the_fleet_commands_are_named_in_the_entry_point_group() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    point = project["project"]["entry-points"]["pineapple.commands"]["fleet"]
    module, _, name = point.partition(":")
    assert getattr(importlib.import_module(module), name) is add_commands
    shown = fleet_cli("--help")
    assert shown.returncode == 0
    assert "publish" in shown.stdout and "fleet" in shown.stdout


def test_bad_flags_are_refused_naming_them(store_url: str, tmp_path: Path) -> None:
    config = str(tmp_path / "config.json")
    ttl = fleet_cli("publish", config, "--fleet", store_url, "--lease-ttl", "0")
    assert ttl.returncode == 2 and "pineapple publish: --lease-ttl must be > 0" in ttl.stderr
    keep = fleet_cli("publish", config, "--fleet", store_url, "--fleet-keep-generations", "0")
    assert keep.returncode == 2 and "keep_generations: must be > 0" in keep.stderr
    scheme = fleet_cli("fleet", "status", "--fleet", "s3://bucket/fleet")
    assert scheme.returncode == 2 and "scheme 's3'" in scheme.stderr
    no_action = fleet_cli("fleet")
    assert no_action.returncode == 2
