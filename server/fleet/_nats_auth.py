"""How the fleet connects to NATS: the servers of a URL, and credentials from the environment.

Credentials never come from the URL (one with ``user:password@`` is refused)
and never reach a message: :func:`sanitised` is the only form of the URL that
the store keeps. They come from the environment, or from files it names:

- ``PINEAPPLE_FLEET_USER`` and ``PINEAPPLE_FLEET_PASSWORD`` (or ``..._PASSWORD_FILE``);
- ``PINEAPPLE_FLEET_TOKEN`` (or ``PINEAPPLE_FLEET_TOKEN_FILE``);
- ``PINEAPPLE_FLEET_CREDS``: a ``.creds`` file (JWT + NKey seed);
- ``PINEAPPLE_FLEET_TLS_CA``, ``..._TLS_CERT``, ``..._TLS_KEY``: the CA bundle, a client
  certificate and its key;
- ``PINEAPPLE_FLEET_REPLICAS``: the buckets' replicas (default: min(3, servers known)).
"""

from __future__ import annotations

import importlib
import os
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._errors import FleetError

__all__ = ["SECRET_FILE_MAX_BYTES", "connect_options", "replicas_setting", "sanitised", "servers"]

SECRET_FILE_MAX_BYTES = 64 * 1024
"""A password or token file longer than this is refused (it is not one)."""
_PREFIX = "PINEAPPLE_FLEET_"
_SCHEMES = ("nats", "tls")


def _parts(url: str) -> list[str]:
    return [part.strip() for part in url.split(",") if part.strip()]


def sanitised(url: str) -> str:
    """``url`` with every server's user, password, path and query left out."""
    out = []
    for part in _parts(url):
        try:
            split = urlsplit(part if "://" in part else f"nats://{part}")
            host = split.hostname or "?"
            port = f":{split.port}" if split.port else ""
        except ValueError:
            out.append("nats://(unparsable)")
            continue
        host = f"[{host}]" if ":" in host else host
        out.append(f"{split.scheme}://{host}{port}")
    return ",".join(out)


def servers(url: str) -> list[str]:
    """The server URLs of ``url`` (comma-separated); refused with credentials in them."""
    found = []
    for part in _parts(url):
        full = part if "://" in part else f"nats://{part}"
        try:
            split = urlsplit(full)
            split.port  # noqa: B018 (validates the port)
        except ValueError:
            raise FleetError(f"fleet store {sanitised(url)}: a server address is invalid") from None
        if split.scheme not in _SCHEMES or not split.hostname:
            raise FleetError(f"fleet store {sanitised(url)}: each server is nats://host:port")
        if split.username is not None or split.password is not None:
            raise FleetError(
                f"fleet store {sanitised(url)}: credentials in the URL are refused;"
                f" set {_PREFIX}USER/PASSWORD, {_PREFIX}TOKEN or {_PREFIX}CREDS"
            )
        found.append(full)
    if not found:
        raise FleetError("the fleet store URL names no server")
    return found


def _secret(env: Mapping[str, str], name: str) -> str | None:
    """``env[NAME]``, or the content of the file ``env[NAME_FILE]`` (whitespace stripped; an
    empty value, as an optional Kubernetes Secret key gives, is no value)."""
    value = env.get(_PREFIX + name)
    path = env.get(f"{_PREFIX}{name}_FILE")
    if value is not None and value.strip():
        return value.strip()
    if path is None:
        return None
    try:
        with open(path, "rb") as src:
            data = src.read(SECRET_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise FleetError(f"{_PREFIX}{name}_FILE {path}: cannot read it ({exc.strerror})") from None
    if len(data) > SECRET_FILE_MAX_BYTES:
        raise FleetError(f"{_PREFIX}{name}_FILE {path}: over {SECRET_FILE_MAX_BYTES} bytes")
    return data.decode("utf-8", "replace").strip() or None


def _file(env: Mapping[str, str], name: str) -> str | None:
    path = env.get(_PREFIX + name)
    if path is not None and not Path(path).is_file():
        raise FleetError(f"{_PREFIX}{name}: {path} is not a readable file")
    return path


def _tls(env: Mapping[str, str]) -> ssl.SSLContext | None:
    ca, cert, key = _file(env, "TLS_CA"), _file(env, "TLS_CERT"), _file(env, "TLS_KEY")
    if ca is None and cert is None:
        return None
    if (cert is None) != (key is None):
        raise FleetError(f"{_PREFIX}TLS_CERT and {_PREFIX}TLS_KEY are set together")
    context = ssl.create_default_context(cafile=ca)
    try:
        if cert is not None and key is not None:
            context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise FleetError(f"{_PREFIX}TLS_CERT {cert}: cannot load it with its key ({exc})") from None
    return context


def _need_nkeys() -> None:
    """A ``.creds`` file signs the server's nonce with its NKey seed: nats-py does it with
    the ``nkeys`` package, which it does not install itself; say so before connecting."""
    try:
        importlib.import_module("nkeys")  # nats-py imports it when it connects
    except ImportError:
        raise FleetError(
            f"{_PREFIX}CREDS: a .creds file needs the 'nkeys' package"
            " (pip install 'nats-py[nkeys]'); it is not installed"
        ) from None


def connect_options(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``nats.connect`` keyword arguments for the credentials set in ``env``."""
    env = os.environ if env is None else env
    options: dict[str, Any] = {}
    user, password = env.get(_PREFIX + "USER"), _secret(env, "PASSWORD")
    if user is not None:
        options["user"] = user
        options["password"] = password or ""
    token = _secret(env, "TOKEN")
    if token is not None:
        options["token"] = token
    creds = _file(env, "CREDS")
    if creds is not None:
        _need_nkeys()
        options["user_credentials"] = creds
    tls = _tls(env)
    if tls is not None:
        options["tls"] = tls
    return options


def replicas_setting(env: Mapping[str, str] | None = None) -> int | None:
    """``PINEAPPLE_FLEET_REPLICAS`` (1-5), or None: min(3, the servers known)."""
    env = os.environ if env is None else env
    text = env.get(_PREFIX + "REPLICAS")
    if text is None:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 5:
        raise FleetError(f"{_PREFIX}REPLICAS: must be 1 to 5, got {text[:20]!r}")
    return int(text)
