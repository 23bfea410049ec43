from __future__ import annotations

import pytest

from pineapple.resource import MissingResourceError, Static
from pineapple.resource.lowlevel import validate_resource_deps

CONFIG = {
    "pipeline_config": {
        "operators": {
            "recall": {"type_name": "recall_resource", "resource_name": "hot_items"},
            "lookup": {
                "type_name": "transform_resource_lookup",
                "resource_name": "user_tags",
            },
            "nested": {"type_name": "x", "branches": [{"inner": {"resource_name": "deep"}}]},
            "plain": {"type_name": "filter_truncate", "size": 3},
        }
    }
}


def test_names_each_missing_resource_with_its_operator() -> None:
    with pytest.raises(MissingResourceError) as info:
        validate_resource_deps(CONFIG, Static({"hot_items": []}))
    assert info.value.missing == [("lookup", "user_tags"), ("nested", "deep")]
    message = str(info.value)
    assert "operator 'lookup' needs resource 'user_tags'" in message
    assert "operator 'nested' needs resource 'deep'" in message


def test_passes_when_everything_is_declared() -> None:
    validate_resource_deps(CONFIG, Static({"hot_items": [], "user_tags": {}, "deep": 1}))


def test_accepts_json_text() -> None:
    validate_resource_deps('{"pipeline_config": {"operators": {}}}', Static({}))
