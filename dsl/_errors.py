"""The DSL's error: a flow that fails a compile-time check."""

from __future__ import annotations

from collections.abc import Sequence

import pineapple

__all__ = ["ValidationError"]


class ValidationError(pineapple.ValidationError, ValueError):
    """A flow fails a check of :func:`dsl.compile_flow` (or a DSL call is malformed).

    The message names the operator, resource, sub-flow or field at fault;
    ``problems`` lists each problem found (one message each). It is a
    :class:`pineapple.ValidationError` and a :class:`ValueError` (what the
    Apple DSL raises for a malformed call), so callers may catch any of them.
    """

    def __init__(self, message: str, problems: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems is not None else [message]
