"""The supervisor process of ``--workers N`` (see ``server/workers/__init__.py``)."""

from ._supervisor import run_supervisor as run_supervisor

__all__ = ["run_supervisor"]
