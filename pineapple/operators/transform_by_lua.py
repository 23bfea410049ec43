"""``transform_by_lua``: run a Lua function per item or once per request.

Params: ``lua_script`` (Lua 5.1 source defining the function),
``function_for_item`` or ``function_for_common`` (exactly one non-empty).

Item mode calls the function once per item: ``common_input`` fields are
global scalars, ``item_input`` fields global scalars of the current item;
the return values are written, by position, to ``item_output``. Common mode
calls it once: ``common_input`` fields are scalars, each ``item_input``
field a global array of every item's value (an item without the field
leaves a nil at its position, as with Go's default wangshu VM; gopher-lua
would close the gap); the return values go to ``common_output``. A missing
return value writes nil, as in Go.

Value mapping, sandbox and formatting: see ``_lua_values`` and
``_lua_sandbox``. Thread safety: ``execute`` may run on many threads at
once (``concurrent_safe``, so ``data_parallel`` is allowed); each call
borrows its own Lua state from the operator's pool.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._lua_errors import LuaRuntimeError, LuaScriptError
from ._lua_pool import LuaStatePool
from ._lua_sandbox import default_backend
from ._lua_state import LuaState

__all__ = ["SCHEMA", "TransformByLua"]


SCHEMA = OperatorSchema(
    name="transform_by_lua",
    kind="transform",
    description="Executes a Lua script for per-item or per-common computation.",
    params={
        "lua_script": ParamSpec(
            type="string",
            required=True,
            description="Lua 5.1 source code defining the function to call.",
        ),
        "function_for_item": ParamSpec(
            type="string", default="", description="Function name to call per item."
        ),
        "function_for_common": ParamSpec(
            type="string", default="", description="Function name to call once for all items."
        ),
    },
)


def _string_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise LuaScriptError(f"lua: {name} must be a string, got {type(value).__name__}")
    return value


class TransformByLua(Operator):
    """The ``transform_by_lua`` operator (see the module docstring)."""

    concurrent_safe = True

    def __init__(self, params: dict[str, Any]) -> None:
        self._script = _string_param(params, "lua_script")
        for_item = _string_param(params, "function_for_item")
        for_common = _string_param(params, "function_for_common")
        if not for_item and not for_common:
            raise LuaScriptError(
                "lua: exactly one of function_for_item or function_for_common must be set"
            )
        if for_item and for_common:
            raise LuaScriptError("lua: cannot set both function_for_item and function_for_common")
        self._item_mode = bool(for_item)
        self._function = for_item or for_common
        self._pool: LuaStatePool | None = None

    def prepare(self) -> None:
        """Compile the script in a first Lua state; fails with the operator's name."""
        self._common_in = self.meta.common_input
        self._item_in = self.meta.item_input
        self._outputs = self.meta.item_output if self._item_mode else self.meta.common_output
        factory = partial(
            LuaState,
            operator=self.name,
            script=self._script,
            function=self._function,
            item_mode=self._item_mode,
            common_fields=self._common_in,
            item_fields=self._item_in,
            outputs=len(self._outputs),
            backend=default_backend(),
        )
        pool = LuaStatePool(factory)
        pool.prime()
        if self._pool is not None:
            self._pool.close()
        self._pool = pool

    def operator_stats(self) -> dict[str, int]:
        """The Lua state pool's counters (``/stats`` ``operator_detail``, ``pine_lua_pool_*``)."""
        pool = self._pool
        return pool.stats() if pool is not None else {}

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        """Run the function on this request's items (item mode) or once (common mode)."""
        pool = self._pool
        if pool is None:
            raise LuaRuntimeError(f'lua: operator "{self.name}" was not prepared')
        n = len(inp.items)
        if self._item_mode and n == 0:
            return
        get = inp.common.get
        common = [get(f) for f in self._common_in]
        columns = [inp.column(f) for f in self._item_in]
        state = pool.borrow()
        try:
            if self._item_mode:
                results = state.call_items(n, common, columns)
            else:
                values = state.call_common(n, common, columns)
        finally:
            pool.give_back(state)
        if self._item_mode:
            for field, col in zip(self._outputs, results, strict=True):
                out.set_column(field, col)
        else:
            for field, value in zip(self._outputs, values, strict=True):
                out.set_common(field, value)

    def stats(self) -> dict[str, int]:
        """The Lua state pool's counters (borrow/return/create/reuse/active/idle)."""
        return self._pool.stats() if self._pool is not None else {}

    def close(self) -> None:
        """Drop the idle Lua states and lend no more."""
        if self._pool is not None:
            self._pool.close()


register_operator(SCHEMA, TransformByLua)
