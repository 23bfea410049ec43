from __future__ import annotations

import pytest

from pineapple import Context, PineappleError
from pineapple.resource import (
    Manager,
    ResourceProvider,
    ResourceUnavailableError,
    Static,
    borrow,
    from_context,
    with_resources,
)


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


def test_borrow_lends_a_handle_or_names_operator_and_resource() -> None:
    ctx = with_resources(None, Static({"hot": [1]}))
    with borrow(ctx, "hot", "my_op") as value:
        assert value == [1]
    with pytest.raises(ResourceUnavailableError, match='my_op: resource "cold" not found') as info:
        borrow(ctx, "cold", "my_op")
    assert (info.value.operator, info.value.resource) == ("my_op", "cold")
    assert isinstance(info.value, PineappleError) and isinstance(info.value, LookupError)
    with pytest.raises(ResourceUnavailableError, match="my_op: no resource provider in context"):
        borrow(None, "hot", "my_op")
