from __future__ import annotations

import logging

import pytest

from ._run import run


def test_logs_declared_inputs_and_writes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pineapple.operators.observe_log")
    out = run(
        "observe_log",
        {"log_prefix": "p:"},
        {"common_input": ["a"], "item_input": ["x"]},
        {"a": 1.0},
        [{"x": "<"}],
    )
    assert out.used() == (False,) * 5
    assert caplog.messages == ['[observe_log] p: {"common":{"a":1},"items":[{"x":"\\u003c"}]}']
