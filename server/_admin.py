"""Who may call the admin routes.

Without a token configured, only loopback clients (127.0.0.0/8, ::1). With
``PINEAPPLE_ADMIN_TOKEN`` set, every caller, loopback included, must send
``Authorization: Bearer <token>`` (behind a sidecar proxy every client looks
like loopback, so the token must not be waived for it).
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.requests import HTTPConnection

__all__ = ["AdminRefusal", "admin_refusal", "is_loopback"]


class AdminRefusal(Exception):
    """The caller may not use an admin route; ``status`` is 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def is_loopback(host: str | None) -> bool:
    """True for a loopback IP address (IPv4, IPv6, IPv4-mapped IPv6)."""
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def admin_refusal(conn: HTTPConnection, token: str | None) -> AdminRefusal | None:
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
    host = conn.client.host if conn.client is not None else None
    if is_loopback(host):
        return None
    return AdminRefusal(
        403, "admin routes answer only loopback clients unless PINEAPPLE_ADMIN_TOKEN is set"
    )
