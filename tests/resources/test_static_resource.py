from __future__ import annotations

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import Manager
from pineapple.resource.lowlevel import default_registry


def _config(params: dict[str, object]) -> dict[str, object]:
    return {"resource_config": {"consts": {"type": "static", "params": params}}}


def test_importing_resources_registers_static_with_interval_never() -> None:
    schema = default_registry().get("static")
    assert schema is resources.lowlevel.STATIC_SCHEMA
    assert schema.default_interval == -1


def test_static_serves_the_value_as_given() -> None:
    value = [{"id": "a", "score": 1}, {"id": "b", "score": 2}]
    rm = Manager()
    rm.load_from_root_config(_config({"value": value}))
    rm.start()
    try:
        handle = rm.get("consts")
        assert handle is not None
        with handle as got:
            assert got == value
        status = rm.status_of("consts")
        assert status.interval == -1
        assert status.summary.startswith("static: list of 2")
        assert '"score": 2' in (rm.describe("consts") or "")
    finally:
        rm.stop()


def test_static_without_value_is_a_config_error_naming_resource_and_param() -> None:
    rm = Manager()
    with pytest.raises(ConfigError, match=r"'consts'.*'value' is required"):
        rm.load_from_root_config(_config({}))


def test_static_printer_masks_passwords_inside_the_value() -> None:
    printer = resources.lowlevel.STATIC_SCHEMA.printer
    assert printer is not None
    value = {"dsn": "mysql://app:pw-Static-9@db:3306/x", "password": "pw-Plain-8", "n": 1}
    text = printer.describe(value) + printer.summarize(value)
    assert "pw-Static-9" not in text
    assert "pw-Plain-8" not in text
    assert "mysql://app:***@db:3306/x" in text


def test_refreshing_a_static_resource_is_not_modified() -> None:
    rm = Manager()
    rm.load_from_root_config(_config({"value": {"a": 1}}))
    rm.start()
    try:
        assert rm.refresh("consts") == "not_modified"
        assert rm.status_of("consts").version == 1
        # A reload that keeps the entry carries the value over: still not modified.
        again = Manager()
        again.load_from_root_config(_config({"value": {"a": 1}}), carry_over=rm)
        again.start()
        try:
            assert again.refresh("consts") == "not_modified"
        finally:
            again.stop()
    finally:
        rm.stop()
