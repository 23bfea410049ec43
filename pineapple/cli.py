"""The ``pineapple`` command line (filled in by the server, DSL and codegen work)."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pineapple`` console script."""
    args = sys.argv[1:] if argv is None else argv
    print(f"pineapple: no commands yet ({' '.join(args)})", file=sys.stderr)
    return 2
