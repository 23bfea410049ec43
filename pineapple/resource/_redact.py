"""Secret redaction: nothing that may hold a password leaves the process unmasked.

Two layers: :func:`redact` masks the password part of every DSN or URL it
recognises (``scheme://user:pw@host`` and the Go MySQL form
``user:pw@tcp(host)``), and then every literal secret the caller knows of
(passwords, tokens, DSN passwords collected from resource params by
:func:`secrets_of`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MASK", "is_secret_param", "redact", "redact_value", "secrets_of"]

MASK = "***"

# scheme://user:password@host  ->  scheme://user:***@host
_URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^@\s]+)(?=@)")
# user:password@tcp(host)  or  user:password@unix(...)  (Go MySQL driver DSN)
_GO_DSN = re.compile(r"(?P<head>(?:^|[\s'\"(=])[^:/@\s'\"(]+:)(?P<pw>[^@\s]+)(?=@(?:tcp|unix)\()")
_SECRET_NAME = re.compile(r"(password|passwd|secret|token|credential|api_key)", re.IGNORECASE)


def is_secret_param(name: str) -> bool:
    """True when a parameter's value is a secret as a whole (by its name)."""
    return bool(_SECRET_NAME.search(name))


def _dsn_password(text: str) -> str | None:
    for pattern in (_URL_USERINFO, _GO_DSN):
        match = pattern.search(text)
        if match:
            return match.group("pw")
    return None


def secrets_of(params: Mapping[str, Any]) -> set[str]:
    """The secret strings inside a params mapping (searched at any depth).

    A parameter named like a password or token is a secret as a whole; any
    other string that looks like a DSN contributes its password part.
    """
    found: set[str] = set()

    def walk(key: str, value: Any) -> None:
        if isinstance(value, str):
            if value and is_secret_param(key):
                found.add(value)
            pw = _dsn_password(value)
            if pw:
                found.add(pw)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(str(k), v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(key, v)

    for k, v in params.items():
        walk(str(k), v)
    return found


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with DSN passwords and every string in ``secrets`` masked."""
    text = _URL_USERINFO.sub(lambda m: m.group("head") + MASK, text)
    text = _GO_DSN.sub(lambda m: m.group("head") + MASK, text)
    # Longest first, so a secret that contains another is masked whole.
    for secret in sorted((s for s in secrets if len(s) >= 3), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_value(value: Any, secrets: Iterable[str] = (), key: str = "") -> Any:
    """A copy of a JSON-like value with secret params and DSN passwords masked."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return MASK if (value and is_secret_param(key)) else redact(value, secrets)
    if isinstance(value, Mapping):
        return {k: redact_value(v, secrets, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets, key) for v in value]
    return value
