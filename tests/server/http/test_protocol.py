"""Issue 34, item 2: one seam at the HTTP edge.

The protocol ``pineapple serve`` runs is one class over uvicorn's: walking its
MRO down to uvicorn's ``HttpToolsProtocol``, each uvicorn method is defined at
most once (the rules are composed objects, not layers that each override a
callback and call ``super()``); the methods it overrides are the ones
``server/http/_protocol.py`` lists, and that list with the ones it keeps is
``_uvicorn_range.PROTOCOL_METHODS`` (what the start-up check looks for); the
attributes it lists are uvicorn's. The endpoint is reached through one function.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from server import Config
from server._service import Service
from server.http._connections import Drain
from server.http._execute import ExecuteEndpoint
from server.http._protocol import ATTRIBUTES, KEPT, OVERRIDDEN, EdgeProtocol
from server.http._serving import uvicorn_config
from server.http._uvicorn_range import PROTOCOL_METHODS

_UVICORNS = {name for name, _ in inspect.getmembers(HttpToolsProtocol, inspect.isfunction)}


def _served_class() -> type:
    config = Config("unused.json")
    bound = uvicorn_config(config, Service(config), Drain()).http
    assert isinstance(bound, type)
    return bound


def _edge_classes(cls: type) -> list[type]:
    """The classes above uvicorn's protocol in ``cls``'s MRO (``cls`` included)."""
    mro = cls.__mro__
    assert HttpToolsProtocol in mro
    return list(mro[: mro.index(HttpToolsProtocol)])


def test_each_uvicorn_callback_is_overridden_exactly_once_in_one_class() -> None:
    served = _served_class()
    classes = _edge_classes(served)
    overrides = Counter(
        name for cls in classes for name in vars(cls) if name in _UVICORNS and name != "__init__"
    )
    assert [name for name, count in overrides.items() if count > 1] == []
    # The class uvicorn gets only binds settings; every override is EdgeProtocol's.
    assert classes == [served, EdgeProtocol]
    assert not [name for name in vars(served) if name in _UVICORNS]
    assert sorted(overrides) == sorted(OVERRIDDEN)


def test_the_listed_internals_are_uvicorns_and_agree_with_the_start_up_check() -> None:
    assert set(OVERRIDDEN).isdisjoint(KEPT)
    assert sorted(PROTOCOL_METHODS) == sorted(OVERRIDDEN + KEPT)
    assert set(PROTOCOL_METHODS) <= _UVICORNS
    source = inspect.getsource(HttpToolsProtocol.__init__)
    begin = inspect.getsource(HttpToolsProtocol.on_message_begin)
    for attr in ATTRIBUTES:
        assert f"self.{attr} =" in source + begin or f"self.{attr}: " in source, attr
    # Every attribute of uvicorn's the protocol's own code touches is listed.
    edge = inspect.getsource(EdgeProtocol)
    theirs = set(re.findall(r"self\.(\w+)\s*[:=]", source + begin))
    touched = set(re.findall(r"self\.(\w+)", edge)) & theirs
    assert touched - set(ATTRIBUTES) == set()


def test_the_endpoint_is_reached_through_one_function() -> None:
    """The protocol asks the endpoint one thing: an answer's status and bytes."""
    edge = inspect.getsource(EdgeProtocol)
    asked = {
        name
        for name, _ in inspect.getmembers(ExecuteEndpoint)
        if not name.startswith("__") and f"execute.{name}" in edge
    }
    assert asked <= {"answer", "inline_bytes"}
    assert "execute.answer(" in edge
    assert "def _make(" in inspect.getsource(ExecuteEndpoint)
