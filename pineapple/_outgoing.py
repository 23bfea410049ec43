"""Headers a request's calls to other services carry: its trace context.

A server that traces (``pineapple serve --tracing``) puts a function in the
request's context that gives the W3C ``traceparent`` (and ``tracestate``) of
the span being run; an operator that calls another service
(``transform_by_remote_pineapple``) adds :func:`outgoing_headers` to its
request, so the downstream pod's spans join the same trace. Without one the
headers are empty: one lookup in the context's values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._context import Context

__all__ = ["outgoing_headers", "with_outgoing_headers"]

_NONE: Mapping[str, str] = {}


class _OutgoingKey:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<outgoing headers>"


_KEY = _OutgoingKey()


def with_outgoing_headers(ctx: Context, headers: Callable[[], Mapping[str, str]]) -> Context:
    """A new context whose calls to other services add what ``headers()`` gives at the call."""
    return ctx.with_value(_KEY, headers)


def outgoing_headers(ctx: Context | None) -> Mapping[str, str]:
    """The headers a call made now for ``ctx``'s request adds (empty: nothing to add)."""
    if ctx is None:
        return _NONE
    headers: Callable[[], Mapping[str, str]] | None = ctx.value(_KEY)
    return _NONE if headers is None else headers()
