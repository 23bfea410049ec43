"""Apple's untyped call shape: ``flow._add_op(type_name, **kwargs)`` split into params and keywords.

Apple's scripts record an operator by type name with one flat set of
keywords, metadata and params mixed (``flow._add_op("transform_by_lua",
common_input=["x"], lua_script=...)``). This module sorts them the way
Apple does, so ``Flow._add_op`` can hand them to :func:`make_call`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._recorder import METADATA_KEYWORDS, CallKeywords

__all__ = ["split_apple_keywords"]


def split_apple_keywords(
    type_name: str, kwargs: Mapping[str, Any]
) -> tuple[dict[str, Any], CallKeywords]:
    """``(params, keywords)`` from Apple's flat keywords for an operator of ``type_name``.

    Metadata keywords (``name``, ``sources``, the field lists, the defaults,
    ``strict_common``, ``strict_item``, ``data_parallel``, ``debug``) go to
    the keywords, and so do ``recall`` and the row-set markers (see
    :func:`dsl._recorder.make_call`: ``name=""`` is auto-named, ``recall`` is
    ignored, a marker given ``True`` widens the operator's); every other
    keyword is a param.
    """
    params: dict[str, Any] = {}
    keywords: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in METADATA_KEYWORDS:
            keywords[key] = value
        else:
            params[key] = value
    return params, cast(CallKeywords, keywords)
