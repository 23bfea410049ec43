"""``GET /dag``'s text: rendered off the event loop, once per snapshot and question.

Rendering costs the graph's transitive reduction (``pineapple.engine._render``:
a big-integer OR per edge, about 20 ms for 200 operators and 19,900 edges,
bounded by the config's size), so a large config rendered on the event loop
would stall every request of the process, and clients looping on ``/dag``
would pay it again and again. :class:`DagView` renders in a worker thread,
one render at a time per process, and keeps the texts of the serving
snapshot, so a repeated question is answered from memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import anyio
import anyio.to_thread

__all__ = ["MAX_CACHED_TEXTS", "DagKey", "DagView"]

MAX_CACHED_TEXTS = 8
"""Texts kept per process (by format, collapse level and group), all of one snapshot."""

DagKey = tuple[str, int, str | None]
"""What is asked: format, collapse level, group (None: the default group)."""


class DagView:
    """The ``/dag`` texts of the serving snapshot.

    Guarantees (every field is touched only on the event loop, under ``_lock``):

    - One render at a time: ``text`` holds ``_lock`` (an ``anyio.Lock``, waited
      for on the event loop, so a waiting request holds no thread) from its
      cache lookup until the rendered text is stored; so a question asked by
      many clients at once is rendered once, and ``/dag`` never uses more than
      one worker thread.
    - The cache holds texts of one snapshot only (``_snapshot``: its serial and
      its engine's id): a text asked of another snapshot empties it first, so a
      retired engine's text is never served and never kept past the next ask.
    - At most :data:`MAX_CACHED_TEXTS` texts are kept (least recently used go
      first), each the size of its graph's rendering.
    - A render that raises (unknown group or format) stores nothing.
    """

    def __init__(self, max_texts: int = MAX_CACHED_TEXTS) -> None:
        self._max = max_texts
        self._lock = anyio.Lock()
        self._snapshot: tuple[int, int] | None = None
        self._texts: OrderedDict[DagKey, str] = OrderedDict()
        self.renders = 0
        """Renders run so far (cache misses that completed)."""

    async def text(self, snapshot: tuple[int, int], key: DagKey, render: Callable[[], str]) -> str:
        """The text ``render()`` gives for ``key`` in ``snapshot`` (its serial and engine id).

        ``render`` runs on a worker thread when the text is not kept; the
        caller holds the snapshot borrowed until this returns.
        """
        async with self._lock:
            if self._snapshot != snapshot:
                self._snapshot = snapshot
                self._texts.clear()
            cached = self._texts.get(key)
            if cached is not None:
                self._texts.move_to_end(key)
                return cached
            text = await anyio.to_thread.run_sync(render)
            self.renders += 1
            self._texts[key] = text
            while len(self._texts) > self._max:  # bounded: at most one over
                self._texts.popitem(last=False)
            return text
