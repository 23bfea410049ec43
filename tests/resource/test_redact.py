from __future__ import annotations

from pineapple.resource._redact import secrets_of
from pineapple.resource.lowlevel import redact, redact_value


def test_url_and_go_dsn_passwords_are_masked() -> None:
    assert redact("mysql://app:pw1@db:3306/x") == "mysql://app:***@db:3306/x"
    assert redact("dial app:pw2@tcp(db:3306)/x failed") == "dial app:***@tcp(db:3306)/x failed"
    assert redact("redis://:tok@cache:6379/0") == "redis://:***@cache:6379/0"
    assert redact("no secret here") == "no secret here"


def test_known_secrets_are_masked_anywhere() -> None:
    secrets = secrets_of({"password": "hunter2", "dsn": "u:pw9@tcp(h)/d", "db": 0})
    assert secrets == {"hunter2", "pw9"}
    assert redact("auth hunter2 failed, pw9", secrets) == "auth *** failed, ***"


def test_redact_value_masks_secret_params() -> None:
    value = {"addr": "h:6379", "password": "x1", "nested": {"api_token": "t"}, "n": 1}
    assert redact_value(value) == {
        "addr": "h:6379",
        "password": "***",
        "nested": {"api_token": "***"},
        "n": 1,
    }


def test_dsn_passwords_with_at_colon_and_spaces() -> None:
    assert redact("dial root:p@ss w0rd@tcp(db:3306)/x") == "dial root:***@tcp(db:3306)/x"
    assert redact("Error: dial app:pw2@tcp(db)/x") == "Error: dial app:***@tcp(db)/x"
    assert redact('"mysql://u:a@b c@h/db"') == '"mysql://u:***@h/db"'
    assert redact("http://host:8080/path and user@example.com") == (
        "http://host:8080/path and user@example.com"
    )


def test_secret_lists_and_interpolation_rule() -> None:
    from pineapple.resource._redact import is_secret_value

    assert secrets_of({"credentials": ["k3y-one", "k3y-two"]}) == {"k3y-one", "k3y-two"}
    assert secrets_of({"auth_filter": {"type_name": "filter"}}) == set()  # keys, not secrets
    assert [is_secret_value(v) for v in ("abc", "6379", "1.5", "true", "127.0.0.1")] == [False] * 5
    assert [is_secret_value(v) for v in ("tbl_x", "10.0.0.7", "s3cr3t")] == [True] * 3


def test_dense_anchors_stay_linear() -> None:
    # Each of these took seconds or more with backtracking patterns; all are
    # a few milliseconds now. The bound is generous (machine speed varies).
    import time

    for text in ("a://" * 50_000, "a:b@tcp(" * 25_000, "x://" + "@" * 200_000, ":" * 200_000):
        started = time.perf_counter()
        redact(text, ["s3cret-value"])
        assert time.perf_counter() - started < 1.0
