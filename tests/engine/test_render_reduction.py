"""Issue 21, item 3: the DAG's transitive reduction is cheap and exact."""

from __future__ import annotations

import random
import time

import pytest

from pineapple.engine._dag import Graph
from pineapple.engine._render import reduced_edges

pytestmark = pytest.mark.timeout(120)


def _graph(n: int, edges: list[tuple[int, int]]) -> Graph:
    graph = Graph([f"op{i}" for i in range(n)], [set() for _ in range(n)],
                  [set() for _ in range(n)], [[] for _ in range(n)])  # fmt: skip
    for u, v in edges:
        graph.add_edge(u, v)
    return graph


def _oracle(graph: Graph) -> list[tuple[int, int]]:
    """Edges ``u -> v`` with no path ``u -> w -> ... -> v`` through another successor ``w``."""
    succ = graph.succ_order

    def reaches(src: int, dst: int) -> bool:
        stack, seen = [src], {src}
        while stack:  # bounded: each node is pushed once
            for nxt in succ[stack.pop()]:
                if nxt == dst:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    return [
        (u, v)
        for u in range(len(succ))
        for v in succ[u]
        if not any(reaches(w, v) for w in succ[u] if w != v)
    ]


@pytest.mark.parametrize("seed", range(40))
def test_the_reduction_is_the_oracles_in_its_order(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    density = rng.choice([0.05, 0.2, 0.5, 1.0])
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < density]
    rng.shuffle(pairs)  # the order edges are found is the order they are kept in
    graph = _graph(n, pairs)
    assert reduced_edges(graph) == _oracle(graph)


def test_the_complete_dag_of_400_operators_reduces_to_its_chain_quickly() -> None:
    # 79,800 edges. One search per edge (the old reduction) took 3.5 s for
    # 200 operators (19,900 edges) and grows with n^3: some 28 s here.
    n = 400
    graph = _graph(n, [(u, v) for u in range(n) for v in range(u + 1, n)])
    started = time.process_time()  # CPU time: what the reduction spends, however busy
    kept = reduced_edges(graph)
    took = time.process_time() - started
    assert kept == [(u, u + 1) for u in range(n - 1)]
    assert took < 3.0  # about 0.1 s on a quiet machine


def test_an_edge_to_an_earlier_operator_is_refused() -> None:
    graph = _graph(3, [(0, 1)])
    graph.succ_order[2].append(1)  # what build_graph never makes
    with pytest.raises(ValueError, match="2 -> 1"):
        reduced_edges(graph)
