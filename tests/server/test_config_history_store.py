"""``ConfigHistory`` and ``config_diff`` record by record (no server): the bounds, the pin,
a second owner of a state directory, a damaged index, and a diff that names only names."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import orjson
import pytest

from server._config_diff import config_diff
from server._config_history import ConfigHistory, HistoryError, HistoryLimits
from server._reload_policy import ReloadOutcome

from .fakes import dump, unified_config


def _accept(history: ConfigHistory, data: bytes, trigger: str = "watch") -> str:
    """Hand ``data`` out through the history's source and accept it, as a reload does."""
    source = history.source(lambda max_bytes: data)
    source.read(1 << 20)
    digest = hashlib.sha256(data).hexdigest()
    history.accepted(ReloadOutcome("ok", trigger, time.time(), 0.0, digest))  # type: ignore[arg-type]
    return digest[:12]


def _config(tag: str) -> bytes:
    return dump(unified_config(tag))


def test_the_oldest_go_past_the_count_and_a_pin_holds_the_source(tmp_path: Path) -> None:
    history = ConfigHistory(tmp_path, HistoryLimits(max_count=3), 1 << 20)
    revisions = [_accept(history, _config(tag)) for tag in "abcd"]
    kept = [e.revision for e in history.entries()]
    assert kept == revisions[:0:-1]  # d, c, b: a went, with its bytes
    files = sorted(p.name[:12] for p in (tmp_path / "configs").iterdir())
    assert files == sorted(kept)
    history.pin(history.resolve(revisions[1]))
    # Pinned: the source hands out b's bytes whatever the file holds.
    assert history.source(lambda max_bytes: _config("e")).read(1 << 20) == _config("b")
    history.close()


def test_bytes_past_the_limit_are_listed_not_kept(tmp_path: Path) -> None:
    small, large = _config("a"), _config("b" * 5000)
    history = ConfigHistory(tmp_path, HistoryLimits(max_bytes=len(small) + 10), 1 << 20)
    first = _accept(history, small)
    second = _accept(history, large)
    entries = {e.revision: e for e in history.entries()}
    assert entries[first].kept and not entries[second].kept
    with pytest.raises(HistoryError, match="over --history-max-bytes") as refused:
        history.pin(entries[second])
    assert refused.value.status == 409
    history.close()


def test_an_accepted_config_moves_to_the_top_and_survives_a_new_owner(tmp_path: Path) -> None:
    history = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    a = _accept(history, _config("a"), "start")
    _accept(history, _config("b"))
    history.pin(history.resolve(a))
    _accept(history, _config("a"))  # the reload of the pin
    newest = history.entries()[0]
    assert (newest.revision, newest.trigger) == (a, "rollback")
    # One owner at a time: a second history on the directory keeps its own in memory.
    other = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    assert other.state_dir is None and other.entries() == []
    history.close()
    again = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)  # after a restart
    assert again.state_dir == tmp_path and again.pinned is not None and again.pinned[:12] == a
    assert again.entries()[0].revision == a
    again.close()


def test_a_damaged_index_starts_an_empty_history(tmp_path: Path) -> None:
    (tmp_path / "history.json").write_bytes(b"{not json")
    history = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    assert history.entries() == [] and history.pinned is None
    _accept(history, _config("a"))
    assert len(orjson.loads((tmp_path / "history.json").read_bytes())["revisions"]) == 1
    history.close()


def test_a_revision_is_named_by_a_unique_prefix() -> None:
    history = ConfigHistory(None, HistoryLimits(), 1 << 20)
    a = _accept(history, _config("a"))
    assert history.resolve(a[:4]).revision == a
    for wrong, status in (("zz", 400), ("abc", 400), ("0000000000", 404)):
        with pytest.raises(HistoryError) as refused:
            history.resolve(wrong)
        assert refused.value.status == status, wrong


def test_a_diff_names_what_changed_and_never_a_value() -> None:
    old = {
        "pipeline_config": {
            "operators": {"a": {"type_name": "x", "k": 1}, "b": {"type_name": "y"}}
        },
        "resource_config": {"db": {"type": "feed_data", "params": {"dsn": "mysql://u:secret@h"}}},
    }
    new = {
        "pipeline_config": {"operators": {"a": {"type_name": "x", "k": 2, "j": 0}, "c": {}}},
        "resource_config": {
            "resources": {"db": {"type_name": "feed_data", "dsn": "mysql://u:hunter3@h"}}
        },
    }
    diff = config_diff(orjson.dumps(old), orjson.dumps(new))
    assert diff["operators"]["added"] == ["c"] and diff["operators"]["removed"] == ["b"]
    assert diff["operators"]["changed"] == [
        {"name": "a", "params": {"added": ["j"], "removed": [], "changed": ["k"]}}
    ]
    assert diff["resources"]["changed"] == [
        {"name": "db", "params": {"added": [], "removed": [], "changed": ["dsn"]}}
    ]
    assert b"secret" not in orjson.dumps(diff) and b"hunter3" not in orjson.dumps(diff)
    with pytest.raises(ValueError, match="config from is not a JSON object"):
        config_diff(b"[]", b"{}")


def test_an_automatic_rollback_is_current_and_drops_a_pin_of_what_failed(tmp_path: Path) -> None:
    history = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    good, bad = _accept(history, _config("a")), _accept(history, _config("b"))
    history.pin(history.resolve(bad))
    failed = hashlib.sha256(_config("b")).hexdigest()
    history.auto_rolled_back(_config("a"), failed, "workers could not build it", 5.0)
    top = history.entries()[0]
    assert (top.revision, top.trigger, top.reason, top.accepted_at) == (
        good,
        "auto_rollback",
        "workers could not build it",
        5.0,
    )
    assert history.pinned is None  # the pinned bytes cannot serve
    # Kept on disk: a new owner reads the same.
    history.close()
    again = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    assert [(e.trigger, e.reason) for e in again.entries()] == [
        ("auto_rollback", "workers could not build it"),
        ("watch", None),
    ]
    again.close()
