from __future__ import annotations

import pytest

from ._run import CountingProvider, run


def test_recalls_copies_and_releases() -> None:
    rows = [{"id": "h1"}, {"id": "h2"}]
    provider = CountingProvider({"hot": rows})
    out = run("recall_resource", {"resource_name": "hot"}, ctx=provider.context())
    assert out.added_items == rows and out.added_items[0] is not rows[0]
    assert provider.borrowed == provider.released == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": 1}, 'resource "hot" is map[string]interface {}, want []map[string]any'),
        ([{"a": 1}, {}, "x"], "recall_resource: items[2] is string, want map[string]any"),
    ],
)
def test_wrong_shape_raises_naming_the_operator_and_still_releases(
    value: object, message: str
) -> None:
    provider = CountingProvider({"hot": value})
    with pytest.raises(TypeError, match="recall_resource") as info:
        run("recall_resource", {"resource_name": "hot"}, ctx=provider.context())
    assert message in str(info.value)
    assert provider.borrowed == provider.released == 1


def test_missing_resource_or_provider() -> None:
    with pytest.raises(LookupError, match="no resource provider"):
        run("recall_resource", {"resource_name": "hot"})
    with pytest.raises(LookupError, match='resource "hot" not found'):
        run("recall_resource", {"resource_name": "hot"}, ctx=CountingProvider({}).context())


@pytest.mark.parametrize("name", ["recall_resource", "transform_resource_lookup"])
def test_an_unlendable_resource_is_a_named_error(name: str) -> None:
    from pineapple.resource import ResourceUnavailableError

    params = {"resource_name": "hot", "lookup_key": "id", "output_field": "v"}
    with pytest.raises(ResourceUnavailableError, match=f'{name}: resource "hot" not found'):
        run(
            name,
            params if name != "recall_resource" else {"resource_name": "hot"},
            ctx=CountingProvider({}).context(),
        )
