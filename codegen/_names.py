"""Python names for registered type names."""

from __future__ import annotations

import keyword
import re

from ._errors import CodegenError

__all__ = ["camel_name", "method_name"]

_WORD = re.compile(r"[A-Za-z0-9]+")


def camel_name(type_name: str, suffix: str) -> str:
    """``feed_data`` -> ``FeedDataResource`` (with ``suffix="Resource"``)."""
    words = _WORD.findall(type_name)
    name = "".join(w[:1].upper() + w[1:] for w in words) + suffix
    if not words or not name.isidentifier() or name[0].isdigit():
        raise CodegenError(f"type {type_name!r} has no usable class name")
    return name


def method_name(type_name: str, reserved: frozenset[str]) -> str:
    """The ``Flow`` method for an operator type: the type name itself."""
    if not type_name.isidentifier() or keyword.iskeyword(type_name):
        raise CodegenError(f"operator type {type_name!r} is not a usable method name")
    if type_name.startswith("_"):
        raise CodegenError(f"operator type {type_name!r} must not start with '_'")
    if type_name in reserved:
        raise CodegenError(
            f"operator type {type_name!r} would shadow the Flow method of the same name"
        )
    return type_name
