"""What produced an answer: the config revision and the version of every resource it read.

A traced request (``"_return_trace": true`` in ``common``) borrows its
resources through a :class:`BorrowLog`, which asks the provider for each
value's version as it lends it (``Manager.borrow_versioned``) and notes
``name@version``. The response then carries, beside Go's ``trace`` list, a
``served_by`` object::

    "served_by": {"config_revision": "3f2a9c1b7e4d", "resources": ["feed@4", "geo@1"]}

``config_revision`` is whatever the server put in the context with
:func:`with_config_revision` (``pineapple serve``: the first 12 hex digits of
the config's SHA-256, as ``GET /config/history`` names revisions); absent
when nothing did (``pineapple run``, an engine used as a library).
``served_by`` is a key Go's response does not have; a Go client's decoder
ignores it, and an answer not asked for a trace is byte for byte as before.

Bounds: a log notes each resource name once (a config has a bounded number of
resources, and a name the provider does not know is not noted), at most
:data:`MAX_NOTED` names.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import resource
from .._context import Context

__all__ = [
    "MAX_NOTED",
    "BorrowLog",
    "config_revision",
    "served_by",
    "with_borrow_log",
    "with_config_revision",
]

MAX_NOTED = 1024
"""Most distinct resources one request's log notes (more are borrowed, not noted)."""


class _RevisionKey:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<config revision>"


_REVISION = _RevisionKey()


def with_config_revision(ctx: Context, revision: str) -> Context:
    """``ctx`` carrying the revision of the config that serves (the server sets it once per
    snapshot)."""
    return ctx.with_value(_REVISION, revision)


def config_revision(ctx: Context | None) -> str | None:
    """The revision :func:`with_config_revision` put in ``ctx``, or None."""
    if ctx is None:
        return None
    revision: str | None = ctx.value(_REVISION)
    return revision


class BorrowLog:
    """A provider that lends what ``inner`` lends and notes ``name@version`` of each.

    Thread safety: one request's operators may run on several threads; the
    notes are taken under a lock.
    """

    __slots__ = ("_inner", "_lock", "_noted")

    def __init__(self, inner: resource.ResourceProvider) -> None:
        self._inner = inner
        self._noted: dict[str, int | None] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Any:
        """A handle from ``inner`` (None when it has none); its version noted."""
        versioned = getattr(self._inner, "borrow_versioned", None)
        version: int | None = None
        if versioned is not None:
            got = versioned(name)
            if got is None:
                return None
            handle, version = got
        else:  # a provider without versions (``Static``): the name alone
            handle = self._inner.get(name)
            if handle is None:
                return None
        with self._lock:
            if name not in self._noted and len(self._noted) < MAX_NOTED:
                self._noted[name] = version
        return handle

    @property
    def inner(self) -> resource.ResourceProvider:
        """The provider this log lends from."""
        return self._inner

    def __getattr__(self, attribute: str) -> Any:
        # What else operators ask the provider (``redact``, ``names``): the inner one's.
        return getattr(self._inner, attribute)

    def borrowed(self) -> list[str]:
        """``name@version`` (``name`` without a version) of every resource lent, sorted."""
        with self._lock:
            noted = sorted(self._noted.items())
        return [name if version is None else f"{name}@{version}" for name, version in noted]


def with_borrow_log(ctx: Context | None) -> tuple[Context | None, BorrowLog | None]:
    """``ctx`` whose provider notes what it lends, and the log (the same log when ``ctx``
    already has one); ``(ctx, None)`` when ``ctx`` has no provider."""
    provider = resource.from_context(ctx)
    if provider is None:
        return ctx, None
    if isinstance(provider, BorrowLog):
        return ctx, provider
    log = BorrowLog(provider)
    return resource.with_resources(ctx, log), log


def served_by(ctx: Context | None, log: BorrowLog | None) -> dict[str, Any]:
    """The ``served_by`` object of a traced answer (see module docs)."""
    out: dict[str, Any] = {}
    revision = config_revision(ctx)
    if revision is not None:
        out["config_revision"] = revision
    out["resources"] = log.borrowed() if log is not None else []
    return out
