"""``Metadata.first``: the one field an operator needs from a ``$metadata`` list."""

from __future__ import annotations

import pytest

from pineapple import RegistryError
from pineapple.engine import Engine, Metadata


def test_first_returns_the_first_field() -> None:
    meta = Metadata.of({"item_input": ["a", "b"], "common_output": ["n"]})
    assert meta.first("item_input", "my_op") == "a"
    assert meta.first("common_output", "my_op") == "n"


def test_first_names_the_operator_and_the_list_when_empty() -> None:
    with pytest.raises(ValueError, match=r"^my_op: \$metadata\.item_output needs one field$"):
        Metadata.of({"item_input": ["a"]}).first("item_output", "my_op")


def test_a_builtin_without_its_field_is_refused_at_build() -> None:
    config = {
        "pipeline_config": {
            "operators": {"size": {"type_name": "transform_size", "$metadata": {}}}
        },
        "pipeline_group": {"main": {"pipeline": ["size"]}},
    }
    with pytest.raises(RegistryError, match=r"transform_size: \$metadata\.common_output needs one"):
        Engine(config)
