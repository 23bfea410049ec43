"""Optional hooks: named once (``FetcherHooks``), called by one helper, forwarded by wrappers."""

from __future__ import annotations

import importlib
import inspect
import logging
import pkgutil
from pathlib import Path
from typing import Any

import pytest

from pineapple.resource import Fetcher
from pineapple.resource.lowlevel import FETCHER_HOOKS, FetcherHooks, call_hook, hook_of
from server.workers.supervisor._publishing import PublishingFetcher, Staged

_PACKAGES = ("pineapple.resource", "resources", "server")
"""Where a fetcher that wraps another may live."""


def _wrappers() -> list[type]:
    """Every fetcher class of :data:`_PACKAGES` (it defines ``__call__``) whose constructor
    takes a ``Fetcher``: it wraps one."""
    found: dict[str, type] = {}
    for package in _PACKAGES:
        root = importlib.import_module(package)
        names = [package] + [
            info.name
            for info in pkgutil.walk_packages(root.__path__, f"{package}.")
            if not info.name.rsplit(".", 1)[-1].startswith("test")
        ]
        for name in names:  # bounded: the modules of three packages
            module = importlib.import_module(name)
            for cls in vars(module).values():
                if (
                    not inspect.isclass(cls)
                    or cls.__module__ != name
                    or "__call__" not in vars(cls)
                ):
                    continue
                try:
                    params = inspect.signature(cls.__init__).parameters.values()
                except (TypeError, ValueError):
                    continue
                if any(p.annotation in ("Fetcher", Fetcher) for p in params):
                    found[f"{name}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


def _missing(cls: type) -> list[str]:
    """The hooks of ``FetcherHooks`` that ``cls`` does not define."""
    return [name for name in FETCHER_HOOKS if not callable(getattr(cls, name, None))]


def test_the_protocol_names_the_five_fetcher_hooks() -> None:
    assert FETCHER_HOOKS == ("cancel", "carry_over", "close", "commit", "discard")
    assert all(callable(getattr(FetcherHooks, name)) for name in FETCHER_HOOKS)


def test_every_wrapping_fetcher_defines_every_hook() -> None:
    wrappers = _wrappers()
    assert PublishingFetcher in wrappers  # the search finds the wrappers we know
    assert {cls.__qualname__: _missing(cls) for cls in wrappers} == {
        cls.__qualname__: [] for cls in wrappers
    }


def test_a_wrapper_missing_a_hook_is_caught() -> None:
    class Partial:
        def __init__(self, inner: Fetcher) -> None:
            self.inner = inner

        def commit(self, value: Any) -> None:
            """Forwarded."""

    assert _missing(Partial) == ["cancel", "carry_over", "close", "discard"]


class _Inner:
    """A fetcher that defines every hook and records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self) -> Any:
        return {"n": 1}

    def commit(self, value: Any) -> None:
        self.calls.append(("commit", value))

    def discard(self, value: Any) -> None:
        self.calls.append(("discard", value))

    def carry_over(self, value: Any) -> None:
        self.calls.append(("carry_over", value))

    def cancel(self) -> None:
        self.calls.append(("cancel", None))

    def close(self) -> None:
        self.calls.append(("close", None))


class _Publisher:
    """A ``SnapshotPublisher`` that records what it is asked to publish."""

    def __init__(self) -> None:
        self.published: list[Any] = []

    def stage(self, key: str, codec: Any, value: Any) -> Staged:
        return Staged(key, 1, f"{key}.1", ())

    def open_staged(self, staged: Staged, codec: Any) -> Any:
        return {"opened": staged.stem}

    def commit(self, staged: Staged, staging: Any = None) -> None:
        self.published.append(staged.stem)

    def discard(self, staged: Staged) -> None:
        """Nothing was written."""

    def publish(self, key: str, codec: Any, value: Any) -> Staged:
        self.published.append(value)
        return Staged(key, 2, f"{key}.2", ())


def test_the_publishing_fetcher_forwards_every_hook_to_the_fetcher_it_wraps() -> None:
    inner, store = _Inner(), _Publisher()
    fetcher = PublishingFetcher(inner, store, "k", codec=object())  # type: ignore[arg-type]
    opened = fetcher()
    order = ("commit", "discard", "carry_over", "cancel", "close")  # close drops what is staged
    assert sorted(order) == list(FETCHER_HOOKS)
    for name in order:
        hook = hook_of(fetcher, name)
        assert hook is not None, name
        if name in ("commit", "discard", "carry_over"):
            hook(opened)
        else:
            hook()
    assert sorted(call[0] for call in inner.calls) == list(FETCHER_HOOKS)
    assert store.published == ["k.1"]  # commit published the staged value


def test_call_hook_calls_a_defined_hook_and_skips_a_missing_one() -> None:
    inner = _Inner()
    call_hook(inner, "carry_over", 7, label="resource 'x'")
    call_hook(object(), "carry_over", 7, label="resource 'x'")  # none: nothing happens
    assert inner.calls == [("carry_over", 7)]


def test_call_hook_logs_a_failure_masked_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Failing:
        def cancel(self) -> None:
            raise RuntimeError("dsn secret-pw")

    with caplog.at_level(logging.WARNING, logger="pineapple.resource"):
        call_hook(Failing(), "cancel", label="resource 'x'", redact=lambda s: s.replace("pw", "*"))
    (record,) = caplog.records
    assert record.getMessage() == "resource 'x': cancel hook failed: RuntimeError: dsn secret-*"
    assert record.levelno == logging.WARNING and not record.exc_info  # no unmasked traceback


def test_no_module_looks_a_fetcher_hook_up_by_hand() -> None:
    """Every optional hook is found through ``hook_of`` / ``call_hook`` (one place)."""
    root = Path(__file__).resolve().parents[2]
    pattern = ("getattr(", "hasattr(")
    found = []
    for package in ("pineapple/resource", "server", "resources"):
        for path in sorted((root / package).rglob("*.py")):  # bounded: our sources
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if any(p in line for p in pattern) and any(
                    f'"{hook}"' in line for hook in (*FETCHER_HOOKS, "release_memory")
                ):
                    found.append(f"{path.relative_to(root)}:{number}")
    assert found == [], found
