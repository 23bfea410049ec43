"""Issue 33, item 9: no request can forge a log line or write a terminal escape.

The access log writes the decoded path: ``%0a`` was a newline (a fake ``config
reloaded`` line), ``%1b`` a terminal escape. Against a real ``pineapple serve
--access-log`` (text format) in one process and with ``--workers 2``, and record by
record for the text formatter (messages, tracebacks).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

import pytest

from server._log_format import TextFormatter, escape_controls

from .._rawhttp import RawConnection
from ..pod import Server
from .test_answer_size import CONFIG

pytestmark = pytest.mark.timeout(120)

FAKE = "2026-12-05 01:00:00,000 1 INFO pineapple.reloader: config reloaded"


def test_escape_controls_writes_each_control_character_as_an_escape() -> None:
    assert escape_controls("/plain path ok") == "/plain path ok"
    assert escape_controls("a\nb\rc\td\x1b[31m\x00\x7f\x85\u2028") == (
        "a\\nb\\rc\\td\\x1b[31m\\x00\\x7f\\x85\\u2028"
    )


def _text_log() -> tuple[logging.Logger, io.StringIO, logging.Handler]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(TextFormatter())
    logger = logging.getLogger("tests.text_log")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger, out, handler


def test_a_record_is_one_line_and_its_traceback_an_indented_block() -> None:
    logger, out, handler = _text_log()
    try:
        logger.info("path %s", "/x\n" + FAKE + "\x1b[2J")
        try:
            raise ValueError("bad value\n" + FAKE)
        except ValueError:
            logger.exception("failed on %s", "\x1b]0;title\x07")
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    records = [line for line in lines if not line.startswith("  ")]
    assert len(records) == 2, lines
    assert records[0].endswith("INFO tests.text_log: path /x\\n" + FAKE + "\\x1b[2J")
    assert "failed on \\x1b]0;title\\x07" in records[1]
    assert "  ValueError: bad value" in lines and "  " + FAKE in lines


@pytest.mark.e2e
def test_a_forged_path_is_escaped_in_the_access_log(serve: Callable[..., Server]) -> None:
    server = serve(CONFIG, "--access-log")
    host, port = server.addr.split(":")
    conn = RawConnection(host, int(port))
    try:
        conn.send("GET", "/healthz%0a" + FAKE.replace(" ", "%20") + "%1b[31mred%0d")
        assert conn.read().status == 404
    finally:
        conn.sock.close()
    line = server.wait_line(r'"GET /healthz\\n2026')
    duration, rid = line.string.split()[-2:]  # "1.2ms id=..."
    assert line.string.rstrip("\n").endswith(
        '"GET /healthz\\n' + FAKE + '\\x1b[31mred\\r" 404 ' + f"{duration} {rid}"
    )
    assert duration.endswith("ms") and rid.startswith("id=")
    log = server.text()
    assert "\x1b" not in log and "\r" not in log
    assert not any(entry.startswith(FAKE) for entry in log.splitlines()), log
