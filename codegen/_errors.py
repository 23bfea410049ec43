"""Codegen's error: a schema that cannot be written as typed Python."""

from __future__ import annotations

from pineapple import RegistryError

__all__ = ["CodegenError"]


class CodegenError(RegistryError):
    """A registered schema cannot be turned into code (the message names it and why)."""
