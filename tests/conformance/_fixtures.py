"""Loading the shared Pineapple fixtures, and the one list of fixtures we do not pass yet.

The fixture directory is ``$PINE_FIXTURES_DIR`` (default
``../shared/fixtures/pineapple`` relative to the repository root). When it
(or a folder of it) is absent, every test of its fixtures skips with the
reason, and fails in CI (``PINEAPPLE_REQUIRE_SERVICES=1`` or ``CI=true``):
CI never passes without running them. The one place that decides is
:func:`fixtures_absent`; a parameter that stands for absent fixtures
(:func:`missing_dir_param`) reaches it through the ``fixtures_absent`` mark
(``tests/conftest.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NoReturn

import pytest

import pineapple.operators  # noqa: F401  (registers the built-in operators)
from pineapple.engine import default_operator_registry
from pineapple.engine._gofmt import format_value

ROOT = Path(__file__).resolve().parents[2]

# Fixtures we cannot pass yet, by "<folder>/<file>[::<case>]": the reason is
# shown by pytest (xfail, strict: a fixed fixture must be taken off this list).
KNOWN_FAILURES: dict[str, str] = {}

# Operator types written by other branches: fixtures using them are expected to
# fail (xfail, strict) only while the type is not registered.
PENDING_OPERATORS: dict[str, str] = {}


def fixtures_dir() -> Path | None:
    """The fixture directory, or None when it does not exist."""
    raw = os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple")
    path = Path(raw)
    if not path.is_absolute():
        path = (ROOT / path).resolve()
    return path if path.is_dir() else None


def _int_or_negative_zero(text: str) -> int | float:
    # JSON "-0" is Go's (and Lua's) negative zero; an int would lose the sign.
    return -0.0 if text == "-0" else int(text)


def _parse(text: str) -> Any:
    return json.loads(text, parse_int=_int_or_negative_zero)


def load(folder: str) -> list[tuple[str, dict[str, Any]]]:
    """``(id, parsed file)`` for every JSON file of ``folder``, sorted by name."""
    base = fixtures_dir()
    if base is None or not (base / folder).is_dir():
        return []
    return [
        (f"{folder}/{p.name}", _parse(p.read_text()))
        for p in sorted((base / folder).glob("*.json"))
    ]


ABSENT = "PINE_FIXTURES_DIR not set or directory absent"


def fixtures_required() -> bool:
    """True in CI (``PINEAPPLE_REQUIRE_SERVICES=1`` or ``CI=true``): absent fixtures fail."""
    return (
        os.environ.get("PINEAPPLE_REQUIRE_SERVICES") == "1"
        or os.environ.get("CI", "").lower() == "true"
    )


def fixtures_absent(what: str = ABSENT) -> NoReturn:
    """Skip because the fixtures are absent, or fail when CI requires them."""
    if fixtures_required():
        pytest.fail(f"{what} (CI runs every fixture: PINEAPPLE_REQUIRE_SERVICES=1 or CI=true)")
    pytest.skip(what)


def missing_dir_param(arity: int = 1, name: str = "no-fixtures") -> Any:
    """One parameter (of ``arity`` values) standing for absent fixtures: skipped, or failed
    in CI (the ``fixtures_absent`` mark)."""
    return pytest.param(*([None] * arity), id=name, marks=pytest.mark.fixtures_absent)


def operator_types(data: Any) -> set[str]:
    """Every ``type_name`` in a fixture (config, or the ``operator`` of an operator file)."""
    found: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("type_name", "operator") and isinstance(value, str):
                found.add(value)
            else:
                found |= operator_types(value)
    elif isinstance(data, list):
        for value in data:
            found |= operator_types(value)
    return found


def marks_for(fixture_id: str, data: Any) -> list[Any]:
    """xfail marks for a known failure or a pending operator type."""
    file_id = fixture_id.split("::", 1)[0]
    reason = KNOWN_FAILURES.get(fixture_id) or KNOWN_FAILURES.get(file_id)
    if reason is not None:
        return [pytest.mark.xfail(reason=reason, strict=True)]
    registry = default_operator_registry()
    pending = [
        why
        for name, why in PENDING_OPERATORS.items()
        if name in operator_types(data) and registry.get(name) is None
    ]
    # Not strict: some such fixtures fail before the pending operator matters.
    return [pytest.mark.xfail(reason="; ".join(pending), strict=False)] if pending else []


def same(expected: Any, got: Any) -> bool:
    """Equality as the fixtures mean it: Go's ``%v`` text of both sides."""
    return format_value(expected) == format_value(got)


def normalized(value: Any) -> Any:
    """JSON-like value with every number as float (``1`` and ``1.0`` are one value)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalized(v) for v in value]
    return value
