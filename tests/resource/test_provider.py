from __future__ import annotations

from pineapple import Context
from pineapple.resource import Manager, ResourceProvider, Static, from_context, with_resources


def test_static_provider_lends_values_and_release_is_a_no_op() -> None:
    provider = Static({"features": {"a": 1}})
    handle = provider.get("features")
    assert handle is not None
    with handle as table:
        assert table == {"a": 1}
    handle.release()  # a no-op, also twice
    assert provider.get("missing") is None
    assert isinstance(provider, ResourceProvider)
    assert isinstance(Manager(), ResourceProvider)


def test_context_carries_the_provider_without_changing_the_original() -> None:
    base = Context().with_value("trace", "t1")
    provider = Static({})
    ctx = with_resources(base, provider)
    assert from_context(ctx) is provider
    assert from_context(base) is None
    assert from_context(None) is None
    assert ctx.value("trace") == "t1"
    assert with_resources(None, provider).value("trace") is None
