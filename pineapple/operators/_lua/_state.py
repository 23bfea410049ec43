"""One loaded Lua state of an operator: the compiled script and its call driver.

A :class:`LuaState` is built once (the script is compiled then, never per
request) and serves many requests, one thread at a time (see
``_pool``). Per request, the Go engine's contract holds: common input
fields are scalar globals; in item mode every item field is a scalar
global set before each call and the function is called once per item; in
common mode every item field is a global array of all the items' values
and the function is called once. Return values map to the output fields by
position (missing ones are nil). After each request the globals are reset
to what the script left after loading (globals it created are removed,
baseline ones restored: a shallow reset, as in Go).

Speed: the state's driver (``_driver``) runs the whole item loop inside
Lua, so a request costs a handful of Python/Lua crossings whatever the item
count. A script that is one ``return`` of its input fields (``_expression``)
is evaluated in the loop itself, with no global written and no call per item.

Results are bounded (``_values``): a call's returned text and table values
are counted against a :class:`~._values.ResultBudget` as they are converted.
An output column is fetched in pieces small enough that the text they may
hold fits what is left (no Lua string is longer than the state's heap), so
a string returned for every item is refused before it is copied past the
budget; tables are walked once in Lua (``AUDIT``, under the time guard and
memory cap) before their conversion, which runs under the call's deadline.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from ..._error_text import clipped
from ..._errors import DeadlineExceededError
from ._driver import UNROLL_FIELDS, driver_source
from ._errors import LuaMemoryLimitError, LuaRuntimeError, LuaScriptError, capped
from ._expression import InlineReturn
from ._sandbox import (
    HOOK_INSTRUCTIONS,
    MAX_MEMORY,
    MEMORY_MESSAGE,
    SCRIPT_CHUNK,
    LuaBackend,
    default_backend,
)
from ._values import (
    AUDIT,
    AUDIT_DEPTH,
    MAX_RESULT_VALUES,
    NEG_ZERO_KEYS,
    OTHER,
    ResultBudget,
    column_to_lua,
    fetch_column,
    from_lua,
    keys_path,
    to_lua,
)

__all__ = ["DEFAULT_LOAD_TIMEOUT", "LuaState"]

DEFAULT_LOAD_TIMEOUT = 1.0
"""Seconds a script's top level may run when its state is built (``transform_by_lua``
passes its ``timeout_ms``): past it the script does not load (:class:`LuaScriptError`)."""

_RUNTIME_REFS = (
    "_rt",
    "_run",
    "_reset",
    "_current",
    "_fetch",
    "_pack",
    "_arm",
    "_disarm",
    "_audit",
    "_neg_zero_keys",
)
"""Attributes that keep the Lua runtime alive (``close`` drops them)."""


def _is_memory_error(exc: BaseException) -> bool:
    # Through the driver's guard (an xpcall), a failed allocation reaches
    # Python as a plain error whose message is Lua's own.
    return type(exc).__name__ == "LuaMemoryError" or str(exc) == MEMORY_MESSAGE


def _lua_message(exc: BaseException, max_memory: int = MAX_MEMORY) -> str:
    if _is_memory_error(exc):
        return f"not enough memory (a Lua state may use {max_memory / (1024 * 1024):g} MiB)"
    text = str(exc)
    text = text.removeprefix("error loading code: ")
    return capped(text) if text else f"(error object is not a string: {type(exc).__name__})"


class LuaState:
    """A sandboxed runtime with the operator's script loaded and its driver compiled.

    Not thread-safe: one request at a time (the pool hands each out to one
    thread). Raises :class:`LuaScriptError` when the script does not load
    or does not define ``function``; its top level runs under the same
    guards as a call (``load_timeout`` seconds, ``max_memory`` bytes), so a
    top level that loops or allocates without end is a load error naming
    the operator.

    Each call runs under a time guard (a count hook, see ``_sandbox``)
    until its ``deadline`` (``time.monotonic`` seconds): past it the call
    raises :class:`DeadlineExceededError` naming the operator. A state whose
    call hit its deadline or its memory limit is ``broken``: its pool
    discards it (globals the script changed in place may be half-updated,
    and its heap may be at the limit).
    """

    def __init__(
        self,
        *,
        operator: str,
        script: str,
        function: str,
        item_mode: bool,
        common_fields: tuple[str, ...],
        item_fields: tuple[str, ...],
        outputs: int,
        output_fields: tuple[str, ...] = (),
        unroll_fields: int = UNROLL_FIELDS,
        backend: LuaBackend | None = None,
        max_memory: int = MAX_MEMORY,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        inline: InlineReturn | None = None,
    ) -> None:
        if script.startswith("\x1b"):
            raise LuaScriptError(
                f'lua: failed to load script of operator "{operator}": '
                "precompiled (binary) chunks are not allowed"
            )
        self._backend = backend = backend if backend is not None else default_backend()
        self._error = backend.error
        sandboxed = backend.open(max_memory)
        rt = sandboxed.rt
        self._rt = rt
        self._arm, self._disarm = sandboxed.arm, sandboxed.disarm
        self._operator = operator
        self._max_memory = max_memory
        self.broken = False
        """True once a call hit the deadline or the memory limit: never reuse this state."""
        self._item_mode = item_mode
        self._nret = outputs
        self._fields = output_fields
        nc, ni = len(common_fields), len(item_fields)
        self._unrolled = nc + ni <= unroll_fields and nc + ni + 2 * outputs <= 3 * unroll_fields
        if not (item_mode and self._unrolled and outputs):
            inline = None
        # The driver is compiled before the script so that it holds the
        # pristine built-ins (``next``, ``rawset``, ``unpack``) whatever the
        # script redefines.
        driver = (item_mode, common_fields, item_fields, outputs)
        try:
            source = driver_source(*driver, unroll=self._unrolled, inline=inline)
            compiled = rt.compile(source, name="=driver")
        except self._error:
            if inline is None:
                raise
            # Not an expression after all (the script's own load names the error).
            inline = None
            compiled = rt.compile(driver_source(*driver, unroll=self._unrolled), name="=driver")
        self.inline = inline is not None
        """Whether the script runs in the driver's inline item loop first (``_expression``)."""
        run, reset, baseline, current, fetch, pack = compiled(
            function,
            rt.table_from(list(common_fields)),
            rt.table_from(list(item_fields)),
            outputs,
        )
        self._neg_zero_keys = rt.execute(NEG_ZERO_KEYS, name="=negzero")
        self._audit = rt.execute(AUDIT, AUDIT_DEPTH, name="=audit")
        self._load(script, load_timeout)
        if rt.globals()[function] is None:
            raise LuaScriptError(
                f'lua: function "{function}" not defined in script of operator "{operator}"'
            )
        baseline()
        run = sandboxed.guard(run, SCRIPT_CHUNK)
        self._run, self._reset, self._current, self._fetch = run, reset, current, fetch
        self._pack = pack

    def _load(self, script: str, timeout: float) -> None:
        """Run the script's top level under the time guard (``timeout`` seconds) and memory cap."""
        rt, operator = self._rt, self._operator
        failed = f'lua: failed to load script of operator "{operator}"'
        self._arm(time.monotonic, time.monotonic() + timeout, HOOK_INSTRUCTIONS)
        try:
            rt.execute(script, name=SCRIPT_CHUNK)
        except self._error as exc:
            if self._disarm():
                raise LuaScriptError(
                    f"{failed}: its top level ran past the time limit "
                    f"({timeout * 1000:g} ms, timeout_ms)"
                ) from exc
            raise LuaScriptError(f"{failed}: {_lua_message(exc, self._max_memory)}") from exc
        except BaseException:
            self._disarm()
            raise
        self._disarm()

    # -- calls -------------------------------------------------------------

    def _call(
        self, n: int, common: list[Any], columns: list[Any], deadline: float
    ) -> tuple[Any, ...]:
        rt = self._rt
        cvals = [to_lua(rt, v) for v in common]
        if self._unrolled:
            args = [n, *cvals, *columns]
        else:
            args = [n, rt.table_from(cvals), rt.table_from(columns)]
        self._arm(time.monotonic, deadline, HOOK_INSTRUCTIONS)
        try:
            result: tuple[Any, ...] = self._run(*args)
        except self._error as exc:
            fired = self._disarm()
            self._fail(exc, fired)
        except UnicodeDecodeError as exc:  # a returned string (run has reset already)
            self._disarm()
            raise LuaRuntimeError(f"lua: returned string is not valid UTF-8: {exc}") from exc
        except BaseException:
            self._disarm()
            self.broken = True
            raise
        self._disarm()
        return result

    def _fail(self, exc: BaseException, fired: bool) -> None:
        """Raise the named error for a failed call (and mark the state broken if it must go)."""
        where = self._current()
        if fired:
            self.broken = True
            op = self._operator
            raise DeadlineExceededError(
                f'deadline exceeded in operator "{op}" (Lua stopped by its time guard)',
                operator=op,
            ) from exc
        self._reset()
        at = f"item[{where - 1}]: " if self._item_mode and where > 0 else ""
        message = f"lua: {at}{_lua_message(exc, self._max_memory)}"
        if _is_memory_error(exc):
            self.broken = True
            raise LuaMemoryLimitError(message) from exc
        raise LuaRuntimeError(message) from exc

    def close(self) -> None:
        """Free the state's Lua heap now and drop the runtime.

        The heap is collected first: a failed call's traceback may keep the
        runtime object alive a while longer, but not its garbage.
        """
        rt = self.__dict__.get("_rt")
        if rt is not None:
            rt.gccollect()
        self.broken = True
        for name in _RUNTIME_REFS:
            self.__dict__.pop(name, None)

    def _budget(self, deadline: float) -> ResultBudget:
        return ResultBudget(self._operator, self._max_memory, MAX_RESULT_VALUES, deadline)

    def _field(self, j: int) -> str:
        fields = self._fields
        return f'field "{clipped(fields[j])}"' if j < len(fields) else f"return value {j + 1}"

    def call_items(
        self, n: int, common: list[Any], columns: list[list[Any]], deadline: float
    ) -> list[list[Any]]:
        """Item mode: call the function once per item; one result column per output."""
        rt = self._rt
        result = self._call(
            n, common, [column_to_lua(rt, c, self._pack) for c in columns], deadline
        )
        nz, z = result[0], result[1]
        tables = result[2:] if self._unrolled else [result[2][j] for j in range(1, self._nret + 1)]
        budget = self._budget(deadline)
        cols = [self._column(t, n, j, budget) for j, t in enumerate(tables)]
        if nz:
            for k in range(1, nz + 1):
                i, j = divmod(z[k], self._nret)
                cols[j][i] = -0.0
        return cols

    def call_common(
        self, n: int, common: list[Any], columns: list[list[Any]], deadline: float
    ) -> list[Any]:
        """Common mode: call the function once, item fields as arrays; one value per output."""
        rt = self._rt
        result = self._call(
            n, common, [column_to_lua(rt, c, self._pack) for c in columns], deadline
        )
        nz, z = result[0], result[1]
        if self._unrolled:
            raw = list(result[2:])
        else:
            table = result[2]
            raw = [table[j] for j in range(1, self._nret + 1)]
        budget = self._budget(deadline)
        table_type = self._backend.table_type
        values = []
        for j, value in enumerate(raw):
            if type(value) is str:  # one per output: at most the heap each, converted already
                budget.text -= len(value)
                if budget.text < 0:
                    raise LuaRuntimeError(f"lua: {self._field(j)}: {budget.over('text')}")
            elif type(value) is table_type:
                self._audit_tables(rt.table_from([value]), 1, j, budget)
            values.append(from_lua(value, self._backend, budget, self._neg_zero_keys))
        if nz:
            for k in range(1, nz + 1):
                values[z[k]] = -0.0
        return values

    def _column(self, table: Any, n: int, j: int, budget: ResultBudget) -> list[Any]:
        """Output column ``j`` of an item-mode call, fetched and converted within ``budget``
        (no string in the state is longer than its heap: see ``fetch_column``)."""
        longest = max(1, self._rt.get_memory_used() or self._max_memory)
        try:
            field = partial(self._field, j)
            col, kind = fetch_column(self._fetch, table, n, longest, budget, field)
        except UnicodeDecodeError as exc:
            raise LuaRuntimeError(f"lua: returned string is not valid UTF-8: {exc}") from exc
        if kind != OTHER:
            return col
        self._audit_tables(table, n, j, budget)
        backend = self._backend
        for i, value in enumerate(col):
            try:
                col[i] = from_lua(value, backend, budget, self._neg_zero_keys)
            except LuaRuntimeError as exc:
                raise LuaRuntimeError(f"lua: item[{i}]: {exc}") from exc
        return col

    def _audit_tables(self, col: Any, n: int, j: int, budget: ResultBudget) -> None:
        """Walk the tables among ``col[1..n]`` (``AUDIT``) under the call's time guard."""
        self._arm(time.monotonic, budget.deadline, HOOK_INSTRUCTIONS)
        try:
            bad, why, rest = self._audit(col, 1, n, budget.values, budget.text)
        except self._error as exc:
            self._fail(exc, self._disarm())
        except BaseException:
            self._disarm()
            self.broken = True
            raise
        self._disarm()
        if bad is None:
            budget.values, budget.text = int(why), int(rest)
            return
        keys = [rest[k] for k in range(len(rest), 0, -1)]
        at = f"item[{bad - 1}]: " if self._item_mode else ""
        where = f" at {keys_path(keys)}" if keys else ""
        raise LuaRuntimeError(f"lua: {at}{self._field(j)}: {budget.over(why)}{where}")
