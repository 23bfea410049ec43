"""Optional hooks: the methods a fetcher, a value or a codec may define, named once.

A fetcher is any callable (``Fetcher``); a value is any object. Beyond that,
the runtime calls a method when the object defines it, and these Protocols
name each one, with what it is for:

- :class:`FetcherHooks` (the Manager calls them): ``commit``, ``discard``,
  ``carry_over``, ``cancel``, ``close``. A wrapping fetcher (one that holds
  another, e.g. the server's ``PublishingFetcher``) defines every one and
  forwards it with :func:`hook_of` (``tests/resource/test_hooks.py`` checks
  each wrapper against :data:`FETCHER_HOOKS`).
- :class:`Closable` (a value): ``close``, called once after its last borrow.
- :class:`CodecHooks` (a ``SnapshotCodec``): ``release_memory``, called after
  a value was written and dropped.

:func:`call_hook` calls a hook when it is defined and logs (never raises) its
failure; :func:`hook_of` finds one for a caller that handles the failure itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "FETCHER_HOOKS",
    "Closable",
    "CodecHooks",
    "FetcherHooks",
    "admitted_upstream",
    "call_hook",
    "hook_names",
    "hook_of",
]

_log = logging.getLogger("pineapple.resource")


class FetcherHooks(Protocol):
    """The optional methods of a fetcher; the Manager calls each one it defines."""

    def commit(self, value: Any) -> None:
        """``value`` passed every check and is about to be served (or is served again by a
        rollback): publish it. What it raises refuses the swap (nothing is swapped)."""
        ...

    def discard(self, value: Any) -> None:
        """``value``, fetched by this fetcher, will not be served (refused, pinned, stopped)."""
        ...

    def carry_over(self, value: Any) -> None:
        """``value`` serves now without this fetcher having fetched it (a config reload
        carried it over, a refusal or a rollback kept it): resume change detection from it."""
        ...

    def cancel(self) -> None:
        """End a fetch in flight now (the Manager stops, or a removed resource is dropped)."""
        ...

    def close(self) -> None:
        """Release what the fetcher holds (its connection); called once, at ``stop``."""
        ...


class Closable(Protocol):
    """A value with resources of its own: ``close`` runs once, after its last borrow."""

    def close(self) -> None:
        """Release the value (its file mapping, its pool)."""
        ...


class CodecHooks(Protocol):
    """The optional method of a ``SnapshotCodec``."""

    def release_memory(self) -> None:
        """Hand memory freed by a value just written and dropped back to the OS (an
        allocator's pool); called after every publish, never fails it."""
        ...


def hook_names(protocol: type) -> tuple[str, ...]:
    """The methods ``protocol`` declares (its own, not ``object``'s), sorted."""
    return tuple(
        sorted(
            name
            for name, member in vars(protocol).items()
            if callable(member) and not name.startswith("_")
        )
    )


FETCHER_HOOKS = hook_names(FetcherHooks)
"""``("cancel", "carry_over", "close", "commit", "discard")``: what a wrapper forwards."""


def admitted_upstream(fetcher: object) -> bool:
    """True when ``fetcher`` declares ``admitted_upstream = True``: its values were validated
    and fitted in a budget by another process (a worker mapping what its supervisor
    published), so the Manager neither validates nor budgets them."""
    return getattr(fetcher, "admitted_upstream", False) is True


def hook_of(owner: object, name: str) -> Callable[..., Any] | None:
    """``owner``'s hook ``name`` (one of the Protocols' methods), or None when it has none."""
    hook = getattr(owner, name, None)
    return hook if callable(hook) else None


def call_hook(
    owner: object,
    name: str,
    *args: Any,
    label: str,
    redact: Callable[[str], str] = str,
    level: int = logging.WARNING,
) -> None:
    """Call ``owner.name(*args)`` when ``owner`` defines it; log (never raise) its failure.

    ``label`` names the owner in the log line (``resource 'x'``); ``redact``
    masks its secrets in the error; at ``level`` ``ERROR`` or above the line
    carries the traceback.
    """
    hook = hook_of(owner, name)
    if hook is None:
        return
    try:
        hook(*args)
    except Exception as exc:
        _log.log(
            level,
            "%s: %s hook failed: %s",
            label,
            name,
            redact(f"{type(exc).__name__}: {exc}"),
            exc_info=level >= logging.ERROR,
        )
