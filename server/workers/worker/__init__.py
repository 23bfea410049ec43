"""A worker process of ``--workers N`` (and a trial build), see ``server/workers/__init__.py``."""

from ._main import trial_main as trial_main
from ._main import worker_main as worker_main

__all__ = ["trial_main", "worker_main"]
