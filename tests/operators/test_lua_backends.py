"""The lupa backends are probed once: one import and one table-type read per module."""

from __future__ import annotations

from pineapple.operators._lua import available_backends, default_backend


def test_backends_are_probed_once_and_carry_their_table_type() -> None:
    first, second = available_backends(), available_backends()
    assert first, "lupa has no Lua 5.1 module here"
    assert [b.name for b in first] == [b.name for b in second]
    for a, b in zip(first, second, strict=True):
        assert a is b  # the same probe result, not a second probe
        assert type(a.module.LuaRuntime().table()) is a.table_type
    assert default_backend() in first
