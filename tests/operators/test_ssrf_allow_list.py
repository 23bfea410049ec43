"""Issue 21, item 10: the SSRF guard lets through global unicast addresses only.

Every address here is a literal, judged without a lookup; nothing connects
anywhere (``pineapple check`` builds the operator, whose load-time check
refuses the host before any request could be sent).
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from pineapple import RegistryError
from pineapple.engine import build_operator
from pineapple.operators import _ssrf

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
NAME = "transform_by_remote_pineapple"
META = {"common_input": ["uid"], "common_output": ["score"], "item_input": [], "item_output": []}

# The four gaps, each reaching a loopback or shared address.
GAPS = ["::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "100.64.0.1"]

REFUSED = [
    *GAPS,
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.100.100.200",  # Alibaba metadata (carrier-grade NAT range)
    "168.63.129.16",  # Azure wire server: global, yet a metadata address
    "0.0.0.0",
    "255.255.255.255",
    "240.0.0.1",
    "192.0.2.1",  # documentation
    "224.0.0.251",
    "239.1.2.3",  # multicast is not unicast
    "::",
    "::1",
    "::8.8.8.8",  # IPv4-compatible: deprecated, never routed
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "ff0e::1",  # global-scope multicast
    "2001:db8::1",
    "3fff::1",
    "2001::1",  # Teredo
    "64:ff9b:1::1",  # local-use NAT64
    "5f00::1",  # outside 2000::/3
    "::ffff:127.0.0.1",
    "::ffff:100.64.0.1",
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
    "2002:a00:1::",  # 6to4 of 10.0.0.1
]
ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "2001:4860:4860::8888",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "2002:808:808::1",  # 6to4 of 8.8.8.8
]


@pytest.mark.parametrize("address", REFUSED)
def test_refused(address: str) -> None:
    assert _ssrf.is_private_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ALLOWED)
def test_allowed(address: str) -> None:
    assert _ssrf.is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "v4", ["127.0.0.1", "10.0.0.1", "100.64.0.1", "169.254.169.254", "192.168.0.1", "0.0.0.0"]
)
def test_every_ipv6_form_of_a_refused_ipv4_address_is_refused(v4: str) -> None:
    packed = int(ipaddress.IPv4Address(v4))
    forms = [
        ipaddress.IPv6Address(0xFFFF << 32 | packed),  # mapped
        ipaddress.IPv6Address(0x64FF9B << 96 | packed),  # NAT64
        ipaddress.IPv6Address(0x2002 << 112 | packed << 80),  # 6to4
        ipaddress.IPv6Address(packed),  # compatible
    ]
    for form in forms:
        assert _ssrf.embedded_ipv4(form) in (ipaddress.IPv4Address(v4), None)
        assert _ssrf.is_private_address(form), form


@pytest.mark.parametrize("host", GAPS)
def test_the_operator_refuses_them_at_load(host: str) -> None:
    with pytest.raises(RegistryError, match="allow_private") as info:
        build_operator(NAME, {"host": host, "port": 8080}, META)
    assert host in str(info.value)
    # allow_private still lets a test or a sidecar reach them.
    op, _ = build_operator(NAME, {"host": host, "port": 8080, "allow_private": True}, META)
    op.close()


def _config(host: str) -> bytes:
    return orjson.dumps(
        {
            "_PINEAPPLE_VERSION": 1,
            "_PINEAPPLE_CREATE_TIME": "2026-01-01T00:00:00Z",
            "pipeline_config": {
                "operators": {
                    "remote": {"type_name": NAME, "host": host, "port": 8080, "$metadata": META}
                }
            },
            "pipeline_group": {"main": {"pipeline": ["remote"]}},
            "flow_contract": {
                "common_input": ["uid"],
                "item_input": [],
                "common_output": ["score"],
                "item_output": [],
            },
        }
    )


@pytest.mark.parametrize("host", GAPS)
def test_check_refuses_a_config_that_calls_them(tmp_path: Path, host: str) -> None:
    config = tmp_path / "remote.json"
    config.write_bytes(_config(host))
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pineapple.cli import main; sys.exit(main())",
         "check", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=60,
        check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert host in output and "not a public (global unicast) address" in output
