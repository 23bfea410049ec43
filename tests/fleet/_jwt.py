"""A NATS operator, account and user as JWTs signed with NKeys, made here (no ``nsc``).

:func:`decentralized_auth` writes a ``nats-server`` config in operator mode (the
account preloaded in a memory resolver, JetStream allowed) and the user's
``.creds`` file (its JWT and NKey seed), as ``nsc`` would. Needs the ``nkeys``
package (the one nats-py signs a ``.creds`` nonce with).
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["DecentralizedAuth", "decentralized_auth"]

_UNLIMITED = {
    "subs": -1,
    "data": -1,
    "payload": -1,
    "imports": -1,
    "exports": -1,
    "wildcards": True,
    "conn": -1,
    "leaf": -1,
    "mem_storage": -1,
    "disk_storage": -1,
    "streams": -1,
    "consumer": -1,
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _nkeys() -> Any:
    return importlib.import_module("nkeys")  # untyped; imported only when a test asks


def _key(prefix: int) -> Any:
    nkeys = _nkeys()
    return nkeys.from_seed(nkeys.encode_seed(os.urandom(32), prefix))


def _jwt(issuer: Any, subject: str, name: str, nats: dict[str, Any]) -> str:
    """A JWT of ``nats`` claims about ``subject``, signed by ``issuer`` (ed25519-nkey)."""
    claims: dict[str, Any] = {
        "iat": int(time.time()),
        "iss": issuer.public_key.decode(),
        "name": name,
        "sub": subject,
        "nats": {**nats, "version": 2},
    }
    digest = hashlib.new("sha512_256", orjson.dumps(claims)).digest()
    claims["jti"] = base64.b32encode(digest).rstrip(b"=").decode()
    head = _b64(orjson.dumps({"typ": "JWT", "alg": "ed25519-nkey"}))
    body = _b64(orjson.dumps(claims))
    return f"{head}.{body}.{_b64(issuer.sign(f'{head}.{body}'.encode()))}"


@dataclass(frozen=True)
class DecentralizedAuth:
    """The server's config file and the user's ``.creds`` file."""

    server_config: Path
    creds: Path
    seed: str
    """The user's NKey seed (a secret: no message may hold it)."""


def decentralized_auth(folder: Path) -> DecentralizedAuth:
    """An operator, an account (JetStream unlimited) and a user, written under ``folder``."""
    nkeys = _nkeys()

    operator = _key(nkeys.PREFIX_BYTE_OPERATOR)
    account = _key(nkeys.PREFIX_BYTE_ACCOUNT)
    system = _key(nkeys.PREFIX_BYTE_ACCOUNT)  # the server's own (JetStream needs one)
    user = _key(nkeys.PREFIX_BYTE_USER)
    operator_pub = operator.public_key.decode()
    account_pub = account.public_key.decode()
    system_pub = system.public_key.decode()
    operator_jwt = _jwt(
        operator, operator_pub, "fleet-op", {"type": "operator", "system_account": system_pub}
    )
    system_jwt = _jwt(operator, system_pub, "SYS", {"type": "account"})
    account_jwt = _jwt(operator, account_pub, "fleet", {"type": "account", "limits": _UNLIMITED})
    user_jwt = _jwt(
        account,
        user.public_key.decode(),
        "pod",
        {"type": "user", "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1},
    )
    folder.mkdir(parents=True, exist_ok=True)
    server_config = folder / "server.conf"
    server_config.write_text(
        f'operator: "{operator_jwt}"\n'
        f"system_account: {system_pub}\n"
        "resolver: MEMORY\n"
        f'resolver_preload: {{ {account_pub}: "{account_jwt}", {system_pub}: "{system_jwt}" }}\n'
    )
    seed = user.seed.decode()
    creds = folder / "pod.creds"
    creds.write_text(
        "-----BEGIN NATS USER JWT-----\n"
        f"{user_jwt}\n"
        "------END NATS USER JWT------\n\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{seed}\n"
        "------END USER NKEY SEED------\n"
    )
    return DecentralizedAuth(server_config, creds, seed)
