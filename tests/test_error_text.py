"""Every error text is bounded where it is made (``pineapple/_error_text.py``): the cut
itself, the server's build and reload errors and refusals, a resource's status, and a
config value quoted back (a 1 MB name)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import server
from pineapple import resource
from pineapple._error_text import MAX_ERROR_BYTES, MAX_QUOTED_BYTES, capped, clipped
from server._build import Builder
from server._build_error import BuildError, CheckError
from server._decisions import Refused
from server._reload_policy import ReloadOutcome
from tests.resource._values import CountingFetcher
from tests.server.fakes import unified_config

pytestmark = pytest.mark.timeout(60)

_MB = 1_200_000


def test_a_text_over_the_bound_is_cut_saying_how_much_more_there_was() -> None:
    assert capped("short") == "short"
    exact = "x" * MAX_ERROR_BYTES
    assert capped(exact) == exact
    cut = capped("é" * _MB)  # two bytes each: the cut never splits one
    assert len(cut.encode()) <= MAX_ERROR_BYTES
    head = cut.split("...")[0]
    assert cut.endswith(f"... ({2 * _MB - len(head.encode())} more bytes)")
    assert len(clipped("n" * _MB).encode()) <= MAX_QUOTED_BYTES
    assert clipped(12) == "12"


def test_build_errors_reload_outcomes_and_refusals_are_bounded() -> None:
    huge = "y" * _MB
    error = BuildError("engine", huge)
    assert len(error.reason.encode()) <= MAX_ERROR_BYTES
    assert str(error) == f"engine: {error.reason}"
    both = CheckError([BuildError("engine", huge), BuildError("deps", "the tail " + huge)])
    assert len(both.reason.encode()) <= MAX_ERROR_BYTES
    assert "[engine] yyy" in both.reason and "[deps] the tail" in both.reason  # each shows
    outcome = ReloadOutcome("error", "admin", 0.0, 0.0, None, error=huge, step="start")
    assert outcome.error is not None and len(outcome.error.encode()) <= MAX_ERROR_BYTES
    assert len(orjson.dumps(outcome.to_dict())) < MAX_ERROR_BYTES + 512
    refused = Refused(409, huge)
    assert len(str(refused).encode()) <= MAX_ERROR_BYTES


@pytest.mark.parametrize(
    "config",
    [
        unified_config("t", extra_ops={"o": {"type_name": "t" * _MB}}),
        unified_config("t", extra_ops={"o" * _MB: {"type_name": "nope"}}),
        unified_config("t", resources={"r" * _MB: {"type": "nope", "params": {}}}),
        unified_config("t", resources={"r": {"type": "n" * _MB, "params": {}}}),
        unified_config("t", resources={"r": {"type": "json_file", "params": {"p" * _MB: 1}}}),
    ],
    ids=["operator type", "operator name", "resource name", "resource type", "param key"],
)
def test_a_quoted_config_value_is_clipped_and_the_reason_stays(
    config: dict[str, object], tmp_path: Path
) -> None:
    path = tmp_path / "pineapple.json"
    data = orjson.dumps(config)
    path.write_bytes(data)
    with pytest.raises(BuildError) as caught:
        Builder(server.Config(path)).check(data)
    text = str(caught.value)
    assert len(text.encode()) < 2 * MAX_QUOTED_BYTES + 512  # the value quoted, clipped
    assert "more bytes)" in text
    assert any(why in text for why in ("not registered", "unknown type", "unknown parameter"))


def test_a_resource_status_holds_a_bounded_error() -> None:
    fetcher = CountingFetcher()
    manager = resource.Manager(jitter=0)
    manager.register("a", fetcher, interval=-1)
    manager.start()
    try:
        fetcher.fail_with = ConnectionError("z" * _MB)
        with pytest.raises(resource.RefreshError) as caught:
            manager.refresh("a")
        status = manager.status_of("a")
        assert status.last_error is not None
        assert status.last_error.startswith("ConnectionError: zzz")
        assert len(status.last_error.encode()) <= MAX_ERROR_BYTES
        assert len(str(caught.value).encode()) < MAX_ERROR_BYTES + 256
    finally:
        manager.stop()
