"""``transform_by_remote_pineapple``: calls another Pineapple server's ``/execute``.

Go's params and behaviour (``remote_pineapple.go``): the declared common and
item inputs are sent as ``{"common": {...}, "items": [...]}``, renamed
positionally by ``common_request`` / ``item_request``; the answer's fields
(renamed by ``common_response`` / ``item_response``) are written to the
declared outputs. A failure fails the request (``fail_on_error``, the
default) or becomes the operator's warning with nothing written.

Bounds: one call takes at most ``timeout`` seconds, and never longer than
the request's deadline (``ctx.remaining()``): when the deadline is the
tighter bound and runs out, the request fails with
``DeadlineExceededError`` (HTTP 504) whatever ``fail_on_error`` says. The
answer is read up to ``max_response_size`` bytes, no further. Connections
come from one pooled client per operator, closed with the engine; they go
only to public addresses unless ``allow_private`` (see ``_ssrf``). A traced
request's trace context goes along (``traceparent``; ``pineapple/_outgoing.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx
import orjson

from .._context import Context
from .._errors import DeadlineExceededError
from .._json_object import JSONObjectError, loads_object
from .._outgoing import outgoing_headers
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._guarded_http import call_deadline, guarded_client
from ._ssrf import PrivateAddressError, ResolveError, literal_address, refuse_private, resolve

__all__ = ["SCHEMA", "RemoteCallError", "TransformByRemotePineapple"]

_log = logging.getLogger("pineapple.operators.remote")

NAME = "transform_by_remote_pineapple"
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_RESPONSE_SIZE = 10 << 20
ERROR_BODY_MAX = 1024
"""Bytes of a downstream error body quoted in an error message (as Go's ``truncateBody``)."""
INIT_RESOLVE_TIMEOUT_S = 2.0
"""How long the load-time SSRF check waits for DNS (the connect-time check is the real guard)."""
_FORBIDDEN_HOST_CHARS = frozenset("/?#@ \t\r\n\\")


def _rename_param(downstream: str, local: str) -> ParamSpec:
    """Downstream field names that rename the ``local`` ``$metadata`` list, by position."""
    return ParamSpec(
        type="list",
        description=f"Downstream {downstream} field names, positionally mapped to {local}.",
    )


SCHEMA = OperatorSchema(
    name=NAME,
    kind="transform",
    description="Calls a downstream Pineapple service and maps response fields back to the "
    "local frame.",
    blocking=True,
    params={
        "host": ParamSpec(type="string", required=True, description="Downstream service host."),
        "port": ParamSpec(type="int", required=True, description="Downstream service port."),
        "endpoint": ParamSpec(
            type="string", default="/execute", description="Downstream endpoint path."
        ),
        "timeout": ParamSpec(
            type="float",
            default=DEFAULT_TIMEOUT_S,
            description="Request timeout in seconds; the request's deadline bounds it too.",
        ),
        "fail_on_error": ParamSpec(
            type="bool",
            default=True,
            description="true=fatal on downstream error; false=warning and skip.",
        ),
        "max_response_size": ParamSpec(
            type="int",
            default=DEFAULT_MAX_RESPONSE_SIZE,
            description="Maximum response body size in bytes (default 10 MB).",
        ),
        "allow_private": ParamSpec(
            type="bool",
            default=False,
            description="Allow connections to private/loopback addresses (dev/internal use).",
        ),
        "common_request": _rename_param("common", "common_input"),
        "item_request": _rename_param("item", "item_input"),
        "common_response": _rename_param("common response", "common_output"),
        "item_response": _rename_param("item response", "item_output"),
    },
)


class RemoteCallError(RuntimeError):
    """The downstream call failed (network, HTTP status, size, shape or its own error)."""


def _names(params: dict[str, Any], key: str) -> tuple[str, ...]:
    value = params.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{NAME}: parameter {key!r} must be a list of field names")
    return tuple(value)


def _number(params: dict[str, Any], key: str, kind: type[int] | type[float]) -> float:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{NAME}: parameter {key!r} must be a number, got {value!r}")
    if kind is int and value != int(value):
        raise ValueError(f"{NAME}: parameter {key!r} must be an integer, got {value!r}")
    return value


def _url(host: str, port: int, endpoint: str) -> httpx.URL:
    if not host or _FORBIDDEN_HOST_CHARS & set(host):
        raise ValueError(f"{NAME}: parameter 'host' is not a host name or address: {host!r}")
    if not 0 < port < 65536:
        raise ValueError(f"{NAME}: parameter 'port' must be 1-65535, got {port}")
    if not endpoint.startswith("/") or any(c.isspace() or ord(c) < 32 for c in endpoint):
        raise ValueError(f"{NAME}: parameter 'endpoint' must be a path such as /execute")
    literal = literal_address(host)
    shown = f"[{literal}]" if literal is not None and literal.version == 6 else host
    url = httpx.URL(f"http://{shown}:{port}{endpoint}")
    if (url.port or 80) != port or (literal is None and url.host != host.lower()):
        raise ValueError(f"{NAME}: parameter 'host' is not a host name or address: {host!r}")
    return url


def _check_host_at_load(host: str, port: int) -> None:
    """Go's ``validateRemoteHost``: refuse a private host early; DNS failure is not an error."""
    if host.lower().rstrip(".") == "localhost":
        raise PrivateAddressError(
            f'{NAME}: host "{host}" is not allowed (private/loopback; set allow_private: true)'
        )
    try:
        addresses = resolve(host, port, INIT_RESOLVE_TIMEOUT_S)
    except ResolveError:
        return  # DNS may be unavailable at load; the connect-time check is the real guard
    try:
        refuse_private(host, addresses)
    except PrivateAddressError as exc:
        raise PrivateAddressError(f"{NAME}: {exc}") from None


def _pairs(local: tuple[str, ...], remote: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``(local, remote)`` names; ``remote`` empty: the local names themselves."""
    return tuple(zip(local, remote or local, strict=False))


def _truncated(body: bytes) -> str:
    text = body[:ERROR_BODY_MAX].decode("utf-8", "replace")
    if len(body) > ERROR_BODY_MAX:
        text += f"...(truncated, total {len(body)} bytes)"
    return text


class TransformByRemotePineapple(Operator):
    """Sends declared inputs to a downstream ``/execute`` and writes back its answer."""

    concurrent_safe = True
    consumes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        host = params["host"]
        if not isinstance(host, str):
            raise ValueError(f"{NAME}: parameter 'host' must be a string")
        port = int(_number(params, "port", int))
        endpoint = params.get("endpoint") or "/execute"
        if not isinstance(endpoint, str):
            raise ValueError(f"{NAME}: parameter 'endpoint' must be a string")
        self.url = _url(host, port, endpoint)
        self.timeout = float(_number(params, "timeout", float))
        if self.timeout <= 0:
            raise ValueError(f"{NAME}: parameter 'timeout' must be > 0 seconds")
        self.max_response_size = int(_number(params, "max_response_size", int))
        if self.max_response_size <= 0:
            raise ValueError(f"{NAME}: parameter 'max_response_size' must be > 0 bytes")
        self.fail_on_error = params.get("fail_on_error") is not False
        self.allow_private = params.get("allow_private") is True
        self.common_request = _names(params, "common_request")
        self.item_request = _names(params, "item_request")
        self.common_response = _names(params, "common_response")
        self.item_response = _names(params, "item_response")
        if not self.allow_private:
            _check_host_at_load(host, port)
        self._client = guarded_client(allow_private=self.allow_private)

    def prepare(self) -> None:
        # Positional renames, as Go's: a local field past the end of the rename list is skipped.
        meta = self.meta
        self._common_out = _pairs(meta.common_input, self.common_request)
        self._item_out = _pairs(meta.item_input, self.item_request)
        self._common_back = _pairs(meta.common_output, self.common_response)
        self._item_back = _pairs(meta.item_output, self.item_response)

    def close(self) -> None:
        self._client.close()

    # -- per request -------------------------------------------------------------------------

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        ctx.check_deadline(self.name)
        try:
            body = self._request_body(inp)
            answer = self._call(ctx, body)
            common, items = self._parse(answer)
        except RemoteCallError as exc:
            if self.fail_on_error:
                raise
            _log.warning("operator %s: %s", self.name, exc)
            out.warn(exc)
            return
        for local, remote in self._common_back:
            if remote in common:
                out.set_common(local, common[remote])
        for j in range(min(len(inp), len(items))):  # bounded: the local item count
            row = items[j]
            for local, remote in self._item_back:
                if remote in row:
                    out.set_item(j, local, row[remote])

    def _request_body(self, inp: OperatorInput) -> bytes:
        common = {remote: inp.common.get(local) for local, remote in self._common_out}
        rows: list[dict[str, Any]] = [{} for _ in range(len(inp))]
        for local, remote in self._item_out:
            for row, value in zip(rows, inp.column(local), strict=True):
                row[remote] = value
        try:
            return orjson.dumps({"common": common, "items": rows})
        except orjson.JSONEncodeError as exc:
            raise RemoteCallError(f"{NAME}: marshal request: {exc}") from None

    def _call(self, ctx: Context, body: bytes) -> bytes:
        budget = self.timeout
        remaining = ctx.remaining()
        by_deadline = remaining is not None and remaining < budget
        if remaining is not None:
            budget = min(budget, remaining)
        deadline = time.monotonic() + budget
        try:
            with call_deadline(deadline):
                return self._exchange(body, budget, deadline, outgoing_headers(ctx))
        except httpx.TimeoutException as exc:
            if by_deadline:
                raise DeadlineExceededError(
                    f'deadline exceeded in operator "{self.name}" (waiting for {self.url})',
                    operator=self.name,
                ) from exc
            raise RemoteCallError(
                f"{NAME}: request failed: no answer from {self.url} within {budget:.3g}s"
            ) from None
        except PrivateAddressError as exc:
            raise RemoteCallError(f"{NAME}: request failed: {exc}") from None
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise RemoteCallError(f"{NAME}: request failed: {self.url}: {reason}") from None

    def _exchange(
        self, body: bytes, budget: float, deadline: float, extra: Mapping[str, str]
    ) -> bytes:
        headers = {"Content-Type": "application/json", "Accept-Encoding": "identity", **extra}
        with self._client.stream(
            "POST", self.url, content=body, headers=headers, timeout=budget
        ) as reply:
            raw = self._read_bounded(reply, deadline)
            status = reply.status_code
        if status != 200:
            raise RemoteCallError(f"{NAME}: HTTP {status}: {_truncated(raw)}")
        return raw

    def _read_bounded(self, reply: httpx.Response, deadline: float) -> bytes:
        limit = self.max_response_size
        too_big = RemoteCallError(f"{NAME}: response body exceeds {limit} bytes limit")
        encoding = reply.headers.get("content-encoding", "identity").lower()
        if encoding != "identity":
            raise RemoteCallError(f"{NAME}: unsupported response content-encoding {encoding!r}")
        declared = reply.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_big
        data = bytearray()
        # Bounded: at most `limit` + one chunk of bytes, and every read ends by `deadline`.
        for chunk in reply.iter_raw():
            data += chunk
            if len(data) > limit:
                raise too_big
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("response body not read in time", request=reply.request)
        return bytes(data)

    def _parse(self, raw: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        try:
            answer = loads_object(raw)
        except JSONObjectError as exc:
            raise RemoteCallError(f"{NAME}: unmarshal response: {exc}") from None
        error = answer.get("error")
        common = answer.get("common") or {}
        items = answer.get("items") or []
        shape_ok = (
            isinstance(common, dict)
            and isinstance(items, list)
            and all(isinstance(row, dict) for row in items)
            and (error is None or isinstance(error, str))
        )
        if not shape_ok:
            raise RemoteCallError(
                f"{NAME}: unmarshal response: expected common (object), items (array of "
                "objects) and error (string)"
            )
        if error:
            raise RemoteCallError(f"{NAME}: downstream error: {error}")
        return common, items


register_operator(SCHEMA, TransformByRemotePineapple)
