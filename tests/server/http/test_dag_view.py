"""``DagView``: ``/dag`` texts rendered off the loop, once per snapshot and question."""

from __future__ import annotations

import threading
from collections.abc import Callable

import anyio
import pytest

from server.http._dag_view import DagView

pytestmark = pytest.mark.timeout(60)


def test_a_question_asked_at_once_by_many_is_rendered_once_on_a_worker_thread() -> None:
    view = DagView()
    entered = threading.Event()
    go = threading.Event()
    threads: list[str] = []

    def render() -> str:
        threads.append(threading.current_thread().name)
        entered.set()
        assert go.wait(10.0)
        return "digraph {}"

    async def main() -> list[str]:
        texts: list[str] = []
        loop_thread = threading.current_thread().name

        async def ask() -> None:
            texts.append(await view.text((1, 7), ("dot", 0, None), render))

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(ask)
            # The render blocks on its thread while the loop still runs tasks.
            await anyio.to_thread.run_sync(entered.wait, 10.0)
            assert threads and threads[0] != loop_thread
            go.set()
        return texts

    assert anyio.run(main) == ["digraph {}"] * 5
    assert view.renders == 1 and len(threads) == 1


def test_another_snapshot_renders_again_and_the_texts_kept_are_bounded() -> None:
    view = DagView(max_texts=2)
    calls: list[str] = []

    def renderer(tag: str) -> Callable[[], str]:
        def render() -> str:
            calls.append(tag)
            return tag

        return render

    async def main() -> None:
        assert await view.text((1, 7), ("dot", 0, None), renderer("a")) == "a"
        assert await view.text((1, 7), ("dot", 0, None), renderer("unused")) == "a"
        assert await view.text((2, 8), ("dot", 0, None), renderer("b")) == "b"  # new snapshot
        assert await view.text((2, 8), ("dot", 1, None), renderer("c")) == "c"
        assert await view.text((2, 8), ("mermaid", 0, None), renderer("d")) == "d"
        # Only the last two are kept: the first of this snapshot is rendered again.
        assert await view.text((2, 8), ("dot", 0, None), renderer("e")) == "e"

    anyio.run(main)
    assert calls == ["a", "b", "c", "d", "e"]


def test_a_failed_render_keeps_nothing() -> None:
    view = DagView()
    calls: list[int] = []

    def fail() -> str:
        calls.append(1)
        raise LookupError("no such group")

    async def main() -> None:
        for _ in range(2):
            with pytest.raises(LookupError):
                await view.text((1, 7), ("dot", 0, "nope"), fail)

    anyio.run(main)
    assert len(calls) == 2 and view.renders == 0
