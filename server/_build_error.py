"""``BuildError``: why a snapshot could not be built, and at which step."""

from __future__ import annotations

from typing import Literal

from pineapple import PineappleError

__all__ = ["BuildError", "BuildStep", "CheckError"]

BuildStep = Literal["read", "plugins", "engine", "resources", "start", "deps"]


class BuildError(PineappleError):
    """A snapshot could not be built; ``step`` says where, the message says why."""

    def __init__(self, step: BuildStep, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step: BuildStep = step
        self.reason = message


class CheckError(BuildError):
    """Several steps of ``check`` failed; ``errors`` holds each, in step order."""

    def __init__(self, errors: list[BuildError]) -> None:
        super().__init__(errors[0].step, "; ".join(f"[{e.step}] {e.reason}" for e in errors))
        self.errors = errors
