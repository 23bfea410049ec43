"""The Lua driver of a state: the chunk that runs an operator's function over a request.

A small Lua *driver* written for the operator's field lists runs the whole
item loop inside Lua, so a request costs a handful of Python/Lua crossings
whatever the item count: each input column goes in as one array table, each
output column comes back as one table. It resets the globals after each
call (a shallow reset, as in Go) and records where a returned value is
negative zero (lupa hands a Lua ``-0`` over as ``int`` 0). Up to
:data:`UNROLL_FIELDS` fields it keeps one local per field; beyond, it loops
over the field lists.

A script recognised by ``_expression`` (one ``return`` of its input fields)
gets an inline item loop too: the fields are locals and the expressions are
evaluated in the loop itself, with no global written and no function called
per item. ``run`` tries it first, under ``pcall`` (the sandbox's, which
raises the time guard's error again); if it raises, ``run`` goes on with the
general loop, whose error is the one the caller sees.
"""

from __future__ import annotations

from ._expression import INLINE_PREFIX, InlineReturn, field_slots

__all__ = ["UNROLL_FIELDS", "driver_source"]

UNROLL_FIELDS = 40
"""Above this many input fields the driver loops over lists (Lua 5.1: 60 upvalues, 200 locals)."""


_PRELUDE = """
local G, next, rawset, unpack, select, pcall = _G, next, rawset, unpack, select, pcall
local fname, CK, IK, nret = ...
local nc, ni = #CK, #IK
local base = {}
local where = 0
local function reset()
  where = 0
  for k in next, G do
    if base[k] == nil then rawset(G, k, nil) end
  end
  for k, v in next, base do rawset(G, k, v) end
end
local function baseline()
  for k, v in next, G do base[k] = v end
end
local function current() return where end
local function fetch(t, i, j) return unpack(t, i, j) end
local function pack(t, off, ...)
  if t == nil and off == 0 then return {...} end
  local a = {...}
  for i = 1, select("#", ...) do t[off + i] = a[i] end
  return t
end
"""

_RETURN = "return run, reset, baseline, current, fetch, pack\n"


def _names(prefix: str, count: int) -> str:
    return ", ".join(f"{prefix}{k}" for k in range(1, count + 1))


def _negz(value: str, at: str, z: str = "z", nz: str = "nz", zero: str = "0") -> str:
    """Lua that records position ``at`` when ``value`` is negative zero (lupa returns int 0)."""
    mark = f"{z} = {z} or {{}}; {nz} = {nz} + 1; {z}[{nz}] = {at}"
    return f"if {value} == {zero} and 1/{value} < {zero} then {mark} end\n"


def _run_params(nc: int, ni: int, prefix: str = "") -> list[str]:
    """``run``'s parameters: the item count, the common values, the item columns."""
    params = [f"{prefix}n"] + [f"{prefix}cv{k}" for k in range(1, nc + 1)]
    return params + [f"{prefix}c{k}" for k in range(1, ni + 1)]


def _unrolled_head(nc: int, ni: int, before: str = "", first: str = "") -> list[str]:
    """Field names as locals, ``run``'s signature, and the common globals set; ``before``
    goes before ``run``, ``first`` is ``run``'s first line."""
    lines = []
    if nc:
        lines.append(f"local {_names('C', nc)} = unpack(CK)\n")
    if ni:
        lines.append(f"local {_names('K', ni)} = unpack(IK)\n")
    lines.append(f"{before}local function run({', '.join(_run_params(nc, ni))})\n{first}")
    lines.extend(f"  G[C{k}] = cv{k}\n" for k in range(1, nc + 1))
    return lines


def _unrolled_return(prefix: str, nret: int) -> str:
    """``run``'s last line: the negative-zero positions, then one local per output column."""
    outs = "".join(f", {prefix}{j}" for j in range(1, nret + 1))
    return f"  return nz, z{outs}\nend\n"


_LOOPED_HEAD = "local function run(n, cvals, cols)\n  for k = 1, nc do G[CK[k]] = cvals[k] end\n"
"""``run``'s signature and the common globals set, for the drivers that loop over field lists."""


def _inline_function(
    inline: InlineReturn, common_fields: tuple[str, ...], item_fields: tuple[str, ...], nret: int
) -> str:
    """``fast``: the item loop with ``inline``'s expressions in it, the fields as locals.

    Every local of its own is named with ``INLINE_PREFIX`` (no field inlined is), so a
    field's local shadows none of them. An item field wins over a common field of the
    same name, and the last of a repeated field wins, as with the general loop's globals.
    """
    p = INLINE_PREFIX
    params = _run_params(len(common_fields), len(item_fields), p)
    slots = field_slots(common_fields, item_fields)
    items = {name: k + 1 for name, k in slots[0].items() if name in inline.fields}
    common = {name: k + 1 for name, k in slots[1].items() if name in inline.fields}
    outs = [f"{p}o{j}" for j in range(1, nret + 1)]
    rets = [f"{p}r{j}" for j in range(1, nret + 1)]
    # No constant 0 of its own: Lua 5.1 keeps one constant for 0 and -0 in a function,
    # so a -0 literal among the expressions would turn into 0 (the script's function
    # holds its own constants). Zero is an upvalue here.
    lines = [f"local {p}zero = 0\nlocal function fast({', '.join(params)})\n"]
    lines.append(f"  local {p}z, {p}nz = nil, {p}zero\n")
    lines.append(f"  local {', '.join(outs)} = {', '.join('{}' for _ in outs)}\n")
    lines.extend(f"  local {name} = {p}cv{k}\n" for name, k in common.items())
    lines.append(f"  for {p}i = 1, {p}n do\n")
    lines.extend(f"    local {name} = {p}c{k}[{p}i]\n" for name, k in items.items())
    lines.append(f"    local {', '.join(rets)} = {inline.expressions}\n")
    for j, (out, ret) in enumerate(zip(outs, rets, strict=True)):
        at = f"({p}i - 1) * {nret}" + (f" + {j}" if j else "")
        lines.append("    " + _negz(ret, at, f"{p}z", f"{p}nz", f"{p}zero"))
        lines.append(f"    {out}[{p}i] = {ret}\n")
    lines.append(f"  end\n  return {p}nz, {p}z, {', '.join(outs)}\nend\n")
    return "".join(lines)


def _unrolled_item(
    common_fields: tuple[str, ...],
    item_fields: tuple[str, ...],
    nret: int,
    inline: InlineReturn | None,
) -> str:
    nc, ni = len(common_fields), len(item_fields)
    if inline is not None and nret:
        fast = _inline_function(inline, common_fields, item_fields, nret)
        args = ", ".join(_run_params(nc, ni))
        got = ", ".join(["nz", "z"] + [f"o{j}" for j in range(1, nret + 1)])
        first = f"  local ok, {got} = pcall(fast, {args})\n  if ok then return {got} end\n"
        lines = _unrolled_head(nc, ni, fast, first)
    else:
        lines = _unrolled_head(nc, ni)
    lines.append("  local fn = G[fname]\n  local z, nz = nil, 0\n")
    if nret:
        lines.append(f"  local {_names('o', nret)} = {', '.join('{}' for _ in range(nret))}\n")
    lines.append("  for i = 1, n do\n    where = i\n")
    lines.extend(f"    G[K{k}] = c{k}[i]\n" for k in range(1, ni + 1))
    if nret:
        lines.append(f"    local {_names('r', nret)} = fn()\n")
        for j in range(1, nret + 1):
            lines.append("    " + _negz(f"r{j}", f"(i - 1) * nret + {j - 1}"))
            lines.append(f"    o{j}[i] = r{j}\n")
    else:
        lines.append("    fn()\n")
    lines.append("  end\n  reset()\n")
    lines.append(_unrolled_return("o", nret))
    return "".join(lines)


def _looped_item() -> str:
    return _LOOPED_HEAD + (
        "  local fn = G[fname]\n  local z, nz = nil, 0\n"
        "  local outs = {}\n  for j = 1, nret do outs[j] = {} end\n"
        "  for i = 1, n do\n    where = i\n"
        "    for k = 1, ni do G[IK[k]] = cols[k][i] end\n"
        "    local r = {fn()}\n"
        "    for j = 1, nret do\n      local v = r[j]\n"
        "      " + _negz("v", "(i - 1) * nret + j - 1") + "      outs[j][i] = v\n    end\n"
        "  end\n  reset()\n  return nz, z, outs\nend\n"
    )


def _unrolled_common(nc: int, ni: int, nret: int) -> str:
    lines = _unrolled_head(nc, ni)
    lines.extend(f"  G[K{k}] = c{k}\n" for k in range(1, ni + 1))
    lines.append("  where = 1\n")
    if nret:
        lines.append(f"  local {_names('r', nret)} = G[fname]()\n")
    else:
        lines.append("  G[fname]()\n")
    lines.append("  reset()\n  local z, nz = nil, 0\n")
    for j in range(1, nret + 1):
        lines.append("  " + _negz(f"r{j}", str(j - 1)))
    lines.append(_unrolled_return("r", nret))
    return "".join(lines)


def _looped_common() -> str:
    return _LOOPED_HEAD + (
        "  for k = 1, ni do G[IK[k]] = cols[k] end\n"
        "  where = 1\n  local r = {G[fname]()}\n  reset()\n"
        "  local z, nz = nil, 0\n"
        "  for j = 1, nret do\n    local v = r[j]\n"
        "    " + _negz("v", "j - 1") + "  end\n"
        "  return nz, z, r\nend\n"
    )


def driver_source(
    item_mode: bool,
    common_fields: tuple[str, ...],
    item_fields: tuple[str, ...],
    nret: int,
    *,
    unroll: bool,
    inline: InlineReturn | None = None,
) -> str:
    """The Lua driver chunk for these fields (``unroll``: one local per field; ``inline``:
    the script recognised by ``_expression``, evaluated in an inline item loop first)."""
    nc, ni = len(common_fields), len(item_fields)
    if item_mode:
        if unroll:
            body = _unrolled_item(common_fields, item_fields, nret, inline)
        else:
            body = _looped_item()
    else:
        body = _unrolled_common(nc, ni, nret) if unroll else _looped_common()
    return _PRELUDE + body + _RETURN
