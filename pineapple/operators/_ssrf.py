"""The SSRF guard of operators that call other servers: which addresses are off limits.

Without ``allow_private`` an operator connects only to public addresses, and
"public" is an allow-list rather than Go's ``ssrf.go`` deny-list (loopback,
private, link-local, link-local multicast): an address passes when it is
global unicast, that is

- IPv4: ``ipaddress``'s ``is_global`` (so not loopback, private, link-local,
  carrier-grade NAT ``100.64.0.0/10``, reserved or documentation ranges),
  not multicast, and not a cloud metadata address (169.254.169.254,
  100.100.100.200, 168.63.129.16);
- IPv6: inside ``2000::/3`` (global unicast), ``is_global``, not
  documentation (``3fff::/20``), not Teredo (``2001::/32``) and not
  fd00:ec2::254 (AWS metadata);
- an IPv6 form that carries an IPv4 address is judged by that address:
  IPv4-mapped (``::ffff:a.b.c.d``), NAT64 (``64:ff9b::/96``) and 6to4
  (``2002::/16``); the deprecated IPv4-compatible form (``::a.b.c.d``, which
  holds ``::`` and ``::1``) and local-use NAT64 (``64:ff9b:1::/48``) never pass.

The check is made on the *resolved* addresses, at connect time, and the
connection goes to an address that was checked: a name that resolves to a
public address when the config is loaded and to a private one later (DNS
rebinding) is refused.

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
    "embedded_ipv4",
    "is_private_address",
    "is_public_address",
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
        ipaddress.ip_address("168.63.129.16"),  # Azure wire server (a global address)
    }
)
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
_NOT_GLOBAL_V6 = (
    ipaddress.ip_network("2001::/32"),  # Teredo: its IPv4 parts are not for us to judge
    ipaddress.ip_network("2001:db8::/32"),  # documentation
    ipaddress.ip_network("3fff::/20"),  # documentation (RFC 9637)
)
"""Inside 2000::/3 but never public, whatever this Python's ``is_global`` says."""
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_RESOLVER_THREADS = 4


class PrivateAddressError(ConnectionRefusedError):
    """A connection to a loopback/private/link-local/metadata address was refused."""


class ResolveError(OSError):
    """A host name could not be resolved (in time)."""


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 address carries."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def is_public_address(ip: IPAddress) -> bool:
    """True for the global unicast addresses the guard lets through (see the module text)."""
    carried = embedded_ipv4(ip)
    if carried is not None:
        ip = carried
    if ip in _METADATA or ip.is_multicast or not ip.is_global:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return True
    if ip in _IPV4_COMPATIBLE or ip not in _GLOBAL_UNICAST_V6:
        return False
    return not any(ip in net for net in _NOT_GLOBAL_V6)


def is_private_address(ip: IPAddress) -> bool:
    """True for addresses the guard refuses without ``allow_private``: all but the public."""
    return not is_public_address(ip)


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
                f"connection to private address refused: {shown} is not a public "
                "(global unicast) address (set allow_private: true to allow)"
            )
