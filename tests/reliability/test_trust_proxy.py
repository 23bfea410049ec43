"""Issue 11, item 12: forwarded headers are not trusted by default.

With uvicorn's ``FORWARDED_ALLOW_IPS='*'`` in the environment, uvicorn used
to rewrite the client from ``X-Forwarded-For``, so a remote client claiming
``127.0.0.1`` reached the admin routes. Only loopback can be used here, so
the process tests show the header's effect in reverse: a loopback client
forwarding ``203.0.113.9`` stays loopback without ``--trust-proxy`` (it used
to be refused: the header was trusted) and is refused with
``--trust-proxy 127.0.0.1/32``. The decision itself is tested on hand-made
ASGI scopes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.requests import HTTPConnection

from server._admin import (
    MAX_FORWARDED_HOPS,
    admin_refusal,
    client_host,
    parse_trusted_proxies,
)

from .._serve import Serve, cli_env, run_cli
from ._reload import PLUGIN, valid

SPOOF = {"X-Forwarded-For": "203.0.113.9"}


def _conn(peer: str | None, forwarded: str | None = None) -> HTTPConnection:
    headers = [] if forwarded is None else [(b"x-forwarded-for", forwarded.encode())]
    scope: dict[str, Any] = {"type": "http", "headers": headers, "path": "/admin/reload"}
    if peer is not None:
        scope["client"] = (peer, 40000)
    return HTTPConnection(scope)


def _serve(tmp_path: Path, *args: str) -> Serve:
    config = tmp_path / "pineapple.json"
    config.write_bytes(valid("v0"))
    return Serve(config, "--plugin", PLUGIN, *args, env=cli_env({"FORWARDED_ALLOW_IPS": "*"}))


@pytest.mark.e2e
@pytest.mark.timeout(60)
def test_without_trust_proxy_the_socket_peer_decides(tmp_path: Path) -> None:
    serve = _serve(tmp_path)
    try:
        with serve.new_client() as http:
            response = http.post("/admin/reload", headers=SPOOF)
            assert response.status_code == 200, response.text  # was 403: 203.0.113.9 believed
            assert response.json()["result"] == "unchanged"
    finally:
        serve.close()


@pytest.mark.e2e
@pytest.mark.timeout(60)
def test_with_trust_proxy_a_trusted_peer_forwards_the_client(tmp_path: Path) -> None:
    serve = _serve(tmp_path, "--trust-proxy", "127.0.0.1/32")
    try:
        with serve.new_client() as http:
            refused = http.post("/admin/reload", headers=SPOOF)
            assert refused.status_code == 403, refused.text
            assert "loopback" in refused.json()["error"]
            direct = http.post("/admin/reload")  # no header: the trusted peer is the client
            assert direct.status_code == 200, direct.text
    finally:
        serve.close()


def test_serve_refuses_a_bad_trust_proxy_cidr() -> None:
    done = run_cli("serve", "missing.json", "--trust-proxy", "10.0.0.0/33", timeout=30)
    assert done.returncode == 2
    assert "--trust-proxy '10.0.0.0/33' is not a CIDR" in done.stderr


def test_forwarded_for_is_ignored_unless_the_peer_is_trusted() -> None:
    remote_claiming_loopback = _conn("198.51.100.7", "127.0.0.1")
    assert client_host(remote_claiming_loopback) == "198.51.100.7"
    refusal = admin_refusal(remote_claiming_loopback, None)
    assert refusal is not None and refusal.status == 403
    not_ours = parse_trusted_proxies(["10.0.0.0/8"])
    assert admin_refusal(remote_claiming_loopback, None, not_ours) is not None
    assert admin_refusal(_conn("127.0.0.1", "203.0.113.9"), None) is None


def test_a_trusted_proxy_names_the_client_right_to_left() -> None:
    trusted = parse_trusted_proxies(["10.0.0.0/8", "::1/128"])
    assert client_host(_conn("10.1.2.3", "127.0.0.1"), trusted) == "127.0.0.1"
    assert admin_refusal(_conn("10.1.2.3", "127.0.0.1"), None, trusted) is None
    # The left-most entry is the client's own claim: the right-most untrusted one wins.
    spoofed = _conn("10.1.2.3", "127.0.0.1, 203.0.113.9, 10.0.0.7")
    assert client_host(spoofed, trusted) == "203.0.113.9"
    assert admin_refusal(spoofed, None, trusted) is not None
    assert client_host(_conn("10.1.2.3", "10.9.9.9"), trusted) == "10.9.9.9"  # all trusted
    assert client_host(_conn("10.1.2.3"), trusted) == "10.1.2.3"  # no header: the peer
    assert client_host(_conn("::1", "203.0.113.9"), trusted) == "203.0.113.9"
    assert client_host(_conn(None, "127.0.0.1"), trusted) is None


def test_forwarded_for_is_read_for_a_bounded_number_of_hops() -> None:
    trusted = parse_trusted_proxies(["10.0.0.0/8"])
    hops = ["127.0.0.1"] + ["10.0.0.1"] * (10 * MAX_FORWARDED_HOPS)
    assert client_host(_conn("10.1.2.3", ", ".join(hops)), trusted) == "10.0.0.1"


def test_ipv4_mapped_loopback_peers_are_loopback() -> None:
    assert admin_refusal(_conn("::ffff:127.0.0.1"), None) is None
    assert admin_refusal(_conn("::ffff:198.51.100.7"), None) is not None


def test_parse_trusted_proxies_names_the_bad_value() -> None:
    with pytest.raises(ValueError, match="--trust-proxy 'nope' is not a CIDR"):
        parse_trusted_proxies(["127.0.0.1/32", "nope"])
