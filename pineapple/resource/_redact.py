"""Secret redaction: nothing that may hold a password leaves the process unmasked.

Two layers: :func:`redact` masks the password part of every DSN or URL it
recognises in free text (``scheme://user:pw@host`` and the Go MySQL form
``user:pw@tcp(host)``), and then every literal secret the caller knows of
(passwords, tokens, DSN passwords and ``${VAR}`` values collected from a
config by :func:`secrets_of` and the config loader).

Bounded by construction: every scan here is linear in the text. A DSN is
matched only where its fixed anchor is (``://``, or ``@tcp(`` / ``@unix(`` on
the reversed text), each attempt reads no further than the next anchor, and
no two quantifiers can match the same characters at the same place. Masking
1 MB takes milliseconds (``benchmarks/masking.py``; the issue's bound is 50 ms).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "is_secret_param",
    "is_secret_value",
    "redact",
    "redact_value",
    "secrets_of",
]

MASK = "***"

MIN_SECRET_LENGTH = 4
"""Values shorter than this are not masked as literals (``"1"``, ``"db"``, ...)."""

# Key names whose value is a secret as a whole. Names are compared folded
# (lower case, separators removed), so apiKey, API_KEY, api-key and ApiKey
# are one name. A fragment matches anywhere in the folded name; a word only
# as a whole word of the name (so "author" and "lookup_key" are not secrets).
_SECRET_FRAGMENTS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "apikey",
    "privatekey",
    "accesskey",
    "authorization",
)
_SECRET_WORDS = frozenset({"pwd", "auth"})
_SECRET_SUFFIXES = ("pwd", "auth")
_NAME_LIMIT = 256  # longer key names are only folded, not split into words
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")  # zero-width: linear
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")  # one class, no nesting: linear

# scheme://user:pw@host: anchored on the literal "://"; the user stops at ":"
# and the password runs to the last "@" before the authority ends ("/", "?",
# "#", a line break or a quote), so it may hold "@" and spaces. Linear: an
# attempt starts only at a "://" and reads one authority, which ends before
# the next "://" (that contains "/"); the two quantifiers are split by ":".
_URL = re.compile(r"://[^:@/?# \t\n\r\"'`]*+:(?P<pw>[^/?#\n\r\"'`]+)(?=@)")
# user:pw@tcp(...) and user:pw@unix(...), matched on the REVERSED text, where
# the anchor comes first: the password is the shortest stretch (at most 1024
# characters, no "(") followed by ":" and a user word that starts after a
# blank, a quote or the start of the text. So root:p@ss w0rd@tcp(h) masks
# "p@ss w0rd". Linear: attempts start only at an anchor, the password cannot
# run past the "(" that opens the next anchor, and a user word is read at
# most up to the next ":" or 256 characters (possessively: no backtracking).
_GO_REVERSED = re.compile(
    r"\((?:pct|xinu)@(?P<pw>[^\n\r\"'`(]{1,1024}?)(?=:[^ \t\n\r:\"'`]{0,256}+(?:[ \t\n\r\"'`]|$))"
)
# Values that reveal nothing and would mask innocent text everywhere.
_COMMON_VALUES = frozenset(
    {"true", "false", "null", "none", "localhost", "127.0.0.1", "0.0.0.0", "::1"}
)


def is_secret_param(name: str) -> bool:
    """True when a parameter's value is a secret as a whole (by its name).

    ``password``, ``passwd``, ``pwd``, ``secret``, ``token``, ``credentials``,
    ``api_key``, ``private_key``, ``access_key``, ``auth``, ``Authorization``
    and their case, camel, snake and kebab variants (``apiKey``, ``API_KEY``,
    ``privateKey``, ``db_pwd``, ``basic-auth``).
    """
    folded = _SEPARATORS.sub("", name).lower()
    if any(fragment in folded for fragment in _SECRET_FRAGMENTS):
        return True
    if folded.endswith(_SECRET_SUFFIXES):
        return True
    if len(name) > _NAME_LIMIT:
        return False
    words = _SEPARATORS.split(_CAMEL.sub("_", name).lower())
    return any(word in _SECRET_WORDS for word in words)


def is_secret_value(value: str) -> bool:
    """True when ``value`` is worth masking wherever it appears as a literal.

    Used for values that came from ``${VAR}``: masking them by substring is
    only sensible when they are not short or common. Not masked: shorter
    than :data:`MIN_SECRET_LENGTH`, numbers (ports, db numbers, counts),
    ``true``/``false``/``null``/``none`` and the loopback/any addresses
    (``localhost``, ``127.0.0.1``, ``0.0.0.0``, ``::1``).
    """
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH or text.lower() in _COMMON_VALUES:
        return False
    try:
        float(text)
    except ValueError:
        return True
    return False


# -- DSNs in free text ------------------------------------------------------------


def _dsn_spans(text: str) -> list[tuple[int, int]]:
    """Where the passwords of the DSNs and URLs recognised in ``text`` are."""
    spans = [m.span("pw") for m in _URL.finditer(text)] if "://" in text else []
    if "@tcp(" in text or "@unix(" in text:
        n = len(text)
        for m in _GO_REVERSED.finditer(text[::-1]):
            start, end = m.span("pw")
            spans.append((n - end, n - start))
    return spans


def _mask_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by :data:`MASK` (overlapping spans merged)."""
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    append = parts.append
    for start, end in sorted(spans):  # bounded: one step per span
        if end <= pos:
            continue
        append(text[pos:start] if start > pos else "")
        append(MASK)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _dsn_password(text: str) -> set[str]:
    """The password of ``text`` when the whole string is one DSN, as drivers read it.

    URL form: ``urlsplit`` (the last ``@`` ends the password), raw and
    percent-decoded. Go form: from the first ``:`` to the last ``@tcp(`` or
    ``@unix(``. Both linear.
    """
    value = text.strip()
    found: set[str] = set()
    if "://" in value:
        try:
            password = urlsplit(value).password
        except ValueError:
            password = None
        if password:
            found |= {password, unquote(password)}
        return found
    anchor = max(value.rfind("@tcp("), value.rfind("@unix("))
    colon = value.find(":", 0, anchor) if anchor > 0 else -1
    if colon >= 0 and "@" not in value[:colon] and colon + 1 < anchor:
        found.add(value[colon + 1 : anchor])
    return found


def secrets_of(params: Mapping[str, Any]) -> set[str]:
    """The secret strings inside a params mapping (searched at any depth).

    A parameter named like a password or token is a secret as a whole (so
    is each string of a list it holds; a mapping under it is searched by its
    own keys, as a config's operator and resource names are keys too); any
    other string that looks like a DSN contributes its password part.
    """
    found: set[str] = set()

    def walk(key: str, value: Any) -> None:
        # Bounded by the size of the (already parsed) params value.
        if isinstance(value, str):
            if value and is_secret_param(key):
                found.add(value)
            found.update(_dsn_password(value))
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
    """``text`` with DSN passwords and every string in ``secrets`` masked (linear time)."""
    text = _mask_spans(text, _dsn_spans(text))
    # Longest first, so a secret that contains another is masked whole.
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_value(value: Any, secrets: Iterable[str] = (), key: str = "") -> Any:
    """A copy of a JSON-like value with secret params and DSN passwords masked."""
    secrets = tuple(secrets)
    if is_secret_param(key) and value not in (None, ""):
        return _mask_all(value)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {k: redact_value(v, secrets, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets, key) for v in value]
    return value


def _mask_all(value: Any) -> Any:
    """Every leaf under a secret key masked; the shape (keys, lengths) kept."""
    if isinstance(value, Mapping):
        return {k: _mask_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_all(v) for v in value]
    return MASK
