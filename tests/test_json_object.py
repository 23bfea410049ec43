"""``pineapple._json_object.loads_object``: the one JSON-object reader and its callers."""

from __future__ import annotations

import pytest

from pineapple import ConfigError
from pineapple._json_object import JSONObjectError, loads_object
from pineapple.engine import Engine
from pineapple.resource._config import read_root_config


def test_loads_object_returns_the_object() -> None:
    assert loads_object(b'{"a": 1}') == {"a": 1}
    assert loads_object('{"a": [1]}') == {"a": [1]}


@pytest.mark.parametrize(
    ("text", "message"),
    [(b"{", "not valid JSON: "), (b"[1]", r"not a JSON object \(got list\)")],
)
def test_loads_object_names_what_is_wrong(text: bytes, message: str) -> None:
    with pytest.raises(JSONObjectError, match=message):
        loads_object(text)


def test_engine_and_resource_configs_say_alike_that_a_list_is_no_config() -> None:
    # Both readers of the unified config share one parse: both name the type they got.
    with pytest.raises(ConfigError, match=r"config is not a JSON object \(got list\)"):
        read_root_config(b"[]")
    with pytest.raises(
        ConfigError, match=r"^pine: config error: JSON parse error: config is not a JSON object"
    ):
        Engine(b"[]")
