"""``BuildError``: why a snapshot could not be built, and at which step.

Its text is bounded where it is made (``pineapple/_error_text.py``): a config
can make an error as long as itself (a 1 MB name quoted back), and that text
goes into logs, HTTP answers and, with ``--workers N``, the store's manifest
and the control channel, which have caps of their own.
"""

from __future__ import annotations

from typing import Any, Literal

from pineapple import PineappleError
from pineapple._error_text import MAX_ERROR_BYTES, capped

__all__ = ["BuildError", "BuildStep", "CheckError"]

BuildStep = Literal["read", "plugins", "engine", "resources", "start", "deps", "replay"]


class BuildError(PineappleError):
    """A snapshot could not be built; ``step`` says where, the message says why.

    ``reason`` is at most ``MAX_ERROR_BYTES`` (cut, saying how much more there was);
    ``report``: what a refused warm-up replay found (step ``replay``, ``server/_replay.py``).
    """

    def __init__(self, step: BuildStep, message: str, report: dict[str, Any] | None = None) -> None:
        reason = capped(message)
        super().__init__(f"{step}: {reason}")
        self.step: BuildStep = step
        self.reason = reason
        self.report = report


class CheckError(BuildError):
    """Several steps of ``check`` failed; ``errors`` holds each, in step order.

    The joined reason is bounded like any other, each step given an equal share
    of it, so every failed step shows (each of ``errors`` keeps its own reason).
    """

    def __init__(self, errors: list[BuildError]) -> None:
        share = MAX_ERROR_BYTES // len(errors) - 16  # room for "[step] " and "; "
        joined = "; ".join(f"[{e.step}] {capped(e.reason, share)}" for e in errors)
        super().__init__(errors[0].step, joined)
        self.errors = errors
