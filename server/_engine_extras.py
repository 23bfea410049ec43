"""``EngineExtras``: what an engine may offer beyond ``EngineLike``, named once.

The server serves any ``EngineLike`` (``Wiring.engine_factory``); an engine
that also offers these gets more: ``stats`` (the ``pine_*`` families and
``/stats`` counts), ``operator_stats()`` (``/stats``' ``operator_detail`` and
the Lua pool families), ``render_dag()`` (``/dag``). ``pineapple.engine.Engine``
offers all three. The server asks through the functions below, and does
without an extra the engine lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pineapple.engine import EngineStats
from pineapple.resource.lowlevel import hook_of

__all__ = ["EngineExtras", "dag_renderer", "engine_stats", "operator_stats"]


class EngineExtras(Protocol):
    """The optional parts of an engine (``pineapple.engine.Engine`` has each)."""

    @property
    def stats(self) -> EngineStats:
        """Its request and operator counters."""
        ...

    def operator_stats(self) -> dict[str, dict[str, int]]:
        """Counters of operators that keep their own (Lua pools), by operator name."""
        ...

    def render_dag(self, fmt: str = "dot", *, collapse: int = 0, group: str | None = None) -> str:
        """The operator graph of ``group`` as text in ``fmt``."""
        ...


def engine_stats(engine: object) -> EngineStats | None:
    """``engine.stats`` when it is an ``EngineStats``, else None."""
    stats = getattr(engine, "stats", None)
    return stats if isinstance(stats, EngineStats) else None


def operator_stats(engine: object) -> dict[str, dict[str, int]]:
    """``engine.operator_stats()``, or {} when the engine keeps none."""
    get = hook_of(engine, "operator_stats")
    return {} if get is None else dict(get())


def dag_renderer(engine: object) -> Callable[..., Any] | None:
    """``engine.render_dag``, or None when the engine cannot draw its graph."""
    return hook_of(engine, "render_dag")
