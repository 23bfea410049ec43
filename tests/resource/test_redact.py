from __future__ import annotations

from pineapple.resource import redact, redact_value, secrets_of


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
