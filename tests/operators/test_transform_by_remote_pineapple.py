"""``transform_by_remote_pineapple`` against a stub downstream: mapping, failures, bounds, SSRF.

The process-level test against a second real ``pineapple serve`` is in
``tests/server/test_remote_pineapple.py``.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

from pineapple import Context, DeadlineExceededError, RegistryError
from pineapple.engine import OperatorInput, OperatorOutput, build_operator
from pineapple.operators import _ssrf
from pineapple.operators.transform_by_remote_pineapple import RemoteCallError

from ._http_stub import Reply, Stub

NAME = "transform_by_remote_pineapple"
META = {
    "common_input": ["uid"],
    "common_output": ["score"],
    "item_input": ["id"],
    "item_output": ["rank"],
}


@pytest.fixture
def stub_factory() -> Iterator[Callable[[Callable[[Stub, bytes], Reply]], Stub]]:
    stubs: list[Stub] = []

    def make(reply: Callable[[Stub, bytes], Reply]) -> Stub:
        stubs.append(Stub(reply))
        return stubs[-1]

    try:
        yield make
    finally:
        for stub in stubs:
            stub.close()


def _op(port: int, **params: Any) -> Any:
    base = {"host": "127.0.0.1", "port": port, "allow_private": True}
    op, _ = build_operator(NAME, {**base, **params}, META, name="remote")
    return op


def _run(op: Any, ctx: Context | None = None, items: int = 2) -> OperatorOutput:
    out = OperatorOutput()
    rows = [{"id": f"i{n}"} for n in range(items)]
    try:
        op.execute(ctx or Context(), OperatorInput({"uid": "u1"}, rows), out)
    finally:
        op.close()
    return out


def _json(data: Any) -> Reply:
    return Reply(body=orjson.dumps(data), headers={"Content-Type": "application/json"})


# -- mapping ------------------------------------------------------------------------------


def test_sends_renamed_inputs_and_maps_the_answer_back_positionally(stub_factory: Any) -> None:
    answer = {"common": {"s": 0.5, "other": 1}, "items": [{"r": 1}, {"x": 0}, {"r": 3}]}
    stub = stub_factory(lambda s, b: _json(answer))
    op = _op(
        stub.port,
        common_request=["user"],
        item_request=["item"],
        common_response=["s"],
        item_response=["r"],
    )
    out = _run(op, items=2)
    assert orjson.loads(stub.bodies[0]) == {
        "common": {"user": "u1"},
        "items": [{"item": "i0"}, {"item": "i1"}],
    }
    assert out.warning is None
    assert out.common_writes == {"score": 0.5}
    assert out.item_write_map() == {0: {"rank": 1}}  # item 1 lacks "r"; item 2 is not ours


def test_without_renames_the_local_names_are_used(stub_factory: Any) -> None:
    stub = stub_factory(lambda s, b: _json({"common": {"score": 2}, "items": [{"rank": 7}]}))
    out = _run(_op(stub.port), items=1)
    assert orjson.loads(stub.bodies[0]) == {"common": {"uid": "u1"}, "items": [{"id": "i0"}]}
    assert out.common_writes == {"score": 2}
    assert out.item_write_map() == {0: {"rank": 7}}


# -- failures: fatal by default, a warning with fail_on_error false -----------------------


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        (Reply(status=500, body=b"x" * 5000), "HTTP 500: xxx"),
        (Reply(body=b'{"error": "boom"}'), "downstream error: boom"),
        (Reply(body=b"not json"), "unmarshal response"),
        (Reply(body=b'{"items": [1, 2]}'), "unmarshal response"),
    ],
)
def test_downstream_failures(stub_factory: Any, reply: Reply, needle: str) -> None:
    stub = stub_factory(lambda s, b: reply)
    with pytest.raises(RemoteCallError, match=needle) as info:
        _run(_op(stub.port))
    assert len(str(info.value)) < 1200  # a 5000-byte error page is truncated
    out = _run(_op(stub.port, fail_on_error=False))
    assert out.warning is not None and needle in out.warning
    assert out.common_writes is None and out.item_write_map() == {}


def test_nothing_listening_is_a_request_failure() -> None:
    with pytest.raises(RemoteCallError, match="request failed"):
        _run(_op(1))


# -- bounds ------------------------------------------------------------------------------------


def _endless(stub: Stub) -> Iterator[bytes]:
    part = b"[" * 65536
    for _ in range(100_000):  # bounded: ~6.5 GB at most, but the client stops far earlier
        if stub.release.is_set():
            return
        yield part


def test_an_endless_body_is_cut_at_max_response_size(stub_factory: Any) -> None:
    stub = stub_factory(lambda s, b: Reply(parts=_endless))
    started = time.monotonic()
    with pytest.raises(RemoteCallError, match="response body exceeds 100000 bytes limit"):
        _run(_op(stub.port, max_response_size=100_000))
    assert time.monotonic() - started < 5


def test_a_declared_oversize_body_is_refused_before_reading(stub_factory: Any) -> None:
    stub = stub_factory(lambda s, b: Reply(body=b"{}" * 100))
    with pytest.raises(RemoteCallError, match="exceeds 10 bytes limit"):
        _run(_op(stub.port, max_response_size=10))


@pytest.mark.timeout(30)
def test_the_timeout_param_bounds_a_silent_downstream(stub_factory: Any) -> None:
    stub = stub_factory(lambda s, b: Reply(hold=True, body=b"{}"))
    started = time.monotonic()
    with pytest.raises(RemoteCallError, match=r"no answer from .* within 0\.3s"):
        _run(_op(stub.port, timeout=0.3))
    assert time.monotonic() - started < 3
    out = _run(_op(stub.port, timeout=0.3, fail_on_error=False))
    assert out.warning is not None and "within 0.3s" in out.warning


@pytest.mark.timeout(30)
def test_the_request_deadline_bounds_the_call_and_fails_it_with_504(stub_factory: Any) -> None:
    stub = stub_factory(lambda s, b: Reply(hold=True, body=b"{}"))
    ctx = Context().with_timeout(0.3)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as info:  # whatever fail_on_error says
        _run(_op(stub.port, timeout=5.0, fail_on_error=False), ctx)
    assert info.value.operator == "remote"
    assert str(info.value).startswith('deadline exceeded in operator "remote"')
    assert time.monotonic() - started < 2


def _drip(stub: Stub) -> Iterator[bytes]:
    yield b'{"common": {'
    for _ in range(400):  # bounded: 400 x 50 ms = 20 s at most
        if stub.release.wait(0.05):
            return
        yield b" "


@pytest.mark.timeout(30)
def test_a_dripping_body_cannot_outlast_the_deadline(stub_factory: Any) -> None:
    stub = stub_factory(lambda s, b: Reply(parts=_drip))
    ctx = Context().with_timeout(0.5)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError):
        _run(_op(stub.port, timeout=5.0), ctx)
    assert time.monotonic() - started < 2


def test_params_are_checked_at_load() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"port": 0}, "'port'"),
        ({"port": 80, "timeout": 0}, "'timeout'"),
        ({"port": 80, "max_response_size": 0}, "'max_response_size'"),
        ({"port": 80, "endpoint": "execute"}, "'endpoint'"),
        ({"port": 80, "host": "a.example@127.0.0.1"}, "'host'"),
        ({"port": 80, "item_request": ["id", 1]}, "'item_request'"),
    ]
    for params, needle in cases:
        with pytest.raises(RegistryError, match="Init failed") as info:
            build_operator(NAME, {"host": "127.0.0.1", "allow_private": True, **params}, META)
        assert needle in str(info.value)
    with pytest.raises(RegistryError, match=r'param item_request must be a list .*got string "id"'):
        build_operator(NAME, {"host": "127.0.0.1", "port": 80, "item_request": "id"}, META)


# -- the SSRF guard ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "private"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),  # cloud metadata (link-local)
        ("100.100.100.200", True),  # Alibaba metadata
        ("0.0.0.0", True),
        ("224.0.0.251", True),  # link-local multicast
        ("::1", True),
        ("fe80::1", True),
        ("fd00:ec2::254", True),
        ("::ffff:127.0.0.1", True),
        ("8.8.8.8", False),
        ("2001:4860:4860::8888", False),
        ("::ffff:8.8.8.8", False),
    ],
)
def test_private_addresses(address: str, private: bool) -> None:
    assert _ssrf.is_private_address(ipaddress.ip_address(address)) is private


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "10.0.0.7", "169.254.169.254", "::1"])
def test_load_refuses_a_private_host_without_allow_private(host: str) -> None:
    with pytest.raises(RegistryError, match="Init failed") as info:
        build_operator(NAME, {"host": host, "port": 8080}, META)
    message = str(info.value)
    assert host in message and "allow_private" in message


def test_connect_time_guard_checks_the_resolved_address(
    stub_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DNS rebinding: public when the config loads, loopback when the request connects.
    answers = iter([[ipaddress.ip_address("93.184.216.34")]])

    def lookup(host: str, port: int) -> list[Any]:
        assert host == "rebind.example"
        return next(answers, [ipaddress.ip_address("127.0.0.1")])

    monkeypatch.setattr(_ssrf, "_lookup", lookup)
    stub = stub_factory(lambda s, b: _json({"common": {"score": 1}}))
    op, _ = build_operator(NAME, {"host": "rebind.example", "port": stub.port}, META)
    with pytest.raises(RemoteCallError, match="private address refused") as info:
        _run(op)
    assert 'host "rebind.example" (127.0.0.1)' in str(info.value)
    assert stub.connections == 0  # refused before dialling
