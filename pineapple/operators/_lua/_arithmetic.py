"""Arithmetic of numbers, column by column: a recognised script answered without Lua.

A script recognised by ``_expression`` whose expressions hold nothing but
input fields, decimal number literals, ``+``, ``-``, ``*``, ``/``, unary
minus and parentheses (``return item_price * 0.9``) is a sum of IEEE double
operations. Where every value it reads is a number, this module computes it
over whole columns, in the engine's compiled core, with the results Lua
would give:

- a value goes in as Lua takes it: a ``float`` as it is, an ``int`` as the
  nearest double (lupa's C cast, as ``float(v)``);
- ``+ - * /`` and unary minus are the same double operations as Lua's VM
  (Python's float operators are C's); a literal is read as Lua reads it
  (``strtod`` and ``float()`` both round correctly), and constants Lua folds
  at compile time are the same operations done earlier;
- a result comes back as lupa hands a Lua number over, and the driver
  mends: an ``int`` when integral and within 64 bits, negative zero as
  ``-0.0``, else a ``float``.

Anything else is left to Lua (:meth:`Arithmetic.columns` answers None): a
value that is not a number (a missing field, a string Lua would coerce, a
bool), an ``int`` beyond 64 bits, a division by zero (Python raises where
Lua gives an infinity or a NaN), or a script whose constants hold a zero (Lua
5.1 keeps one constant for 0 and -0 in a function, so ``-0.0`` there may read
as ``0``). Bounded: a request costs one pass per operator of the expressions
over its items (the item count is the request's bound); parsing is one pass
over the script's tokens, once per operator.
"""

from __future__ import annotations

from math import copysign
from typing import Any, Final

from ._expression import field_slots

__all__ = ["Arithmetic", "arithmetic"]

_LITERAL: Final = 0
_ITEM: Final = 1
_COMMON: Final = 2
_ADD: Final = 3
_SUB: Final = 4
_MUL: Final = 5
_DIV: Final = 6
_NEG: Final = 7

_BINARY = {"+": _ADD, "-": _SUB, "*": _MUL, "/": _DIV}
_LEVELS = (("+", "-"), ("*", "/"))
"""The binary operators by precedence, loosest first (Lua 5.1's order for these)."""
_INT_BOUND: Final = 9.223372036854775808e18
"""2**63: lupa hands a Lua number over as an ``int`` when integral and within ±2**63."""


class _Node:
    """One node of an expression: a literal, a field, or an operator over nodes."""

    def __init__(
        self,
        kind: int,
        value: float = 0.0,
        index: int = 0,
        left: _Node | None = None,
        right: _Node | None = None,
    ) -> None:
        self.kind = kind
        self.value = value
        self.index = index
        self.left = left
        self.right = right
        self.constant: bool = kind == _LITERAL or (
            left is not None and left.constant and (right is None or right.constant)
        )
        self.varies: bool = kind == _ITEM or (
            left is not None and (left.varies or (right is not None and right.varies))
        )


class _Parser:
    """Recursive descent over the tokens (Lua 5.1's precedence for these operators)."""

    def __init__(
        self, tokens: tuple[tuple[str, str], ...], items: dict[str, int], common: dict[str, int]
    ) -> None:
        self.tokens = tokens
        self.at = 0
        self.items = items
        self.common = common
        self.zero = False
        """A constant (a literal or a folded sub-expression) is zero: not answered here."""

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def expressions(self) -> list[_Node] | None:
        found: list[_Node] = []
        while True:  # bounded: every round consumes tokens
            node = self.sum()
            if node is None:
                return None
            found.append(node)
            if self.peek() != ",":
                break
            self.at += 1
        return found if self.at == len(self.tokens) and not self.zero else None

    def sum(self, level: int = 0) -> _Node | None:
        """Operators of ``_LEVELS[level]`` and tighter, left-associative."""
        if level == len(_LEVELS):
            return self.unary()
        left = self.sum(level + 1)
        while left is not None and self.peek() in _LEVELS[level]:
            op = _BINARY[self.peek()]
            self.at += 1
            left = self.folded(op, left, self.sum(level + 1))
        return left

    def unary(self) -> _Node | None:
        if self.peek() == "-":
            self.at += 1
            operand = self.unary()
            return None if operand is None else self.folded(_NEG, operand, None)
        return self.primary()

    def primary(self) -> _Node | None:
        if self.at >= len(self.tokens):
            return None
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "number":
            if "x" in text or "X" in text:
                return None  # hexadecimal: Lua reads it with strtoul
            value = float(text)
            self.zero = self.zero or value == 0.0
            return _Node(_LITERAL, value)
        if kind == "name":
            if text in self.items:
                return _Node(_ITEM, index=self.items[text])
            if text in self.common:
                return _Node(_COMMON, index=self.common[text])
            return None
        if text == "(":
            node = self.sum()
            if node is None or self.peek() != ")":
                return None
            self.at += 1
            return node
        return None

    def folded(self, kind: int, left: _Node, right: _Node | None) -> _Node | None:
        """The operator's node; when Lua would fold it into a constant, note a zero."""
        if right is None and kind != _NEG:
            return None
        node = _Node(kind, left=left, right=right)
        if node.constant:
            try:
                value = _value(node, 0, [], [])
            except ZeroDivisionError:
                self.zero = True  # Lua does not fold it: a division by zero each time
                return node
            if value == 0.0:
                self.zero = True
            elif value == value:
                node = _Node(_LITERAL, value)
        return node


class _NotNumbers(Exception):
    """A value read is no number Lua takes as it is: Lua must answer."""


class Arithmetic:
    """A recognised script's expressions, answered over columns (see the module)."""

    def __init__(self, expressions: list[_Node]) -> None:
        self._expressions = expressions

    def columns(
        self, n: int, common: list[Any], columns: list[list[Any]]
    ) -> list[list[Any]] | None:
        """One result column per expression for ``n`` items, or None: Lua must answer.

        ``common`` and ``columns`` are the operator's common and item input values, in
        its field order. One pass per expression, each item's value computed in
        doubles and handed over once.
        """
        results: list[list[Any]] = []
        try:
            for node in self._expressions:
                out: list[Any] = []
                if node.varies:
                    for i in range(n):
                        out.append(_answer(_value(node, i, common, columns)))
                else:
                    out = [_answer(_value(node, 0, common, columns))] * n
                results.append(out)
        except (_NotNumbers, ZeroDivisionError):
            return None
        return results


def arithmetic(
    tokens: tuple[tuple[str, str], ...],
    common_fields: tuple[str, ...],
    item_fields: tuple[str, ...],
) -> Arithmetic | None:
    """The expressions of ``tokens`` (the script's after ``return``) as :class:`Arithmetic`,
    or None outside its language. An item field wins over a common field of the same
    name, and the last of a repeated field wins, as with the Lua driver's globals."""
    items, common = field_slots(common_fields, item_fields)
    found = _Parser(tokens, items, common).expressions()
    return None if found is None else Arithmetic(found)


def _read(v: Any) -> float:
    """``v`` as Lua holds it: a ``float`` as it is, an ``int`` within 64 bits as the
    nearest double (lupa's C cast); anything else raises :class:`_NotNumbers`."""
    if type(v) is float:
        return float(v)
    if type(v) is int:
        i = int(v)
        if -(2**63) <= i < 2**63:
            return float(i)
    raise _NotNumbers()


def _value(node: _Node, i: int, common: list[Any], columns: list[list[Any]]) -> float:
    """``node``'s value for item ``i``, in doubles (a division by zero raises
    ``ZeroDivisionError``, where Lua would give an infinity or a NaN)."""
    kind = node.kind
    if kind == _LITERAL:
        return node.value
    if kind == _ITEM:
        return _read(columns[node.index][i])
    if kind == _COMMON:
        return _read(common[node.index])
    left = node.left
    assert left is not None
    a = _value(left, i, common, columns)
    if kind == _NEG:
        return -a
    right = node.right
    assert right is not None
    b = _value(right, i, common, columns)
    if kind == _ADD:
        return a + b
    if kind == _SUB:
        return a - b
    if kind == _MUL:
        return a * b
    return a / b


def _answer(r: float) -> Any:
    """A Lua number as the operator answers it: lupa's ``int`` when integral within
    ±2**63, negative zero kept (the driver's mend), else the ``float``."""
    if -_INT_BOUND <= r < _INT_BOUND:
        whole = int(r)
        if float(whole) == r and (whole != 0 or copysign(1.0, r) > 0):
            return whole
    return r
