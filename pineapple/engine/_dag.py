"""The dependency graph between operators, from their declared fields.

Edges follow data hazards on each common field and each item field
(read-after-write, write-after-write, write-after-read), with the item set
itself tracked as the implicit field ``_row_set_``: recalls append to it
(additively: recalls do not order each other), filters/merges/reorders
mutate it, and every operator that touches item fields reads it. ``sources``
add explicit edges.

Every edge points from an earlier operator of the expanded sequence to a
later one, so the declaration order is always a valid execution order; the
engine runs operators in that order. The graph is kept for inspection
(``Engine.graph``) and tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ._config import OperatorConfig

__all__ = ["ROW_SET", "Graph", "NodeTraits", "build_graph"]

ROW_SET = "_row_set_"


@dataclass(frozen=True, slots=True)
class NodeTraits:
    """How an operator touches the item set (config flags OR'd with its class markers)."""

    consumes_row_set: bool = False
    mutates_row_set: bool = False
    additive_writes_row_set: bool = False


@dataclass
class Graph:
    """Operators (by sequence index) and their predecessor/successor sets."""

    names: list[str]
    preds: list[set[int]] = field(default_factory=list)
    succs: list[set[int]] = field(default_factory=list)
    succ_order: list[list[int]] = field(default_factory=list)
    """Each node's successors in the order their edges were found (the Go engine's order)."""

    def add_edge(self, src: int, dst: int) -> None:
        """``src`` must run before ``dst``."""
        if src != dst and dst not in self.succs[src]:
            self.succs[src].add(dst)
            self.preds[dst].add(src)
            self.succ_order[src].append(dst)

    def edges(self) -> list[tuple[str, str]]:
        """Every edge as ``(from, to)`` names, sorted by sequence position."""
        return [
            (self.names[a], self.names[b])
            for a in range(len(self.names))
            for b in sorted(self.succs[a])
        ]


@dataclass
class _Field:
    last_writer: int = -1
    additive: list[int] = field(default_factory=list)
    readers: list[int] = field(default_factory=list)


def build_graph(ops: Sequence[OperatorConfig], traits: Sequence[NodeTraits]) -> Graph:
    """The hazard graph of ``ops`` (in sequence order)."""
    n = len(ops)
    graph = Graph(
        [op.name for op in ops],
        [set() for _ in range(n)],
        [set() for _ in range(n)],
        [[] for _ in range(n)],
    )
    _hazards(graph, ops, traits, common=True)
    _hazards(graph, ops, traits, common=False)
    index = {op.name: i for i, op in enumerate(ops)}
    for i, op in enumerate(ops):
        for src in op.sources:
            if src in index:
                graph.add_edge(index[src], i)
    return graph


def _hazards(
    graph: Graph, ops: Sequence[OperatorConfig], traits: Sequence[NodeTraits], *, common: bool
) -> None:
    fields: dict[str, _Field] = {}
    for i, op in enumerate(ops):
        tr = traits[i]
        if common:
            reads = list(op.common_read_fields())
            writes = list(op.common_output)
            additive = False
        else:
            reads = list(op.item_input)
            writes = list(op.item_output)
            additive = tr.additive_writes_row_set
            if additive:
                writes.append(ROW_SET)
            if tr.consumes_row_set or (not additive and (reads or writes)):
                reads.append(ROW_SET)
        for name in reads:
            f = fields.setdefault(name, _Field())
            if f.last_writer >= 0:
                graph.add_edge(f.last_writer, i)
            for w in f.additive:
                graph.add_edge(w, i)
            f.readers.append(i)
        for name in writes:
            f = fields.setdefault(name, _Field())
            if f.last_writer >= 0:
                graph.add_edge(f.last_writer, i)
            if not additive:
                for w in f.additive:
                    graph.add_edge(w, i)
            for r in f.readers:
                graph.add_edge(r, i)
            if additive:
                f.additive.append(i)
            else:
                f.last_writer, f.additive, f.readers = i, [], []
        if not common and tr.mutates_row_set:
            f = fields.setdefault(ROW_SET, _Field())
            if f.last_writer >= 0:
                graph.add_edge(f.last_writer, i)
            for w in (*f.additive, *f.readers):
                graph.add_edge(w, i)
            f.last_writer, f.additive, f.readers = i, [], []
