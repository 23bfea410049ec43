"""One way for a test to add an operator type: :func:`register_test_operator`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pineapple import ParamSpec
from pineapple.engine import (
    Operator,
    OperatorSchema,
    default_operator_registry,
    register_operator,
)

__all__ = ["register_test_operator"]


def register_test_operator(
    name: str,
    factory: Callable[[dict[str, Any]], Operator],
    description: str,
    *,
    params: Mapping[str, ParamSpec] | None = None,
    blocking: bool = False,
) -> None:
    """Register the ``observe`` operator type ``name`` in the default registry, once.

    Call at import time. A module imported twice (by the tests, and again as a
    server's ``--plugin``) registers nothing the second time. The description is
    prefixed with "Test only: ".
    """
    if default_operator_registry().get(name) is not None:
        return
    schema = OperatorSchema(
        name=name,
        kind="observe",
        description=f"Test only: {description}",
        params=params or {},
        blocking=blocking,
    )
    register_operator(schema, factory)
