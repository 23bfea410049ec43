"""Reference-counted resource values and the handles that borrow them.

Two implementations share this contract: the pure-Python classes below and
their compiled twins in ``_cref.c`` (used when the extension is built; about
twice as fast on the borrow path). Guarantees (the borrow path):
- A :class:`RefValue` is born with one *baseline* reference, held by whoever
  publishes it (a Manager slot). ``acquire()`` adds a reference only while the
  count is positive and reports failure otherwise, so a value whose count has
  reached zero is never resurrected: a reader that lost the race re-reads the
  slot and borrows the newer value.
- The check-and-increment in ``acquire`` and the decrement-and-test in
  ``release`` each happen under the value's own lock. That is what keeps them
  atomic without the GIL: on free-threaded CPython ``self._refs += 1`` is a
  read-modify-write that two threads can interleave, so we never rely on it
  being atomic. The lock is per value and held for a few bytecodes; readers of
  different resources never contend, and readers of one resource contend only
  for that span.
- The release that takes the count to zero hands the value to the closer
  thread exactly once (only one release can observe the transition 1 -> 0,
  since the count never rises again from 0). ``close()`` therefore runs once,
  after the last borrower has released, and never on the reader's thread.
- A :class:`ResourceHandle` releases its reference exactly once; a second
  ``release()`` or reading ``.value`` afterwards raises
  :class:`HandleReleasedError`. A handle belongs to the borrowing thread: do
  not share one handle between threads (borrow one handle per thread instead).
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._errors import HandleReleasedError
from ._closer import schedule_close

__all__ = ["IMPLEMENTATION", "PyRefValue", "PyResourceHandle", "RefValue", "ResourceHandle"]


class PyRefValue:
    """A value plus a reference count; the last release schedules ``close()``."""

    __slots__ = ("_lock", "_refs", "label", "value")

    def __init__(self, value: Any, label: str = "") -> None:
        self.value = value
        self.label = label
        self._refs = 1  # the baseline reference of the publisher
        self._lock = threading.Lock()

    @property
    def refs(self) -> int:
        """The current count (for tests and status; racy by nature)."""
        return self._refs

    def acquire(self) -> bool:
        """Add a reference if the value is still live; False once it is retiring."""
        with self._lock:
            if self._refs <= 0:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        """Drop one reference; the last one schedules ``value.close()``."""
        with self._lock:
            self._refs -= 1
            remaining = self._refs
        if remaining == 0:
            schedule_close(self.label, self.value)
        elif remaining < 0:  # pragma: no cover - a bug in a caller, never in readers
            raise HandleReleasedError(f"resource {self.label!r} released more times than acquired")

    def borrow(self) -> PyResourceHandle | None:
        """A handle holding one new reference, or None if the value is retiring."""
        return PyResourceHandle(self) if self.acquire() else None

    def __repr__(self) -> str:
        return f"RefValue({self.label!r}, refs={self._refs})"


class PyResourceHandle:
    """A borrowed reference to a resource value; release it exactly once.

    Use it as a context manager so that release cannot be forgotten::

        h = rm.get("features")
        if h is not None:
            with h as table:
                ...  # do not keep `table` past the with-block
    """

    __slots__ = ("_ref",)

    def __init__(self, ref: PyRefValue) -> None:
        self._ref: PyRefValue | None = ref

    @property
    def value(self) -> Any:
        """The borrowed value; raises :class:`HandleReleasedError` after release."""
        ref = self._ref
        if ref is None:
            raise HandleReleasedError("resource handle used after release")
        return ref.value

    @property
    def released(self) -> bool:
        """True once :meth:`release` has been called."""
        return self._ref is None

    def release(self) -> None:
        """Return the reference; a second call raises :class:`HandleReleasedError`."""
        ref = self._ref
        if ref is None:
            raise HandleReleasedError("resource handle released twice")
        self._ref = None
        ref.release()

    def __enter__(self) -> Any:
        return self.value

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._ref is None else repr(self._ref.label)
        return f"ResourceHandle({state})"


# The compiled twins (``_cref.c``) have the same contract and are used when the
# extension was built; PINEAPPLE_PURE_PYTHON=1 forces the pure-Python classes.
# For type checking, the pure-Python classes are the nominal types.
if TYPE_CHECKING:
    RefValue = PyRefValue
    ResourceHandle = PyResourceHandle
    IMPLEMENTATION = "python"
else:
    try:
        if os.environ.get("PINEAPPLE_PURE_PYTHON") == "1":
            raise ImportError("pure Python requested")
        from . import _cref
    except ImportError:
        RefValue, ResourceHandle, IMPLEMENTATION = PyRefValue, PyResourceHandle, "python"
    else:
        _cref.configure(schedule_close, HandleReleasedError)
        RefValue, ResourceHandle, IMPLEMENTATION = _cref.RefValue, _cref.ResourceHandle, "c"
