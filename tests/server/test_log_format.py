"""``--log-format json`` lines and the access log, record by record (no process needed)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from server._log_format import JsonFormatter
from server._logmask import LogMask
from server._snapshot import SnapshotHolder
from server.http._access_log import ACCESS_LOGGER, AccessLog


@pytest.fixture
def json_log() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing JSON lines, through the secrets mask, into a buffer."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(LogMask(SnapshotHolder()))
    logger = logging.getLogger("tests.json_log")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield logger, out
    finally:
        logger.removeHandler(handler)


def _lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_line_has_the_fields_and_the_extras(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_log
    logger.warning("swap of %s", "feed", extra={"resource": "feed", "version": 3, "level": 9})
    (line,) = _lines(out)
    assert line["message"] == "swap of feed" and line["level"] == "WARNING"
    assert line["logger"] == "tests.json_log" and isinstance(line["pid"], int)
    assert (line["resource"], line["version"], line["extra_level"]) == ("feed", 3, 9)
    assert str(line["time"]).endswith("Z") and len(str(line["time"])) == 24  # ms, UTC


def test_secrets_are_masked_in_the_message_the_traceback_and_the_fields(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_log
    dsn = "app:hunter22@tcp(db:3306)/x"
    try:
        raise ConnectionError(f"cannot reach {dsn}")
    except ConnectionError:
        logger.exception("failed: %s", dsn, extra={"source": dsn})
    (line,) = _lines(out)
    text = json.dumps(line)
    assert "hunter22" not in text
    assert "ConnectionError" in str(line["exc"]) and "app:***@" in str(line["source"])


def test_the_access_log_has_method_path_status_and_duration_but_no_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hi", status_code=201)

    async def boom(request: Request) -> PlainTextResponse:
        raise RuntimeError("boom")

    app = Starlette(routes=[Route("/hello", hello), Route("/boom", boom)])
    client = TestClient(AccessLog(app), raise_server_exceptions=False)
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER), client:
        assert client.get("/hello?token=s3cret").status_code == 201
        assert client.get("/boom").status_code == 500
    records = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert [(r.__dict__["method"], r.__dict__["path"], r.__dict__["status"]) for r in records] == [
        ("GET", "/hello", 201),
        ("GET", "/boom", 500),
    ]
    assert all(r.__dict__["duration_ms"] >= 0 for r in records)
    assert "s3cret" not in caplog.text and "token" not in caplog.text
