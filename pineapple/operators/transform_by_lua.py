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

Speed: an item function that is one ``return`` of its input fields runs in
the driver's item loop itself (``_lua._expression``); on the compiled core,
one of numbers only (``+ - * /``) is answered without Lua wherever every
value it reads is a number (``_lua._arithmetic``), with Lua's answers to the
bit.

Value mapping, sandbox and formatting: see ``_lua`` (``_values`` and
``_sandbox``). Thread safety: ``execute`` may run on many threads at
once (``concurrent_safe``, so ``data_parallel`` is allowed); each call
borrows its own Lua state from the operator's pool.

Bounds (``_lua._state``, ``_lua._pool``): a call, its wait for a free
state included, stops at the request's deadline or after ``timeout_ms``,
whichever comes first (``DeadlineExceededError`` naming the operator), so a
request without a deadline waits at most ``timeout_ms`` while every state is
lent; the script's top level, run when a state is built, stops after
``timeout_ms`` too (a config error naming the operator); a state may allocate
``max_memory_mb`` and the operator keeps at most ``max_states`` states, so
its Lua memory stays below ``max_states * max_memory_mb``; what a call
returns is converted under its deadline, within ``max_memory_mb``
characters of text and 1,000,000 table values, and a table shared or
cyclic inside one returned value is refused (``_lua._values``); error texts
are capped at 4 KiB. The schema is ``blocking``: a server runs pipelines with
Lua on worker threads (lupa releases the GIL while Lua runs), never on its
event loop.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from .._context import Context
from .._native import compiled
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._lua import (
    DEFAULT_MAX_STATES,
    MAX_MEMORY,
    Arithmetic,
    LuaRuntimeError,
    LuaScriptError,
    LuaState,
    LuaStatePool,
    arithmetic,
    default_backend,
    inline_return,
)

__all__ = ["DEFAULT_TIMEOUT_MS", "SCHEMA", "TransformByLua"]

DEFAULT_TIMEOUT_MS = 1000
"""How long one call may run when the request's deadline is later (or unset)."""


SCHEMA = OperatorSchema(
    name="transform_by_lua",
    kind="transform",
    description="Executes a Lua script for per-item or per-common computation.",
    blocking=True,
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
        "timeout_ms": ParamSpec(
            type="int",
            description=f"Longest run of the script per request, in ms (default "
            f"{DEFAULT_TIMEOUT_MS}; the request's deadline may stop it sooner); past it the "
            "request fails with a deadline error.",
        ),
        "max_memory_mb": ParamSpec(
            type="int",
            description=f"Memory one Lua state may allocate, in MiB (default "
            f"{MAX_MEMORY >> 20}); past it the call fails and the state is discarded. Also "
            "the text one call's results may hold, in Mi characters.",
        ),
        "max_states": ParamSpec(
            type="int",
            description=f"Lua states the operator keeps at most (default {DEFAULT_MAX_STATES}; "
            "concurrent calls beyond wait for one, within timeout_ms); its Lua memory stays below "
            "max_states * max_memory_mb.",
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


def _positive_param(params: dict[str, Any], name: str, default: int) -> int:
    value = params.get(name)
    if value is None:
        return default
    if type(value) is not int or value <= 0:
        raise LuaScriptError(f"lua: {name} must be a positive integer, got {value!r}")
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
        self._timeout = _positive_param(params, "timeout_ms", DEFAULT_TIMEOUT_MS) / 1000
        self._max_memory = _positive_param(params, "max_memory_mb", MAX_MEMORY >> 20) << 20
        self._max_states = _positive_param(params, "max_states", DEFAULT_MAX_STATES)
        self._pool: LuaStatePool | None = None
        self._arithmetic: Arithmetic | None = None

    def prepare(self) -> None:
        """Compile the script in a first Lua state; fails with the operator's name."""
        self._common_in = self.meta.common_input
        self._item_in = self.meta.item_input
        self._outputs = self.meta.item_output if self._item_mode else self.meta.common_output
        inline = None
        if self._item_mode and self._outputs:
            fields = frozenset(self._common_in) | frozenset(self._item_in)
            inline = inline_return(self._script, self._function, fields)
        self._arithmetic = None
        # Numbers without Lua on the compiled core only: in pure Python, Lua's C VM is
        # the faster of the two (the answers are the same).
        if inline is not None and compiled():
            common_in, item_in = tuple(self._common_in), tuple(self._item_in)
            self._arithmetic = arithmetic(inline.tokens, common_in, item_in)
        factory = partial(
            LuaState,
            operator=self.name,
            script=self._script,
            function=self._function,
            item_mode=self._item_mode,
            common_fields=self._common_in,
            item_fields=self._item_in,
            outputs=len(self._outputs),
            output_fields=tuple(self._outputs),
            backend=default_backend(),
            max_memory=self._max_memory,
            load_timeout=self._timeout,
            inline=inline,
        )
        pool = LuaStatePool(factory, max_states=self._max_states, operator=self.name)
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
        n = len(inp)
        if self._item_mode and n == 0:
            return
        get = inp.common.get
        common = [get(f) for f in self._common_in]
        columns = [inp.column_view(f) for f in self._item_in]  # read only, never kept
        deadline = time.monotonic() + self._timeout
        if ctx.deadline is not None and ctx.deadline < deadline:
            deadline = ctx.deadline
        ctx.check_deadline(self.name)
        if self._arithmetic is not None:
            numbers = self._arithmetic.columns(n, common, columns)
            if numbers is not None:  # numbers only: Lua's answer, without Lua
                for j, field in enumerate(self._outputs):
                    out.set_column(field, numbers[j] if j < len(numbers) else [None] * n)
                return
        state = pool.borrow(deadline)
        try:
            if self._item_mode:
                results = state.call_items(n, common, columns, deadline)
            else:
                values = state.call_common(n, common, columns, deadline)
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
        """Drop the idle Lua states and lend no more (nor answer without Lua)."""
        self._arithmetic = None
        if self._pool is not None:
            self._pool.close()


register_operator(SCHEMA, TransformByLua)
