"""Issue 11, item 11: the parent reports the loader child's own error, not "exited before the end".

The child used to catch only driver and socket errors; anything else (a bad
setting pymysql rejects with ``ValueError``, an unknown charset, a bug) printed
a traceback in the child and left the parent with "loader process exited
before the end". Now every exception in the child travels to the parent as its
last frame, password masked and length capped.
"""

from __future__ import annotations

import multiprocessing
import uuid
from typing import Any

import pymysql
import pytest

from resources import SourceError
from resources._feed_data import FeedDataFetcher
from resources._feed_worker import ERROR_CHARS, error_text, read_in_child

pytestmark = pytest.mark.mysql


def _no_children() -> bool:
    return not [p for p in multiprocessing.active_children() if p.name == "pineapple-feed-loader"]


def _read(kwargs: dict[str, Any], sql: str = "SELECT 1") -> None:
    read_in_child(kwargs, sql, lambda names, chunks: list(chunks), where="mysql here", timeout=10)


def test_a_setting_pymysql_rejects_is_reported_with_pymysql_s_message(
    mysql_params: dict[str, Any],
) -> None:
    # connect_timeout 0 is what `connect_timeout_ms: 0` used to hand the child.
    with pytest.raises(SourceError) as info:
        _read({**mysql_params, "connect_timeout": 0, "read_timeout": 10})
    assert str(info.value) == (
        "mysql here: ValueError: connect_timeout should be >0 and <=31536000"
    )
    assert _no_children()


def test_an_unknown_charset_in_the_dsn_is_reported_from_the_child(
    mysql_dsn: str, mysql_table: str
) -> None:
    fetcher = FeedDataFetcher(
        {"mysql_dsn": f"{mysql_dsn}?charset=no_such_charset", "table": mysql_table}
    )
    try:
        with pytest.raises(SourceError) as info:
            fetcher()
    finally:
        fetcher.close()
    message = str(info.value)
    assert "before the end" not in message
    assert message.startswith("mysql root@") and ": AttributeError: " in message
    assert _no_children()


def test_a_driver_error_naming_the_password_is_masked(mysql_params: dict[str, Any]) -> None:
    # MariaDB quotes the user name back; here it holds the password.
    secret = f"pw-{uuid.uuid4().hex[:10]}"
    kwargs = {**mysql_params, "user": secret, "password": secret, "read_timeout": 10}
    with pytest.raises(SourceError) as info:
        _read({**kwargs, "connect_timeout": 5})
    message = str(info.value)
    assert "OperationalError: (" in message and "Access denied" in message
    assert secret not in message and "***" in message


def test_the_error_text_is_capped() -> None:
    text = error_text(pymysql.ProgrammingError(1064, "x" * 50_000), ("nothing",))
    assert len(text) <= ERROR_CHARS
    assert text.startswith("ProgrammingError: (1064, 'xxx") and "more characters)" in text
