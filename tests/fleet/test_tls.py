"""TLS to NATS: a CA and a client certificate from files named in the environment."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.fleet import PINS, FleetError, FleetLimits, StoreUnavailableError, open_store

from ..conftest import service_unavailable
from ._nats import NatsCluster, nats_cluster

pytestmark = pytest.mark.timeout(180)

LIMITS = FleetLimits(max_snapshot_bytes=2**24, max_bucket_bytes=2**28)


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(
        ["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True, timeout=60
    )


def _certificate(folder: Path, name: str, extension: str) -> None:
    """``name.pem`` and ``name.key``, signed by ``ca.pem`` (with ``extension``)."""
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
             f"{name}.csr", "-subj", f"/CN={name}", cwd=folder)  # fmt: skip
    (folder / f"{name}.ext").write_text(extension + "\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile",
             f"{name}.ext", cwd=folder)  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    folder = tmp_path_factory.mktemp("pki")
    try:
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
                 "ca.pem", "-days", "1", "-subj", "/CN=fleet-test-ca", cwd=folder)  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        service_unavailable("openssl", exc)
    _certificate(folder, "server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    _certificate(folder, "client", "extendedKeyUsage=clientAuth")
    return folder


@pytest.fixture
def tls_server(pki: Path, tmp_path: Path) -> Iterator[NatsCluster]:
    flags = ["--tlsverify", "--tlscert", str(pki / "server.pem"), "--tlskey",
             str(pki / "server.key"), "--tlscacert", str(pki / "ca.pem")]  # fmt: skip
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    context.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
    with nats_cluster(tmp_path / "nats", 1, flags, {"tls": context}) as cluster:
        yield cluster


def test_a_client_certificate_from_the_environment(
    tls_server: NatsCluster, pki: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_TLS_CA", str(pki / "ca.pem"))
    monkeypatch.setenv("PINEAPPLE_FLEET_TLS_CERT", str(pki / "client.pem"))
    monkeypatch.setenv("PINEAPPLE_FLEET_TLS_KEY", str(pki / "client.key"))
    store = open_store(tls_server.url.replace("nats://", "tls://"), timeout=5.0, limits=LIMITS)
    try:
        assert store.put(PINS, "a", b"x") > 0
    finally:
        store.close()


def test_without_a_client_certificate_the_store_is_unavailable(
    tls_server: NatsCluster, pki: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_TLS_CA", str(pki / "ca.pem"))
    store = open_store(tls_server.url, timeout=1.5, limits=LIMITS)
    try:
        with pytest.raises(StoreUnavailableError, match="get pineapple-pins/a"):
            store.get(PINS, "a")
    finally:
        store.close()


def test_a_bad_key_or_a_lone_certificate_is_named_without_its_content(
    pki: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PINEAPPLE_FLEET_TLS_CERT", str(pki / "client.pem"))
    with pytest.raises(FleetError, match="TLS_CERT and PINEAPPLE_FLEET_TLS_KEY are set together"):
        open_store("tls://127.0.0.1:20599", timeout=1.0)
    wrong = tmp_path / "wrong.key"
    wrong.write_text(
        "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n"
    )
    monkeypatch.setenv("PINEAPPLE_FLEET_TLS_KEY", str(wrong))
    with pytest.raises(FleetError, match="cannot load it with its key") as caught:
        open_store("tls://127.0.0.1:20599", timeout=1.0)
    assert "c2VjcmV0" not in str(caught.value)
