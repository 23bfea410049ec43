"""Apple's untyped call shape: ``flow._add_op(type_name, **kwargs)`` split into params and keywords.

Apple's scripts record an operator by type name with one flat set of
keywords, metadata and params mixed (``flow._add_op("transform_by_lua",
common_input=["x"], lua_script=...)``). This module sorts them the way
Apple does, so ``Flow._add_op`` can hand them to :func:`make_call`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._errors import ValidationError
from ._recorder import METADATA_KEYWORDS, CallKeywords

__all__ = ["split_apple_keywords"]

_IGNORED = frozenset({"recall"})
"""Accepted and ignored, as Apple does: the engine derives ``recall`` from the operator kind."""

_MARKERS = frozenset({"consumes_row_set", "additive_writes_row_set", "mutates_row_set"})
"""Apple's row-set marker overrides; our operators declare their markers themselves."""


def split_apple_keywords(
    type_name: str, kwargs: Mapping[str, Any]
) -> tuple[dict[str, Any], CallKeywords]:
    """``(params, keywords)`` from Apple's flat keywords for an operator of ``type_name``.

    Metadata keywords (``name``, ``sources``, the field lists, the defaults,
    ``strict_common``, ``strict_item``, ``data_parallel``, ``debug``) go to
    the keywords; ``name=""`` means "auto-named", as in Apple; every other
    keyword is a param. ``recall`` is ignored (the engine knows which
    operators recall); a row-set marker override is refused, naming it.
    """
    params: dict[str, Any] = {}
    keywords: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in METADATA_KEYWORDS:
            keywords[key] = value
        elif key in _MARKERS:
            raise ValidationError(
                f"operator {kwargs.get('name') or type_name!r}: {key} cannot be overridden here; "
                "an operator type declares its row-set markers itself"
            )
        elif key not in _IGNORED:
            params[key] = value
    if keywords.get("name") == "":
        keywords["name"] = None
    return params, cast(CallKeywords, keywords)
