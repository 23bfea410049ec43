"""Indenting compact JSON bytes as Go's ``json.Encoder.SetIndent("", "  ")`` does.

Working on the bytes (never re-parsing) keeps every number's text exactly
as written (Go's ``-0``, ``1e+21``, plain decimals up to 1e21).
"""

from __future__ import annotations

import re

__all__ = ["indent_json"]

# One token: a string (escapes included), one structural byte, or a run of
# scalar bytes. Each alternative starts with different bytes: linear time.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^"{}\[\],:\s]+|\s+')


def indent_json(compact: bytes, indent: bytes = b"  ") -> bytes:
    """``compact`` (valid JSON) with one member or element per line, Go's layout.

    Empty objects and arrays stay ``{}`` and ``[]``; ``": "`` after a key;
    no trailing newline. Linear in the input (one pass over its tokens).
    """
    out: list[bytes] = []
    depth = 0
    tokens = [m.group() for m in _TOKEN.finditer(compact) if not m.group().isspace()]
    n = len(tokens)
    # Bounded by the token count.
    for i, tok in enumerate(tokens):
        if tok in (b"{", b"["):
            closing = b"}" if tok == b"{" else b"]"
            if i + 1 < n and tokens[i + 1] == closing:
                out.append(tok)
                continue
            depth += 1
            out.append(tok + b"\n" + indent * depth)
        elif tok in (b"}", b"]"):
            opening = b"{" if tok == b"}" else b"["
            if i > 0 and tokens[i - 1] == opening:
                out.append(tok)
                continue
            depth -= 1
            out.append(b"\n" + indent * depth + tok)
        elif tok == b",":
            out.append(b",\n" + indent * depth)
        elif tok == b":":
            out.append(b": ")
        else:
            out.append(tok)
    return b"".join(out)
