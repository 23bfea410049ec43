"""Issue 33, item 11: an admin token ending in a newline (a Kubernetes Secret made with
``echo``) works in the server and in ``pineapple admin``; one that a header cannot
carry is refused at start, naming the variable and never the token.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from server._admin import AdminTokenError, clean_admin_token

from ..._serve import Serve, cli_env, run_cli
from ..http.test_answer_size import CONFIG
from ..pod import WAIT, Server

pytestmark = pytest.mark.timeout(180)

TOKEN = "tok-5e1f0c-admin"


def test_surrounding_whitespace_is_stripped_and_unsendable_tokens_refused() -> None:
    assert clean_admin_token(None, "X") is None
    assert clean_admin_token("", "X") is None
    assert clean_admin_token(TOKEN + "\n", "X") == TOKEN
    assert clean_admin_token(f" \t{TOKEN}\r\n", "X") == TOKEN
    with pytest.raises(AdminTokenError, match=r"^X is set but holds only whitespace"):
        clean_admin_token(" \n", "X")
    with pytest.raises(AdminTokenError, match=r"^X holds a control character \(U\+0007\)") as e:
        clean_admin_token("abc\x07def", "X")
    assert "abc" not in str(e.value)


@pytest.mark.e2e
def test_a_token_with_a_trailing_newline_opens_the_admin_routes_and_the_cli(
    serve: Callable[..., Server],
) -> None:
    server = serve(CONFIG, env={"PINEAPPLE_ADMIN_TOKEN": TOKEN + "\n"})
    refused = server.http.post("/admin/reload")
    assert refused.status_code == 401, refused.text
    allowed = server.http.post("/admin/reload", headers={"authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200 and allowed.json()["result"] == "unchanged", allowed.text
    # The command strips it alike: the server answers the request (no resource "feed": 404).
    done = run_cli(
        "admin",
        "pin",
        "feed",
        "--addr",
        server.addr,
        "-o",
        "json",
        env=cli_env({"PINEAPPLE_ADMIN_TOKEN": TOKEN + "\n"}),
        timeout=WAIT,
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert orjson.loads(done.stderr)["error"].startswith("unknown resource"), done.stderr
    assert TOKEN not in server.text()


@pytest.mark.e2e
@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["one process", "workers 2"])
@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (" \n", "PINEAPPLE_ADMIN_TOKEN is set but holds only whitespace"),
        (TOKEN + "\x07x\n", "PINEAPPLE_ADMIN_TOKEN holds a control character (U+0007)"),
    ],
)
def test_an_unsendable_token_is_refused_at_start(
    raw: str, said: str, workers: tuple[str, ...], tmp_path: Path
) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(orjson.dumps(CONFIG))
    shared = ("--shared-dir", str(tmp_path)) if workers else ()
    server = Serve(
        config, *workers, *shared, env=cli_env({"PINEAPPLE_ADMIN_TOKEN": raw}), wait=False
    )
    try:
        assert server.wait_exit(WAIT) == 1
        log = server.text()
        assert said in log and "not serving" in log and "Traceback" not in log, log
        assert TOKEN not in log and "listening on" not in log
    finally:
        server.close()


def test_the_cli_refuses_an_unsendable_token_without_a_traceback() -> None:
    done = run_cli(
        "admin",
        "pin",
        "feed",
        "--addr",
        "127.0.0.1:9",
        env=cli_env({"PINEAPPLE_ADMIN_TOKEN": "a\x1bb"}),
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "pineapple admin: PINEAPPLE_ADMIN_TOKEN holds a control character (U+001B)"
    )
    assert "Traceback" not in done.stderr
