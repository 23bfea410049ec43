"""The Lua runtime behind ``transform_by_lua`` (private to the operators package).

- ``_sandbox``: the lupa backend (probed once), a sandboxed runtime and its time guard.
- ``_patterns``: ``string.find/match/gmatch/gsub`` bounded (Lua 5.1): C when cheap, else in Lua.
- ``_values``: Python values to Lua and back, Go's number and table rules, the bounds of a
  call's results.
- ``_expression``: a script that is one ``return`` of its input fields, recognised so that
  the driver evaluates it inline.
- ``_driver``: the Lua chunk that runs an operator's function over a request's items.
- ``_state``: one Lua state running one operator's function, with its bounds.
- ``_pool``: a bounded pool of states, one borrower at a time per state.
- ``_errors``: the named errors, and the cap on an error's text.
"""

from ._errors import LuaMemoryLimitError as LuaMemoryLimitError
from ._errors import LuaRuntimeError as LuaRuntimeError
from ._errors import LuaScriptError as LuaScriptError
from ._pool import DEFAULT_MAX_STATES as DEFAULT_MAX_STATES
from ._pool import LuaStatePool as LuaStatePool
from ._sandbox import MAX_MEMORY as MAX_MEMORY
from ._sandbox import LuaBackend as LuaBackend
from ._sandbox import available_backends as available_backends
from ._sandbox import default_backend as default_backend
from ._state import LuaState as LuaState

__all__ = [
    "DEFAULT_MAX_STATES",
    "MAX_MEMORY",
    "LuaBackend",
    "LuaMemoryLimitError",
    "LuaRuntimeError",
    "LuaScriptError",
    "LuaState",
    "LuaStatePool",
    "available_backends",
    "default_backend",
]
