"""The SSRF guard of operators that call other servers: which addresses are off limits.

As Go's ``ssrf.go``: loopback, private, link-local (which holds the cloud
metadata address 169.254.169.254) and link-local multicast addresses are
refused unless the operator sets ``allow_private``. We also refuse the
unspecified address (0.0.0.0 and ``::`` reach the local host), the other
cloud metadata addresses that are not link-local, and look through
IPv4-mapped IPv6 addresses. The check is made on the *resolved* addresses,
at connect time, and the connection goes to an address that was checked: a
name that resolves to a public address when the config is loaded and to a
private one later (DNS rebinding) is refused.

Name resolution runs on a small shared thread pool so that the caller can
wait for it with a timeout (``socket.getaddrinfo`` itself takes none); a
resolver that hangs keeps one pool thread until the system resolver gives up.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

__all__ = [
    "IPAddress",
    "PrivateAddressError",
    "ResolveError",
    "is_private_address",
    "literal_address",
    "refuse_private",
    "resolve",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA: frozenset[IPAddress] = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack (link-local too)
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud (shared address space)
        ipaddress.ip_address("168.63.129.16"),  # Azure wire server
    }
)
_LINK_LOCAL_MULTICAST = (
    ipaddress.ip_network("224.0.0.0/24"),
    ipaddress.ip_network("ff02::/16"),
)
_RESOLVER_THREADS = 4


class PrivateAddressError(ConnectionRefusedError):
    """A connection to a loopback/private/link-local/metadata address was refused."""


class ResolveError(OSError):
    """A host name could not be resolved (in time)."""


def is_private_address(ip: IPAddress) -> bool:
    """True for addresses the guard refuses without ``allow_private``."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_unspecified
        or ip in _METADATA
        or any(ip in net for net in _LINK_LOCAL_MULTICAST if net.version == ip.version)
    )


def literal_address(host: str) -> IPAddress | None:
    """``host`` as an IP address when it is one (``[::1]`` too), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _resolver() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_RESOLVER_THREADS, thread_name_prefix="pineapple-resolve")
        return _pool


def _lookup(host: str, port: int) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:  # bounded: the resolver's answer
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    return found


def resolve(host: str, port: int, timeout: float) -> list[IPAddress]:
    """Every address of ``host`` (in resolver order), waiting at most ``timeout`` seconds.

    Raises :class:`ResolveError` naming the host when it has none or the
    resolver did not answer in time.
    """
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    future = _resolver().submit(_lookup, host, port)
    try:
        found = future.result(timeout=max(timeout, 0.0))
    except FutureTimeout:
        future.cancel()
        raise ResolveError(f'resolving host "{host}" took over {timeout:.3g}s') from None
    except OSError as exc:
        raise ResolveError(f'cannot resolve host "{host}": {exc}') from None
    if not found:
        raise ResolveError(f'host "{host}" has no address')
    return found


def refuse_private(host: str, addresses: list[IPAddress]) -> None:
    """Raise :class:`PrivateAddressError` if any of ``host``'s addresses is private."""
    for ip in addresses:  # bounded: the resolver's answer
        if is_private_address(ip):
            shown = f'host "{host}"' if str(ip) == host.strip("[]") else f'host "{host}" ({ip})'
            raise PrivateAddressError(
                f"connection to private address refused: {shown} is loopback, private, "
                "link-local or a metadata address (set allow_private: true to allow)"
            )
