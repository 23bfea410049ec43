"""NATS credentials come from the environment or files and never reach a message or a log."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.fleet import PINS, FleetError, FleetLimits, StoreUnavailableError, open_store
from server.fleet._nats_auth import connect_options, sanitised

from ._jwt import decentralized_auth
from ._nats import NatsCluster, nats_cluster

pytestmark = pytest.mark.timeout(180)

TOKEN = "tok-SECRET-5f1e2d"
PASSWORD = "pw-SECRET-9a8b7c"
WRONG = "wrong-SECRET-0c0c0c"
SECRETS = (TOKEN, PASSWORD, WRONG)
LIMITS = FleetLimits(max_snapshot_bytes=2**24, max_bucket_bytes=2**28)
_ENV = (
    "PINEAPPLE_FLEET_USER",
    "PINEAPPLE_FLEET_PASSWORD",
    "PINEAPPLE_FLEET_PASSWORD_FILE",
    "PINEAPPLE_FLEET_TOKEN",
    "PINEAPPLE_FLEET_TOKEN_FILE",
)


def _messages(exc: BaseException) -> str:
    """Every message of ``exc`` and of the errors chained to it."""
    texts = []
    seen: BaseException | None = exc
    while seen is not None:
        texts += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(texts)


def _assert_secret_free(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.DEBUG)
    yield
    _assert_secret_free(caplog.text)  # nothing logged, by us or nats-py, names a secret


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "nats", 1, ["--auth", TOKEN]) as cluster:
        yield cluster


@pytest.fixture
def password_server(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "nats", 1, ["--user", "fleet", "--pass", PASSWORD]) as cluster:
        yield cluster


def test_a_token_from_the_environment_or_a_file(
    token_server: NatsCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_TOKEN", TOKEN)
    store = open_store(token_server.url, timeout=5.0, limits=LIMITS)
    try:
        assert store.put(PINS, "a", b"x") > 0
        _assert_secret_free(store.url)
    finally:
        store.close()
    monkeypatch.delenv("PINEAPPLE_FLEET_TOKEN")
    secret_file = tmp_path / "token"
    secret_file.write_text(TOKEN + "\n")
    monkeypatch.setenv("PINEAPPLE_FLEET_TOKEN_FILE", str(secret_file))
    store = open_store(token_server.url, timeout=5.0, limits=LIMITS)
    try:
        record = store.get(PINS, "a")
        assert record is not None and record.value == b"x"
    finally:
        store.close()


def test_a_wrong_token_is_unavailable_and_named_without_it(
    token_server: NatsCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_TOKEN", WRONG)
    store = open_store(token_server.url, timeout=1.5, limits=LIMITS)
    try:
        with pytest.raises(StoreUnavailableError) as caught:
            store.put(PINS, "a", b"x")
        assert token_server.url in str(caught.value)
        _assert_secret_free(_messages(caught.value))
    finally:
        store.close()


def test_a_wrong_password_is_unavailable_and_the_right_one_works(
    password_server: NatsCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_USER", "fleet")
    monkeypatch.setenv("PINEAPPLE_FLEET_PASSWORD", WRONG)
    store = open_store(password_server.url, timeout=1.5, limits=LIMITS)
    try:
        with pytest.raises(StoreUnavailableError) as caught:
            store.get(PINS, "a")
        _assert_secret_free(_messages(caught.value))
    finally:
        store.close()
    monkeypatch.delenv("PINEAPPLE_FLEET_PASSWORD")
    (tmp_path / "pw").write_text(PASSWORD)
    monkeypatch.setenv("PINEAPPLE_FLEET_PASSWORD_FILE", str(tmp_path / "pw"))
    store = open_store(password_server.url, timeout=5.0, limits=LIMITS)
    try:
        assert store.put(PINS, "a", b"x") > 0
    finally:
        store.close()


@pytest.mark.parametrize(
    "url",
    [
        f"nats://{TOKEN}@127.0.0.1:20599",
        f"nats://fleet:{PASSWORD}@127.0.0.1:20599",
        f"nats://127.0.0.1:20598,tls://fleet:{PASSWORD}@127.0.0.1:20599",
    ],
)
def test_credentials_in_the_url_are_refused_without_repeating_them(url: str) -> None:
    with pytest.raises(FleetError, match="credentials in the URL are refused") as caught:
        open_store(url, timeout=1.0)
    _assert_secret_free(_messages(caught.value))
    assert "127.0.0.1:20599" in str(caught.value)
    _assert_secret_free(sanitised(url))


def test_an_unreadable_secret_file_is_named_not_read_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(FleetError, match=r"PINEAPPLE_FLEET_TOKEN_FILE .*missing: cannot read"):
        open_store("nats://127.0.0.1:20599", timeout=1.0)
    big = tmp_path / "big"
    big.write_text(TOKEN * 10_000)
    monkeypatch.setenv("PINEAPPLE_FLEET_TOKEN_FILE", str(big))
    with pytest.raises(FleetError, match="over 65536 bytes") as caught:
        open_store("nats://127.0.0.1:20599", timeout=1.0)
    _assert_secret_free(_messages(caught.value))


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"PINEAPPLE_FLEET_TOKEN": "s3cret\n"}, {"token": "s3cret"}),  # a Secret made with echo
        ({"PINEAPPLE_FLEET_TOKEN": ""}, {}),  # an optional Secret key left empty: no token
        ({"PINEAPPLE_FLEET_TOKEN": " \n"}, {}),
    ],
)
def test_a_token_variable_is_stripped_and_an_empty_one_is_none(
    env: dict[str, str], expected: dict[str, str]
) -> None:
    assert connect_options(env) == expected


def test_a_creds_file_without_the_nkeys_package_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """nats-py signs a ``.creds`` file's nonce with the ``nkeys`` package, which it does not
    install: without it the store refuses at once, naming the package (not at connect)."""
    creds = tmp_path / "user.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\nx\n------END NATS USER JWT------\n")
    monkeypatch.setitem(sys.modules, "nkeys", None)  # ``import nkeys`` raises ImportError
    with pytest.raises(FleetError, match=r"PINEAPPLE_FLEET_CREDS: .*'nkeys' package"):
        connect_options({"PINEAPPLE_FLEET_CREDS": str(creds)})


def test_a_creds_file_connects_to_a_server_in_operator_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``PINEAPPLE_FLEET_CREDS``: an operator/account/user JWT setup made here (``_jwt``), a
    real ``nats-server`` in operator mode; the store works with the user's ``.creds`` file,
    is refused without it, and no message or log holds the user's seed."""
    pytest.importorskip("nkeys", reason="a .creds file needs the nkeys package")
    auth = decentralized_auth(tmp_path / "auth")
    with nats_cluster(
        tmp_path / "nats",
        1,
        ["-c", str(auth.server_config)],
        connect_options={"user_credentials": str(auth.creds)},
    ) as cluster:
        with pytest.raises(StoreUnavailableError) as refused:  # no credentials: refused
            bare = open_store(cluster.url, timeout=3.0, limits=LIMITS)
            try:
                bare.put(PINS, "a", b"x")
            finally:  # else it goes on reconnecting, and logging, once the cluster is gone
                bare.close()
        monkeypatch.setenv("PINEAPPLE_FLEET_CREDS", str(auth.creds))
        store = open_store(cluster.url, timeout=5.0, limits=LIMITS)
        try:
            revision = store.put(PINS, "a", b"x")
            assert revision > 0
            record = store.get(PINS, "a")
            assert record is not None and record.value == b"x"
        finally:
            store.close()
    assert auth.seed not in _messages(refused.value)
    assert auth.seed not in caplog.text
