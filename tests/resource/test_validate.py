"""Validators refuse bad values before the swap; the old value keeps serving."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from pineapple import ConfigError
from pineapple.resource import (
    NOT_MODIFIED,
    Manager,
    ResourceSchema,
    StartError,
    ValidationRefusedError,
    register_validator,
)
from pineapple.resource import Registry as ResourceRegistry
from pineapple.resource._validate import run_validators
from pineapple.resource.lowlevel import ValidationSpec, flush_closes

from ._scripted import Rows, Scripted, rows


def _started(fetcher: Scripted, validate: dict[str, Any], **kw: Any) -> Manager:
    rm = Manager(jitter=0)
    rm.register("feed", fetcher, interval=-1, validate=validate, **kw)
    rm.start()
    return rm


def _served(rm: Manager) -> Rows:
    handle = rm.get("feed")
    assert handle is not None
    with handle as value:
        assert isinstance(value, Rows)
        return value


def _valid(rm: Manager) -> tuple[str, str, str]:
    cond = rm.status_of("feed").condition("Valid")
    assert cond is not None
    return cond.status, cond.reason, cond.message


def test_min_rows_refuses_an_emptied_table_and_the_old_one_keeps_serving() -> None:
    good, empty = rows(3, "good"), rows(0, "empty")
    rm = _started(Scripted(good, empty), {"min_rows": 1})
    with pytest.raises(ValidationRefusedError, match=r"'feed'.*min_rows: 0 rows") as info:
        rm.refresh("feed")
    assert info.value.check == "min_rows"
    assert _served(rm) is good
    assert rm.status_of("feed").version == 1
    status, reason, message = _valid(rm)
    assert (status, reason) == ("False", "Refused") and "min_rows" in message
    flush_closes(5)
    assert empty.closes == 1 and good.closes == 0  # the refused value is closed, once
    rm.stop()


def test_max_change_ratio_compares_with_the_serving_value() -> None:
    fetcher = Scripted(rows(100), rows(40), rows(60), rows(89))
    rm = _started(fetcher, {"max_change_ratio": 0.5})
    with pytest.raises(ValidationRefusedError, match="went from 100 to 40"):
        rm.refresh("feed")
    assert rm.refresh("feed") == "swapped"  # 100 -> 60: 40 % change
    assert rm.refresh("feed") == "swapped"  # 60 -> 89: 48 %, against the new serving value
    assert _valid(rm)[:2] == ("True", "Passed")
    rm.stop()


def test_required_columns_and_unique_key() -> None:
    no_score = Rows([{"id": 1, "score": 1.0}, {"id": 2}])
    dup = Rows([{"id": 1, "score": 1.0}, {"id": 1, "score": 2.0}])
    rm = _started(
        Scripted(Rows([{"id": 1, "score": 1.0}]), no_score, dup),
        {"required_columns": ["id", "score"], "unique_key": "id"},
    )
    with pytest.raises(ValidationRefusedError, match=r"row 1 has no column\(s\) \['score'\]"):
        rm.refresh("feed")
    with pytest.raises(ValidationRefusedError, match="unique_key: 'id' repeats in rows 0 and 1"):
        rm.refresh("feed")
    rm.stop()


def test_a_refused_first_load_fails_start() -> None:
    rm = Manager()
    rm.register("feed", Scripted(rows(0)), interval=-1, validate={"min_rows": 1})
    with pytest.raises(StartError, match="min_rows"):
        rm.start()


def test_force_accepts_a_refused_value_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    empty = rows(0)
    fetcher = Scripted(rows(2), empty)
    rm = _started(fetcher, {"min_rows": 1})
    with caplog.at_level(logging.WARNING, logger="pineapple.resource"):
        assert rm.refresh("feed", force=True) == "swapped"
    assert _served(rm) is empty
    assert fetcher.resumed_with  # told what was served, so an unchanged source is read again
    assert _valid(rm)[:2] == ("True", "Forced")
    assert any("forced" in r.getMessage() and "min_rows" in r.getMessage() for r in caplog.records)
    rm.stop()


def test_not_modified_after_a_refusal_keeps_the_refusal_until_a_value_is_accepted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A version_query whose answer did not change after a refusal: the source still
    # holds the refused data. Nothing "recovered", nothing was confirmed.
    good = rows(3, "good")
    rm = _started(Scripted(good, rows(0), NOT_MODIFIED, NOT_MODIFIED, rows(4)), {"min_rows": 1})
    with pytest.raises(ValidationRefusedError, match="min_rows"):
        rm.refresh("feed")
    refused = rm.status_of("feed")
    confirmed = rm._slot("feed").confirmed_at  # what Fresh ages from
    with caplog.at_level(logging.INFO, logger="pineapple.resource"):
        for failures in (2, 3):
            with pytest.raises(ValidationRefusedError, match="min_rows"):
                rm.refresh("feed")  # NOT_MODIFIED: the same refused data
            status = rm.status_of("feed")
            assert status.consecutive_failures == failures
            assert status.last_error == refused.last_error
            assert _valid(rm)[:2] == ("False", "Refused")
            assert status.last_attempt_at is not None and confirmed is not None
            assert status.last_attempt_at > confirmed
            assert rm._slot("feed").confirmed_at == confirmed  # not confirmed anew
    assert _served(rm) is good
    logged = [r.getMessage() for r in caplog.records]
    assert not any("recovered" in line for line in logged), logged
    assert sum("still holds the refused data" in line for line in logged) == 2
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pineapple.resource"):
        assert rm.refresh("feed") == "swapped"  # a value is accepted: the refusal ends
    assert _valid(rm)[:2] == ("True", "Passed")
    assert rm.status_of("feed").consecutive_failures == 0
    assert any("recovered after 3" in r.getMessage() for r in caplog.records)
    rm.stop()


def test_type_validator_and_named_hook_see_old_and_new() -> None:
    seen: list[tuple[Any, Any]] = []
    hook = f"no_negative_{uuid.uuid4().hex}"

    def no_negative(old: Any, new: Any) -> None:
        seen.append((old, new))
        if any(row["id"] < 0 for row in new):
            raise ValueError("negative id")

    register_validator(hook, no_negative)
    first, bad = rows(1), Rows([{"id": -1}])

    def type_check(old: Any, new: Any) -> None:
        if len(new) > 5:
            raise ValueError("too long for this type")

    rm = _started(Scripted(first, bad, rows(6)), {"hooks": [hook]}, validator=type_check)
    with pytest.raises(ValidationRefusedError, match=f"{hook}: negative id"):
        rm.refresh("feed")
    assert seen[-1] == (first, bad)
    with pytest.raises(ValidationRefusedError, match="type validator: too long"):
        rm.refresh("feed")
    rm.stop()


def test_validate_block_is_parsed_in_both_shapes_and_changes_the_fingerprint() -> None:
    reg = ResourceRegistry()
    reg.register(ResourceSchema(name="t"), lambda params: Scripted(rows(1)))
    nested = {"a": {"type": "t", "params": {}, "validate": {"min_rows": 1}, "keep_previous": True}}
    flat = {"resources": {"a": {"type_name": "t", "validate": {"min_rows": 2}}}}
    rm1, rm2 = Manager(reg), Manager(reg)
    rm1.load_from_root_config({"resource_config": nested})
    rm2.load_from_root_config({"resource_config": flat})
    e1, e2 = rm1.entries()["a"], rm2.entries()["a"]
    assert e1.validate == ValidationSpec(min_rows=1) and e1.keep_previous
    assert e2.validate == ValidationSpec(min_rows=2) and not e2.keep_previous
    assert e2.params == {}  # validate is not a param in the flat shape
    assert e1.fingerprint() != e2.fingerprint()


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"min_row": 1}, "unknown validate keys"),
        ({"min_rows": -1}, "validate.min_rows"),
        ({"max_change_ratio": "half"}, "validate.max_change_ratio"),
        ({"hooks": ["nobody_registered_this"]}, "unregistered validators"),
        ({"min_rows": 5, "max_rows": 1}, "over max_rows"),
    ],
)
def test_a_bad_validate_block_is_a_config_error_naming_the_resource(
    block: dict[str, Any], message: str
) -> None:
    reg = ResourceRegistry()
    reg.register(ResourceSchema(name="t"), lambda params: Scripted(rows(1)))
    config = {"resource_config": {"feed": {"type": "t", "params": {}, "validate": block}}}
    with pytest.raises(ConfigError, match=f"'feed'.*{message}"):
        Manager(reg).load_from_root_config(config)


@pytest.mark.parametrize(
    ("block", "check"),
    [
        ({"min_rows": 1}, "min_rows"),
        ({"max_rows": 9}, "max_rows"),
        ({"max_change_ratio": 0.5}, "max_change_ratio"),
        ({"max_rows": 9, "max_change_ratio": 0.5}, "max_rows"),
    ],
)
def test_a_value_without_rows_is_refused_by_the_check_that_counts(
    block: dict[str, Any], check: str
) -> None:
    spec = ValidationSpec.parse("feed", block)
    with pytest.raises(ValidationRefusedError) as caught:
        run_validators("feed", spec, None, None, object())
    assert caught.value.check == check
    assert f"refused by {check}: a object has no row count" in str(caught.value)
