"""``open_store``: the one place that picks a fleet store backend from a URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._directory import DirectoryStore
from ._errors import FleetError
from ._jetstream import JetStreamStore
from ._store import FleetLimits, FleetStore

__all__ = ["NATS_SCHEMES", "open_store"]

NATS_SCHEMES = ("nats", "tls")


def open_store(url: str, *, timeout: float = 5.0, limits: FleetLimits | None = None) -> FleetStore:
    """Open the fleet store at ``url``.

    ``nats://host:port[,nats://host:port...]`` (or ``tls://``): NATS JetStream;
    ``file:///abs/dir`` or a path: a directory. NATS credentials come from the
    environment or files (``PINEAPPLE_FLEET_USER``/``_PASSWORD``,
    ``PINEAPPLE_FLEET_TOKEN``, ``PINEAPPLE_FLEET_CREDS``, ``PINEAPPLE_FLEET_TLS_CA``/
    ``_CERT``/``_KEY``), never from the URL: one with credentials is refused.
    ``timeout``: every operation's deadline (:class:`StoreUnavailableError`).
    """
    if not url:
        raise FleetError("the fleet store URL is empty")
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme in NATS_SCHEMES:
        return JetStreamStore(url, timeout=timeout, limits=limits)
    if scheme == "file":
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise FleetError(f"fleet store {url}: a file URL names a local path (file:///dir)")
        return DirectoryStore(Path(unquote(parts.path)), timeout=timeout, limits=limits)
    if scheme:
        raise FleetError(
            f"fleet store URL scheme {scheme!r} is not one of nats://, tls://, file://"
        )
    return DirectoryStore(Path(url).resolve(), timeout=timeout, limits=limits)
