from __future__ import annotations

import pytest

from ._run import CountingProvider, run

PARAMS = {"resource_name": "tags", "lookup_key": "uid", "output_field": "tag"}


def test_looks_up_with_go_key_text_and_default() -> None:
    provider = CountingProvider({"tags": {"u1": "vip", "7": "seven", "0.5": "half", "true": "yes"}})
    items = [{"uid": "u1"}, {"uid": 7.0}, {"uid": 0.5}, {"uid": True}, {"uid": "zz"}, {}]
    out = run(
        "transform_resource_lookup",
        {**PARAMS, "default_value": "none"},
        items=items,
        ctx=provider.context(),
    )
    assert out.item_write_map() == {
        0: {"tag": "vip"},
        1: {"tag": "seven"},
        2: {"tag": "half"},
        3: {"tag": "yes"},
        4: {"tag": "none"},
        5: {"tag": "none"},
    }
    assert provider.borrowed == provider.released == 1


def test_without_default_missing_keys_are_skipped() -> None:
    provider = CountingProvider({"tags": {"u1": "vip"}})
    out = run(
        "transform_resource_lookup",
        PARAMS,
        items=[{"uid": "u2"}, {"uid": "u1"}],
        ctx=provider.context(),
    )
    assert out.item_write_map() == {1: {"tag": "vip"}}


def test_non_mapping_value_raises_and_releases() -> None:
    provider = CountingProvider({"tags": ["x"]})
    with pytest.raises(TypeError, match='transform_resource_lookup: resource "tags" is'):
        run("transform_resource_lookup", PARAMS, items=[{"uid": "u1"}], ctx=provider.context())
    assert provider.released == 1


def test_string_keys_with_default_write_one_column() -> None:
    provider = CountingProvider({"tags": {"u1": "vip", "u3": None}})
    items = [{"uid": "u1"}, {"uid": "u2"}, {"uid": "u3"}]
    out = run(
        "transform_resource_lookup",
        {**PARAMS, "default_value": "none"},
        items=items,
        ctx=provider.context(),
    )
    assert out.column_writes == [("tag", ["vip", "none", None])]
    assert out.item_writes is None
    assert provider.borrowed == provider.released == 1


class _Shouting(dict[str, str]):
    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key).upper()


def test_mapping_overriding_getitem_is_read_through_it() -> None:
    provider = CountingProvider({"tags": _Shouting({"u1": "vip"})})
    out = run(
        "transform_resource_lookup",
        {**PARAMS, "default_value": "none"},
        items=[{"uid": "u1"}, {"uid": "u2"}],
        ctx=provider.context(),
    )
    assert out.item_write_map() == {0: {"tag": "VIP"}, 1: {"tag": "none"}}
