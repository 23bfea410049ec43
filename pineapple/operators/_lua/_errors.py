"""The errors of the Lua operator, and the cap on the Lua text they carry."""

from __future__ import annotations

__all__ = ["MAX_ERROR_BYTES", "LuaMemoryLimitError", "LuaRuntimeError", "LuaScriptError", "capped"]

MAX_ERROR_BYTES = 4096
"""At most this many bytes of a Lua error text reach a message (responses, logs)."""


class LuaScriptError(ValueError):
    """A ``lua_script`` does not load, or lacks its declared function.

    Raised while the operator is built; the engine reports it as a
    ``RegistryError`` (``Init failed: ...``). The message names the operator.
    """


class LuaRuntimeError(RuntimeError):
    """A Lua call failed, or returned a value with no JSON equivalent.

    Raised from ``execute``; the engine reports it as an ``ExecutionError``
    naming the operator. Messages follow the Go engine's
    (``lua: item[3]: <lua error>``, ``lua: table has non-string key ...``).
    """


class LuaMemoryLimitError(LuaRuntimeError):
    """A Lua state reached its ``max_memory_mb``; the state is discarded, not reused."""


def capped(text: str, limit: int = MAX_ERROR_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, saying how much was cut."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    head = raw[: limit - 64].decode("utf-8", "ignore")
    return f"{head}... ({len(raw) - len(head.encode())} more bytes)"
