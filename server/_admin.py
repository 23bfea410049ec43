"""Who may call the admin routes.

Without a token configured, only loopback clients (127.0.0.0/8, ::1). With
``PINEAPPLE_ADMIN_TOKEN`` set, every caller, loopback included, must send
``Authorization: Bearer <token>`` (behind a sidecar proxy every client looks
like loopback, so the token must not be waived for it).

The client is the socket peer. ``X-Forwarded-For`` counts only when the peer
is a proxy the operator named with ``--trust-proxy CIDR`` (the server never
lets uvicorn rewrite the peer from proxy headers, whatever
``FORWARDED_ALLOW_IPS`` says): then the client is the right-most address of
the header that is not itself a trusted proxy.

The token is read as Kubernetes users write it: a Secret made with ``echo``
ends in a newline, so surrounding whitespace is stripped
(:func:`clean_admin_token`, used by the server and by ``pineapple admin``
alike). A token that is only whitespace, or holds a control character
inside, is refused (``AdminTokenError``: the server does not start, the
command exits 2), naming the variable, never the token.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Iterable

from starlette.requests import HTTPConnection

__all__ = [
    "AdminRefusal",
    "AdminTokenError",
    "Network",
    "admin_refusal",
    "clean_admin_token",
    "client_host",
    "is_loopback",
    "parse_trusted_proxies",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_FORWARDED_HOPS = 32
"""At most this many ``X-Forwarded-For`` entries are read, right to left."""


class AdminRefusal(Exception):
    """The caller may not use an admin route; ``status`` is 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AdminTokenError(ValueError):
    """The admin token cannot be sent in a header: only whitespace, or a control character."""


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def clean_admin_token(raw: str | None, source: str) -> str | None:
    """``raw`` without surrounding whitespace; None when unset or empty.

    ``source`` names where it came from (``PINEAPPLE_ADMIN_TOKEN``) in the
    :class:`AdminTokenError` raised for a token of whitespace only or with a
    control character inside (the message never holds the token).
    """
    if not raw:
        return None
    token = raw.strip()
    if not token:
        raise AdminTokenError(f"{source} is set but holds only whitespace: set a token or unset it")
    bad = _CONTROL.search(token)
    if bad is not None:
        raise AdminTokenError(
            f"{source} holds a control character (U+{ord(bad.group()):04X}) inside the token: "
            "a header cannot carry it"
        )
    return token


def _address(host: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address (IPv4-mapped IPv6 as IPv4), or None."""
    if not host:
        return None
    try:
        address = ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback(host: str | None) -> bool:
    """True for a loopback IP address (IPv4, IPv6, IPv4-mapped IPv6)."""
    address = _address(host)
    return address is not None and address.is_loopback


def parse_trusted_proxies(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """``--trust-proxy`` values as networks; ``ValueError`` naming the bad one."""
    networks: list[Network] = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"--trust-proxy {cidr!r} is not a CIDR: {exc}") from None
    return tuple(networks)


def _trusted(host: str | None, trusted: tuple[Network, ...]) -> bool:
    address = _address(host)
    return address is not None and any(address in net for net in trusted)


def client_host(conn: HTTPConnection, trusted: tuple[Network, ...] = ()) -> str | None:
    """The client's address: the socket peer, or what a trusted proxy forwarded.

    Only when the peer is in ``trusted`` is ``X-Forwarded-For`` read: right
    to left, skipping trusted proxies, the first other address is the client
    (all trusted: the left-most one read). At most ``MAX_FORWARDED_HOPS``
    entries are looked at.
    """
    peer = conn.client.host if conn.client is not None else None
    if not trusted or not _trusted(peer, trusted):
        return peer
    values = conn.headers.getlist("x-forwarded-for")
    hops = [h.strip() for v in values for h in v.split(",") if h.strip()]
    if not hops:
        return peer
    for hop in reversed(hops[-MAX_FORWARDED_HOPS:]):  # bounded: MAX_FORWARDED_HOPS entries
        if not _trusted(hop, trusted):
            return hop
    return hops[-MAX_FORWARDED_HOPS:][0]


def admin_refusal(
    conn: HTTPConnection, token: str | None, trusted: tuple[Network, ...] = ()
) -> AdminRefusal | None:
    """None when ``conn`` may use admin routes, else why not."""
    if token is not None:
        scheme, _, sent = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            sent.strip().encode(), token.encode()
        ):
            return None
        return AdminRefusal(
            401, "admin routes need 'Authorization: Bearer <PINEAPPLE_ADMIN_TOKEN>'"
        )
    if is_loopback(client_host(conn, trusted)):
        return None
    return AdminRefusal(
        403, "admin routes answer only loopback clients unless PINEAPPLE_ADMIN_TOKEN is set"
    )
