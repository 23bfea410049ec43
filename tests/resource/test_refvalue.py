from __future__ import annotations

import gc
import logging
import os
import threading
import weakref
from typing import Any

import pytest

from pineapple import resource
from pineapple.resource import HandleReleasedError
from pineapple.resource._refvalue import IMPLEMENTATION

from ._values import Closable
from .conftest import Impl


def test_the_compiled_borrow_path_is_built_unless_pure_python_is_asked_for() -> None:
    expected = "python" if os.environ.get("PINEAPPLE_PURE_PYTHON") == "1" else "c"
    assert expected == IMPLEMENTATION


def test_last_release_closes_exactly_once_on_the_closer_thread(impl: Impl) -> None:
    value = Closable()
    ref = impl.RefValue(value, "t/a")
    handle = ref.borrow()
    assert handle is not None
    ref.release()  # the baseline
    resource.lowlevel.flush_closes()
    assert value.closes == 0  # still borrowed
    handle.release()
    resource.lowlevel.flush_closes()
    assert value.closes == 1
    assert value.close_thread == "pineapple-closer"
    assert value.close_thread != threading.current_thread().name


def test_acquire_refuses_a_value_whose_count_reached_zero(impl: Impl) -> None:
    ref = impl.RefValue(Closable(), "t/a")
    ref.release()
    assert ref.acquire() is False
    assert ref.borrow() is None
    assert ref.refs == 0


def test_handle_double_release_and_use_after_release_raise(impl: Impl) -> None:
    ref = impl.RefValue({"k": 1}, "t/a")
    handle = impl.ResourceHandle(ref) if ref.acquire() else None
    assert handle is not None
    with handle as value:
        assert value == {"k": 1}
    assert handle.released
    with pytest.raises(HandleReleasedError):
        handle.release()
    with pytest.raises(HandleReleasedError):
        _ = handle.value
    assert ref.refs == 1  # only the baseline is left: the double release changed nothing


def test_handle_releases_when_the_block_raises(impl: Impl) -> None:
    ref = impl.RefValue(Closable(), "t/a")
    handle = ref.borrow()
    assert handle is not None
    with pytest.raises(RuntimeError), handle:
        raise RuntimeError("operator failed")
    assert ref.refs == 1


def test_close_error_is_logged_never_raised(impl: Impl, caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def close(self) -> None:
            raise OSError("socket already gone")

    ref = impl.RefValue(Broken(), "redis_connection/cache")
    with caplog.at_level(logging.ERROR, logger="pineapple.resource"):
        ref.release()  # must not raise in the releasing thread
        resource.lowlevel.flush_closes()
    assert "redis_connection/cache" in caplog.text
    assert "socket already gone" in caplog.text


def test_values_without_close_are_fine(impl: Impl) -> None:
    ref = impl.RefValue([1, 2, 3], "t/list")
    ref.release()
    assert resource.lowlevel.flush_closes(timeout=5)


def test_a_value_referring_to_its_own_refvalue_is_collected(impl: Impl) -> None:
    class Node:
        ref: Any = None

    node = Node()
    node.ref = impl.RefValue(node, "t/cycle")
    probe = weakref.ref(node)
    del node
    gc.collect()
    assert probe() is None
