"""Loading a flow from a Python source file (what ``pineapple compile`` does)."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

from ._errors import ValidationError
from ._flow import Flow

__all__ = ["FlowLoadError", "load_flow"]


class FlowLoadError(ValidationError):
    """A flow file cannot be read, fails on import, or defines no flow."""


def _import(path: Path) -> object:
    module_name = f"_pineapple_flow_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise FlowLoadError(f"{path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)  # a flow may import modules beside it
    try:
        spec.loader.exec_module(module)
    except ValidationError:
        raise
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = next(
            (f"{f.filename}:{f.lineno}" for f in reversed(frames) if f.filename == str(path)),
            str(path),
        )
        raise FlowLoadError(
            f"{where}: importing the flow failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def load_flow(path: str | Path, attr: str = "flow") -> Flow:
    """The ``Flow`` that the file at ``path`` defines as ``attr``.

    ``attr`` may be a ``Flow`` or a function taking no arguments that returns
    one. Raises :class:`FlowLoadError` (a :class:`dsl.ValidationError`)
    naming the file and what was wrong.
    """
    path = Path(path)
    if not path.is_file():
        raise FlowLoadError(f"{path}: no such file")
    module = _import(path)
    if not hasattr(module, attr):
        raise FlowLoadError(f"{path}: defines no {attr!r} (a Flow, or a function returning one)")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Flow):
        value = value()
    if not isinstance(value, Flow):
        raise FlowLoadError(
            f"{path}: {attr!r} is {_article(type(value).__name__)} {type(value).__name__}, "
            "not a dsl.Flow "
            "(or a function returning one)"
        )
    return value
