"""``LoopThread``: one asyncio event loop on a daemon thread, called from sync code with deadlines.

nats-py is asyncio; the fleet store's methods are synchronous and may be
called from any thread. The store owns one ``LoopThread``; its methods
submit coroutines to it and wait for their result at most ``timeout``
seconds.

Guarantees:
- Every coroutine runs on the loop's own thread; :meth:`LoopThread.call`
  from that thread is refused (it would wait for itself).
- :meth:`LoopThread.call` returns or raises within its ``timeout`` (plus
  the time to hand over): on timeout the coroutine is cancelled and
  :class:`TimeoutError` is raised; nothing of it runs after its cancellation
  completes.
- :meth:`LoopThread.stop` cancels what still runs, stops the loop and joins
  its thread (bounded).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop on a daemon thread named ``name``."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; its future."""
        if threading.current_thread() is self._thread or self.loop.is_closed():
            coro.close()
            raise RuntimeError("LoopThread: closed, or called from its own thread (a deadlock)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop; its result within ``timeout`` s, else :class:`TimeoutError`."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g}s") from None

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel every task, stop the loop and join its thread (at most ``timeout`` s)."""
        if self.loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=timeout) if tasks else None

        if self._thread.is_alive():
            with contextlib.suppress(TimeoutError):
                self.call(cancel_all(), timeout + 1)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
