"""Context deadlines: remaining time, expiry and the named error."""

from __future__ import annotations

import time

import pytest

from pineapple import Context, DeadlineExceededError, ExecutionError


def test_no_deadline_never_expires() -> None:
    ctx = Context()
    assert ctx.deadline is None
    assert ctx.remaining() is None
    assert not ctx.expired()
    ctx.check_deadline("op")


def test_with_value_keeps_the_deadline() -> None:
    ctx = Context().with_timeout(10).with_value("k", 1)
    assert ctx.deadline is not None
    assert ctx.value("k") == 1
    remaining = ctx.remaining()
    assert remaining is not None and 9 < remaining <= 10


def test_with_timeout_never_extends_an_earlier_deadline() -> None:
    ctx = Context(deadline=time.monotonic() + 1).with_timeout(60)
    remaining = ctx.remaining()
    assert remaining is not None and remaining <= 1


def test_passed_deadline_raises_naming_the_operator() -> None:
    ctx = Context(deadline=time.monotonic() - 1)
    assert ctx.expired()
    assert ctx.remaining() == 0.0
    with pytest.raises(DeadlineExceededError, match='deadline exceeded in operator "slow"') as info:
        ctx.check_deadline("slow")
    assert isinstance(info.value, ExecutionError)
    assert info.value.operator == "slow"
