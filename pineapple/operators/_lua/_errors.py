"""The errors of the Lua operator; the Lua text they carry is cut as every error text is
(``capped``, ``MAX_ERROR_BYTES``: ``pineapple/_error_text.py``)."""

from __future__ import annotations

from ..._error_text import MAX_ERROR_BYTES, capped

__all__ = ["MAX_ERROR_BYTES", "LuaMemoryLimitError", "LuaRuntimeError", "LuaScriptError", "capped"]


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
