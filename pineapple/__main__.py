"""``python -m pineapple``: the ``pineapple`` command (``pineapple.cli``)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
