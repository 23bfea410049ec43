"""Bounded string patterns: ``string.find/match/gmatch/gsub`` under the time guard.

PUC Lua's pattern matcher is a backtracking C function: one call of
``string.find(string.rep("a", 30000), ".-.-.-.-.-b")`` runs for hours in C,
where the count hook that enforces the deadline never fires. This chunk
(``patterns.lua``), run in each Lua 5.1 runtime before the sandbox prelude, replaces the four
functions (and ``string.gfind``, lupa's alias of ``gmatch``) by Lua wrappers
that keep every C call small:

- **Estimate first.** A pattern is parsed once (cached per runtime) into its
  items. The cost of the C matcher on a subject of ``n`` bytes is at most
  ``starts * c`` steps, ``c`` built from the last item back: a fixed item adds
  its class length, ``?`` doubles what follows, ``*``/``+``/``-`` multiply it
  by (longest run + 1), ``%b`` and back-references add ``n``, and a tail
  that always succeeds (``x*``, ``x-``, ``x?``, captures) is scanned once per
  match instead of per start (``starts`` is 1 when anchored, else ``n + 1``).
  For each pattern the longest subject whose cost fits :data:`BUDGET` with
  runs of length ``n`` is computed once; a call on a shorter subject goes
  straight to C (a type check, a table lookup and a length compare). A
  longer subject gets a second look: the longest run of each quantified
  class is bounded by a linear C search for 9 (then 65) of it in a row.
- **Else match in Lua.** Patterns over budget, with more items than C may
  nest (:data:`MAX_C_ITEMS`: the C matcher recurses once per item and a
  300,000-item pattern overflows the C stack), or that can raise a pattern
  error (their message must name the caller's line, which a C call from
  here would not) run through a matcher written in Lua: Lua 5.1 semantics
  item for item (the same item order, greedy and lazy choices in C's
  order, captures, back-references, ``%b``, ``%f``, anchors, errors raised
  when the matcher reaches the item, as C does), with an explicit
  backtracking stack (no recursion limit). It runs under the count hook, so
  the deadline stops it like any Lua loop. Character classes are read from
  C itself (``gmatch`` over the 256 bytes), so locale classes agree.
  Run ends are found with an anchored C ``x*`` search (linear) and
  remembered per item, and a ``*``/``-`` right before the final ``$`` is
  decided at once: that keeps a trim (``^%s*(.-)%s*$``) linear.
- **Plain find** (``plain`` or no special characters) costs up to
  subject x needle bytes in C; over budget it runs in windows of
  ``BUDGET / #needle`` starts, one C call each.

Results and errors are those of the C functions (a differential test runs
both on random patterns). Known differences: a missing argument is
reported as "got nil" (C: "got no value"), and an error of a wrapper that
the caller tail-called names no line (C names the caller's). Only the Lua
5.1 backend gets this chunk; LuaJIT keeps its own C functions (and no bounds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["BUDGET", "MAX_C_ITEMS", "bound_patterns"]

BUDGET = 1 << 22
"""Matcher steps one C pattern call may take by the estimate (~7 ns each: under ~30 ms)."""

MAX_C_ITEMS = 1000
"""Pattern items above which the C matcher (one C frame per item) is never used."""

_SOURCE = (Path(__file__).with_name("patterns.lua")).read_text(encoding="utf-8")
"""The matcher and its wrappers, in Lua (``patterns.lua`` beside this module)."""


def bound_patterns(rt: Any, budget: int = BUDGET) -> None:
    """Replace the runtime's C pattern functions by their bounded wrappers (Lua 5.1 only).

    ``budget`` 0 sends every pattern through the Lua matcher (the tests' way to
    compare it with C).
    """
    rt.execute(_SOURCE, budget, MAX_C_ITEMS, name="=patterns")
