"""Building a snapshot: read -> Engine -> resources -> start -> validate deps.

Each step that fails raises :class:`BuildError` naming the step, with a
redacted message, after undoing the steps before it (the engine is closed,
the manager stopped), so a failed build leaves nothing running behind.

A build in progress can be cancelled from another thread
(:meth:`Builder.cancel`, at shutdown): the Manager it starts is cancelled
(its fetches in flight cancelled, a MySQL query killed) and the build fails
at its next step, without waiting for a fetch.

Guarantees: ``_cancelled`` and ``_building`` change only under ``_lock``; a
Manager is added to ``_building`` before it starts and only while not
cancelled, so :meth:`Builder.cancel` either sees it (and cancels it) or the
build sees the flag (and starts nothing).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast

from pineapple import PineappleError, builtins, plugins, resource
from pineapple.engine import Engine
from pineapple.engine.http import ParseBudget, respond
from pineapple.resource.lowlevel import (
    LoadedConfig,
    ManagerMetrics,
    MemoryBudget,
    load_config,
    redact,
    validate_resource_deps,
)

from ._build_error import BuildError, CheckError
from ._config import Config, EngineLike, Responder
from ._registries import operator_registry
from ._snapshot import ConfigInfo, Snapshot
from ._tracing import Tracing

__all__ = ["Builder", "default_responder", "import_plugins"]

_log = logging.getLogger("pineapple.server")
_T = TypeVar("_T")


def import_plugins(specs: Iterable[str]) -> None:
    """Load the built-in types, then each plugin (a module name or a ``.py`` path).

    The built-ins come from :mod:`pineapple.builtins`; plugins are imported by
    :mod:`pineapple.plugins`. A failing plugin is a :class:`BuildError` (step ``plugins``).
    """
    try:
        builtins.load()
        plugins.import_plugins(specs)
    except plugins.PluginError as exc:
        raise BuildError("plugins", str(exc)) from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, PineappleError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def default_responder(
    max_items: int = 0, budget: ParseBudget | None = None, max_answer_bytes: int = 0
) -> Responder:
    """``pineapple.engine.respond``: the Go server's ``/execute`` status codes and bytes.

    ``max_items`` > 0 answers larger requests with 413 (``Config.max_items``);
    ``budget`` bounds the parsed objects of large bodies in progress (503 past it);
    ``max_answer_bytes`` > 0 answers 507 past it (``Config.max_answer_bytes``).
    """
    if max_items > 0 or budget is not None or max_answer_bytes > 0:
        return cast(
            Responder,
            functools.partial(
                respond,
                max_items=max_items or None,
                budget=budget,
                max_answer_bytes=max_answer_bytes or None,
            ),
        )
    return cast(Responder, respond)


class Builder:
    """Builds snapshots for one server: same settings, registry and metrics each time."""

    def __init__(
        self, config: Config, metrics: ManagerMetrics | None = None, tracing: Tracing | None = None
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._tracing = tracing
        """Spans of operators and borrows in the engines and snapshots built (None: off)."""
        self._serial = 0
        # One budget for every snapshot of this server: values retired by a replaced
        # manager still count while in-flight requests borrow them.
        limit = config.resource_memory_budget_bytes
        self._budget = MemoryBudget(limit or None)
        self._lock = threading.Lock()
        self._cancelled = False
        self._building: set[resource.Manager] = set()
        """The Managers of the builds in progress (see the module's Guarantees)."""
        self.value_replay: Callable[[resource.Manager, str, Any], None] | None = None
        """Given to every Manager built (``Manager.set_replay``, with that Manager): what a
        refreshed value of a ``replay`` entry answers first (``server/_value_replay.py``)."""

    def cancel(self) -> None:
        """Cancel every build in progress and refuse later ones (shutdown; any thread).

        Returns once each Manager being started was cancelled; its build then
        raises :class:`BuildError` (step ``start``) on its own thread.
        """
        with self._lock:
            self._cancelled = True
            building = list(self._building)
        for manager in building:  # bounded: the builds in progress
            manager.cancel()

    def _cancelled_error(self) -> BuildError:
        return BuildError("start", "cancelled: the server is shutting down")

    def load(self, data: bytes) -> LoadedConfig:
        """``data`` parsed once, with this server's environment and config folder."""
        return load_config(
            data, env=self._config.environ(), source_dir=Path(self._config.path).parent
        )

    def _loaded(self, config: bytes | LoadedConfig) -> LoadedConfig:
        return config if isinstance(config, LoadedConfig) else self.load(config)

    def info(self, config: bytes | LoadedConfig) -> ConfigInfo:
        """Version, create time and content hash of a config (no parsing errors raised)."""
        loaded = self._loaded(config)
        root = loaded.root or {}
        return ConfigInfo(
            path=str(self._config.path),
            version=root.get("_PINEAPPLE_VERSION"),
            create_time=root.get("_PINEAPPLE_CREATE_TIME"),
            content_hash=loaded.content_hash,
            size=len(loaded.data),
            loaded_at=time.time(),
        )

    def build(
        self, config: bytes | LoadedConfig, *, carry_over: resource.Manager | None = None
    ) -> Snapshot:
        """A started, validated snapshot of ``config``; :class:`BuildError` otherwise.

        Bytes are parsed once (:meth:`load`); every step reads that one value.
        """
        loaded = self._loaded(config)
        engine = self._engine(loaded)
        try:
            manager = self._manager(loaded, carry_over)
            try:
                with self._lock:
                    if self._cancelled:
                        raise self._cancelled_error()
                    self._building.add(manager)
                try:
                    self._start(manager, loaded.secrets)
                finally:
                    with self._lock:
                        self._building.discard(manager)
                if self._cancelled:
                    raise self._cancelled_error()
                self._deps(loaded, manager)
            except BaseException:
                manager.stop()
                raise
        except BaseException:
            _close_engine(engine)
            raise
        self._serial += 1
        tracing = self._tracing
        context = None if tracing is None else tracing.context(manager)
        return Snapshot(engine, manager, self.info(loaded), self._serial, context)

    def check(self, config: bytes | LoadedConfig, *, fetch: bool = False) -> list[str]:
        """Validate ``config`` like ``nginx -t``: the resource names, or :class:`BuildError`.

        Builds the engine and registers the resources; fetches them only with
        ``fetch``; validates dependencies; then tears everything down. Bytes are
        parsed once (:meth:`load`).
        """
        loaded = self._loaded(config)
        failed: list[BuildError] = []
        # Every step that can run does, so that one check names every problem.
        engine = _attempt(failed, lambda: self._engine(loaded))
        manager = _attempt(failed, lambda: self._manager(loaded, None))
        try:
            if manager is not None:
                if fetch:
                    _attempt(failed, lambda: self._start(manager, loaded.secrets))
                _attempt(failed, lambda: self._deps(loaded, manager))
            if len(failed) == 1:
                raise failed[0]
            if failed:
                raise CheckError(failed)
            assert manager is not None
            return manager.names()
        finally:
            if manager is not None:
                manager.stop()
            if engine is not None:
                _close_engine(engine)

    # -- the steps ------------------------------------------------------------------

    def _engine(self, loaded: LoadedConfig) -> EngineLike:
        try:
            if self._config.wiring.engine_factory is not None:
                return self._config.wiring.engine_factory(loaded.data)
            # The parsed root when there is one; else the bytes, for the engine's own error.
            config = loaded.data if loaded.root is None else loaded.root
            wrap = None if self._tracing is None else self._tracing.wrap_operator
            registry = operator_registry(self._config.bench_stubs)
            return Engine(config, registry=registry, wrap_execute=wrap)
        except Exception as exc:
            raise BuildError("engine", redact(_describe(exc), loaded.secrets)) from None

    def _manager(
        self, loaded: LoadedConfig, carry_over: resource.Manager | None
    ) -> resource.Manager:
        registry = self._config.resource_types()
        manager = resource.Manager(
            registry,
            self._metrics,
            start_timeout=self._config.start_timeout,
            budget=self._budget,
        )
        check = self.value_replay
        if check is not None:
            manager.set_replay(functools.partial(check, manager))
        try:
            self._config.register_hand_resources(manager, carry_over)
            manager.load_from_root_config(loaded, carry_over=carry_over)
        except Exception as exc:
            manager.stop()  # releases values adopted from carry_over
            raise BuildError("resources", redact(_describe(exc), loaded.secrets)) from None
        return manager

    def _start(self, manager: resource.Manager, secrets: frozenset[str]) -> None:
        try:
            manager.start()
        except Exception as exc:
            if self._cancelled:
                raise self._cancelled_error() from None
            raise BuildError("start", redact(_describe(exc), secrets)) from None

    def _deps(self, loaded: LoadedConfig, manager: resource.Manager) -> None:
        try:
            validate_resource_deps(loaded, manager)
        except Exception as exc:
            raise BuildError("deps", redact(_describe(exc), loaded.secrets)) from None


def _attempt(failed: list[BuildError], step: Callable[[], _T]) -> _T | None:
    """``step()``, or None with its :class:`BuildError` added to ``failed``."""
    try:
        return step()
    except BuildError as exc:
        failed.append(exc)
        return None


def _close_engine(engine: EngineLike) -> None:
    try:
        engine.close()
    except Exception:
        _log.exception("closing an engine that failed to build a snapshot failed")
