"""PostgreSQL DSNs (``postgresql://user:pass@host:5432/db?opts``), parsed into libpq settings.

Accepted: the ``postgresql://`` and ``postgres://`` URL forms of libpq, one
host (a host that starts with ``/``, percent-encoded, is a Unix socket
directory: ``postgresql://user@%2Fvar%2Frun%2Fpostgresql/db``), user and
password percent-decoded. Query options are libpq keywords (``sslmode``,
``application_name``, ``options``, ...), checked against the ones the
installed libpq knows; ``connect_timeout`` and ``read_timeout`` take a
duration (``5``, ``5s``, ``500ms``) and override the resource's
``connect_timeout_ms`` / ``read_timeout_ms``. A password in the query
(``?password=``) is refused: it belongs before the ``@``, where every log
and message masks it.

Errors are :class:`pineapple.ConfigError` naming the parameter (``dsn``); they
never quote the DSN itself, so no password leaks into a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg.pq

from pineapple import ConfigError

from ._dsn import InvalidDSN, duration_seconds

__all__ = ["POSTGRES_SCHEMES", "PostgresDSN", "parse_postgres_dsn"]

POSTGRES_SCHEMES = ("postgresql", "postgres")
_OURS = frozenset({"host", "hostaddr", "port", "user", "password", "dbname", "passfile"})
_TIMEOUTS = {"connect_timeout": "connect_timeout", "read_timeout": "read_timeout"}


@dataclass(frozen=True)
class PostgresDSN:
    """Where and how to connect; ``repr`` never shows the password."""

    host: str = "127.0.0.1"
    port: int = 5432
    user: str = ""
    password: str = field(default="", repr=False)
    database: str = ""
    options: tuple[tuple[str, str], ...] = ()
    """Other libpq keywords of the query, in order."""
    connect_timeout: float | None = None
    read_timeout: float | None = None

    @property
    def where(self) -> str:
        """``user@host:port/db`` (no password), for messages and printers."""
        place = f"unix({self.host})" if self.host.startswith("/") else f"{self.host}:{self.port}"
        return f"{self.user}@{place}/{self.database}"

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``psycopg.connect`` (libpq keywords)."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "dbname": self.database,
            **dict(self.options),
        }
        if self.user:
            kwargs["user"] = self.user
        if self.password:
            kwargs["password"] = self.password
        return kwargs


def _bad(why: str) -> InvalidDSN:
    return InvalidDSN(why)


def _libpq_keywords() -> frozenset[str]:
    return frozenset(d.keyword.decode() for d in psycopg.pq.Conninfo.get_defaults())


def parse_postgres_dsn(text: str, param: str = "dsn") -> PostgresDSN:
    """Parse a ``postgresql://`` URL; :class:`ConfigError` naming ``param`` if it is not one."""
    try:
        return _parse(text.strip())
    except InvalidDSN as exc:
        raise ConfigError(f"parameter {param!r}: {exc}") from None


def _parse(text: str) -> PostgresDSN:
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme not in POSTGRES_SCHEMES:
        raise _bad("not a PostgreSQL DSN (expected postgresql://user:pass@host:port/db)")
    url = urlsplit(text)
    netloc = url.netloc.rpartition("@")[2]
    if "," in netloc:
        raise _bad("names several hosts; give one")
    try:
        port = url.port or 5432
    except ValueError:
        raise _bad("the port must be a number between 1 and 65535") from None
    fields: dict[str, Any] = {
        "host": unquote(url.hostname or "") or "127.0.0.1",
        "port": port,
        "user": unquote(url.username or ""),
        "password": unquote(url.password or ""),
        "database": unquote(url.path.lstrip("/")),
    }
    known = _libpq_keywords()
    options: list[tuple[str, str]] = []
    for key, values in parse_qs(url.query, keep_blank_values=True).items():
        value = values[-1]
        if key in _TIMEOUTS:
            fields[_TIMEOUTS[key]] = duration_seconds(key, value)
        elif key in _OURS:
            where = "before the @" if key == "password" else "in the URL itself"
            raise _bad(f"option {key!r} belongs {where}, not in the query")
        elif key not in known:
            raise _bad(f"unknown option {key!r} (libpq keywords only)")
        else:
            options.append((key, value))
    if not fields["database"]:
        raise _bad("names no database (…/db)")
    return PostgresDSN(**fields, options=tuple(options))
