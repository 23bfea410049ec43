"""Writing Python source that is already in ``ruff format`` style.

Codegen must not depend on a formatter being installed, so it writes the
style itself: a bracketed construct stays on one line when it fits in
:data:`LINE_WIDTH`, otherwise it is exploded one element per line with a
trailing comma (which ruff keeps as it is: the "magic trailing comma").
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field

__all__ = ["LINE_WIDTH", "Group", "Node", "docstring", "literal", "render", "string"]

LINE_WIDTH = 100
_INDENT = "    "


@dataclass(frozen=True)
class Group:
    """``open`` item, item, ... ``close``: a call, a signature or a collection literal.

    Each item is ``(prefix, node)``; the prefix (``"key="``, ``'"key": '``)
    is written before the item's node.
    """

    open: str
    items: list[tuple[str, Node]] = field(default_factory=list)
    close: str = ")"


Node = str | Group
"""A node is plain text or a :class:`Group`."""


def _flat(node: Node) -> str:
    if isinstance(node, str):
        return node
    inner = ", ".join(prefix + _flat(item) for prefix, item in node.items)
    return f"{node.open}{inner}{node.close}"


def render(node: Node, indent: int, lead: str = "", tail: str = "") -> str:
    """``lead + node + tail`` at ``indent`` levels, without a final newline.

    The first line is not indented (the caller has written the indentation).
    """
    flat = lead + _flat(node) + tail
    if isinstance(node, str) or not node.items or len(_INDENT * indent) + len(flat) <= LINE_WIDTH:
        return flat
    pad = _INDENT * (indent + 1)
    lines = [lead + node.open]
    for prefix, item in node.items:
        lines.append(pad + render(item, indent + 1, prefix, ","))
    lines.append(_INDENT * indent + node.close + tail)
    return "\n".join(lines)


def literal(value: object) -> Node:
    """A JSON-like value (None, bool, int, float, str, list, dict) as a Python literal node."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write the non-finite float {value!r} as a literal")
        return repr(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, list | tuple):
        return Group("[", [("", literal(v)) for v in value], "]")
    if isinstance(value, dict):
        items: list[tuple[str, Node]] = []
        for key, item in value.items():
            items.append((f"{string(str(key))}: ", literal(item)))
        return Group("{", items, "}")
    raise ValueError(f"cannot write a {type(value).__name__} as a literal")


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def string(text: str) -> str:
    """``text`` as a string literal, quoted as ruff quotes it.

    Double quotes, unless the text holds more double than single quotes.
    """
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == quote:
            out.append("\\" + ch)
        elif not ch.isprintable():
            out.append(repr(ch)[1:-1])
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    return text


def docstring(paragraphs: list[str], indent: int) -> str:
    """A docstring at ``indent`` levels (with leading indentation and a final newline).

    The first paragraph is the summary. Paragraphs are wrapped; a paragraph
    whose lines start with spaces (an ``Args:`` body) keeps its line breaks
    and wraps each line with a hanging indent.
    """
    pad = _INDENT * indent
    width = min(88, LINE_WIDTH - len(pad))
    blocks: list[str] = []
    for para in paragraphs:
        lines: list[str] = []
        for raw in para.splitlines() or [""]:
            stripped = raw.lstrip(" ")
            lead = raw[: len(raw) - len(stripped)]
            wrapped = textwrap.wrap(
                _escape(" ".join(stripped.split())),
                width=width - len(lead),
                subsequent_indent="    " if lead else "",
                break_long_words=False,
                break_on_hyphens=False,
            )
            lines += [lead + w for w in wrapped] or [""]
        blocks.append("\n".join(lines))
    text = "\n\n".join(b for b in blocks if b.strip()) or "(no description)"
    body = text.splitlines()
    if len(body) == 1 and len(pad) + len(body[0]) + 6 <= LINE_WIDTH:
        return f'{pad}"""{body[0]}"""\n'
    out = [f'{pad}"""{body[0]}']
    out += [f"{pad}{line}" if line else "" for line in body[1:]]
    out.append(f'{pad}"""')
    return "\n".join(out) + "\n"
