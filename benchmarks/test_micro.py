"""Micro benchmarks (pytest-benchmark) of the request-path primitives.

Not collected by ``make test`` (its testpath is ``tests/``); run with::

    .venv/bin/python -m pytest benchmarks --benchmark-enable -p no:cacheprovider

Each pair (ours, floor) is what a target of ``python -m benchmarks`` compares;
here they come with pytest-benchmark's statistics instead of one ratio.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from pineapple import resource

from .lookup import lookup_case
from .masking import SECRETS, masking_texts


@pytest.fixture(scope="module")
def manager() -> Iterator[resource.Manager]:
    table = {"k": 1}
    rm = resource.Manager()
    rm.register("features", lambda: table, interval=-1)
    rm.start()
    yield rm
    rm.stop()


def _borrow(rm: resource.Manager, n: int) -> None:
    get = rm.get
    for _ in range(n):
        with get("features") as v:  # type: ignore[union-attr]
            pass
    del v


def _floor(x: Any, n: int) -> None:
    nullcontext = contextlib.nullcontext
    for _ in range(n):
        with nullcontext(x) as v:
            pass
    del v


def test_borrow_1000(benchmark: Any, manager: resource.Manager) -> None:
    benchmark(_borrow, manager, 1000)


def test_borrow_floor_nullcontext_1000(benchmark: Any) -> None:
    benchmark(_floor, {"k": 1}, 1000)


def test_missing_name_1000(benchmark: Any, manager: resource.Manager) -> None:
    get = manager.get
    benchmark(lambda: [get("missing") for _ in range(1000)])


def test_resource_lookup_1000_items(benchmark: Any) -> None:
    operator, _ = lookup_case()
    benchmark(operator)


def test_resource_lookup_floor_dict_comprehension(benchmark: Any) -> None:
    _, floor = lookup_case()
    benchmark(floor)


@pytest.fixture(scope="module")
def masking_inputs() -> dict[str, str]:
    return masking_texts()


def test_redact_1mb_letters_digits(benchmark: Any, masking_inputs: dict[str, str]) -> None:
    benchmark(resource.lowlevel.redact, masking_inputs["letters+digits"], SECRETS)


def test_redact_1mb_log_lines_with_dsns(benchmark: Any, masking_inputs: dict[str, str]) -> None:
    benchmark(resource.lowlevel.redact, masking_inputs["log lines with DSNs"], SECRETS)
