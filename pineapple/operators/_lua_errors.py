"""The errors of the Lua operator: one for a bad script, one for a failing run."""

from __future__ import annotations

__all__ = ["LuaRuntimeError", "LuaScriptError"]


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
