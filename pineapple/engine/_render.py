"""``render_dag``: an engine's operator graph as Graphviz DOT or Mermaid text.

The same picture as the Go engine's ``RenderDAG``: one node per operator
(coloured by kind), the field-hazard edges after transitive reduction (an
edge implied by a longer path is left out), and, with ``collapse=N``, the
operators of each sub-flow folded into one node (by the first ``N``
``/``-separated parts of the sub-flow's name; the sub-flow is the
operator's direct parent, as in Go).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .._errors import ValidationError
from ._dag import Graph

__all__ = ["DAG_FORMATS", "UnknownFormatError", "reduced_edges", "render_dag"]

DAG_FORMATS = ("dot", "mermaid")

_KINDS = ("recall", "transform", "filter", "merge", "reorder", "observe")
_DOT_COLORS = {
    "recall": "#E8F5E9",
    "transform": "#E3F2FD",
    "filter": "#FFF3E0",
    "merge": "#F3E5F5",
    "reorder": "#FFFDE7",
    "observe": "#F5F5F5",
}
_MERMAID_STROKES = {
    "recall": "#4CAF50",
    "transform": "#2196F3",
    "filter": "#FF9800",
    "merge": "#9C27B0",
    "reorder": "#FFC107",
    "observe": "#9E9E9E",
}
_DOT_HEAD = (
    "digraph pipeline {\n    rankdir=TB;\n"
    '    node [shape=box, style=filled, fontname="Helvetica"];\n\n'
)
_MERMAID_ID = re.compile(r"[^a-zA-Z0-9_]")  # one character class: linear


class UnknownFormatError(ValidationError):
    """A DAG format other than ``dot`` or ``mermaid`` was asked for."""

    def __init__(self, fmt: str) -> None:
        super().__init__(f'unsupported DAG format "{fmt}" (use "dot" or "mermaid")')
        self.format = fmt


def reduced_edges(graph: Graph) -> list[tuple[int, int]]:
    """The transitive reduction: edges ``u -> v`` with no other path from ``u`` to ``v``.

    In the Go engine's order (by ``u``, then the order the edges were found).
    Every edge of a :class:`Graph` points to a later node (``_dag``), so the
    sequence order is a topological order: walking it backwards, each node's
    descendants are one integer used as a bitset, the union of its
    successors' bits and their descendants. An edge ``u -> v`` is implied by
    a longer path exactly when ``v`` descends from another successor of
    ``u``, that is from any (``v`` does not descend from itself). Bounded:
    one big-integer OR of at most ``n`` bits per edge, twice (``n``: the
    nodes; about 20 ms for 200 nodes and 19,900 edges).
    """
    succ = graph.succ_order
    n = len(succ)
    below = [0] * n  # below[u]: the nodes reachable from u by one edge or more, as bits
    beyond = [0] * n  # beyond[u]: the nodes reachable from u by two edges or more
    for u in range(n - 1, -1, -1):
        far = 0
        for v in succ[u]:
            if v <= u:
                raise ValueError(f"graph edge {u} -> {v} does not point to a later operator")
            far |= below[v]
        near = 0
        for v in succ[u]:
            near |= 1 << v
        below[u], beyond[u] = near | far, far
    return [(u, v) for u in range(n) for v in succ[u] if not beyond[u] >> v & 1]


@dataclass(frozen=True)
class _Node:
    label: str
    kind: str  # operator kind, "" for a folded sub-flow


def render_dag(
    graph: Graph,
    kinds: list[str],
    parents: dict[str, str],
    fmt: str = "dot",
    collapse: int = 0,
) -> str:
    """The text of ``graph`` (``kinds``: each node's operator kind; ``parents``: each
    operator's sub-flow, "" at the top). Raises :class:`UnknownFormatError`."""
    if fmt not in DAG_FORMATS:
        raise UnknownFormatError(fmt)
    edges = reduced_edges(graph)
    if collapse > 0:
        nodes, edges = _collapsed(graph, kinds, parents, edges, collapse)
        ids = [f"g{i}" for i in range(len(nodes))]
        return (
            _dot(nodes, ids, edges, folded=True)
            if fmt == "dot"
            else _mermaid(nodes, ids, edges, folded=True)
        )
    nodes = [_Node(name, kind) for name, kind in zip(graph.names, kinds, strict=True)]
    if fmt == "dot":
        return _dot(nodes, list(graph.names), edges, folded=False)
    return _mermaid(nodes, [_MERMAID_ID.sub("_", n) for n in graph.names], edges, folded=False)


def _collapse_key(sub_flow: str, level: int) -> str:
    if not sub_flow:
        return ""
    return "/".join(sub_flow.split("/")[:level])


def _collapsed(
    graph: Graph,
    kinds: list[str],
    parents: dict[str, str],
    edges: list[tuple[int, int]],
    level: int,
) -> tuple[list[_Node], list[tuple[int, int]]]:
    groups: list[_Node] = []
    index: dict[str, int] = {}
    group_of: list[int] = []
    for name, kind in zip(graph.names, kinds, strict=True):
        sub_flow = parents.get(name, "")
        key = _collapse_key(sub_flow, level) or "\x00" + name
        if key not in index:
            index[key] = len(groups)
            groups.append(
                _Node(_collapse_key(sub_flow, level), "") if sub_flow else _Node(name, kind)
            )
        group_of.append(index[key])
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for u, v in edges:
        pair = (group_of[u], group_of[v])
        if pair[0] != pair[1] and pair not in seen:
            seen.add(pair)
            out.append(pair)
    return groups, out


def _q(text: str) -> str:
    """A double-quoted string as Go's ``%q`` writes it (for the ASCII names configs use)."""
    return json.dumps(text, ensure_ascii=False)


def _dot(nodes: list[_Node], ids: list[str], edges: list[tuple[int, int]], folded: bool) -> str:
    lines = [_DOT_HEAD]
    for node, node_id in zip(nodes, ids, strict=True):
        if folded:
            color = "#BBDEFB" if not node.kind else _DOT_COLORS.get(node.kind, "#E0E0E0")
        else:
            color = _DOT_COLORS.get(node.kind, "#FFFFFF")
        lines.append(f"    {_q(node_id)} [label={_q(node.label)}, fillcolor={_q(color)}];\n")
    lines.append("\n")
    for u, v in edges:
        lines.append(f"    {_q(ids[u])} -> {_q(ids[v])};\n")
    lines.append("}\n")
    return "".join(lines)


def _mermaid(nodes: list[_Node], ids: list[str], edges: list[tuple[int, int]], folded: bool) -> str:
    lines = ["graph TB\n"]
    for node, node_id in zip(nodes, ids, strict=True):
        cls = node.kind or ("subflow" if folded else "")
        lines.append(f'    {node_id}["{node.label}"]:::{cls}\n')
    lines.append("\n")
    for u, v in edges:
        lines.append(f"    {ids[u]} --> {ids[v]}\n")
    lines.append("\n")
    if folded:
        lines.append("    classDef subflow fill:#BBDEFB,stroke:#1976D2\n")
        lines.append("    classDef standalone fill:#E0E0E0,stroke:#616161\n")
    for kind in _KINDS:
        lines.append(
            f"    classDef {kind} fill:{_DOT_COLORS[kind]},stroke:{_MERMAID_STROKES[kind]}\n"
        )
    return "".join(lines)
