"""MySQL DSNs in the two accepted forms, parsed into connection settings.

- The Go driver form: ``user:pass@tcp(host:3306)/db?charset=utf8mb4&timeout=5s``
  (also ``user@unix(/path/mysqld.sock)/db``);
- the URL form: ``mysql://user:pass@host:3306/db?charset=utf8mb4``
  (``mysql+pymysql://`` too; user and password are percent-decoded).

Errors are :class:`pineapple.ConfigError` naming the parameter (``mysql_dsn``
or ``dsn``); they never quote the DSN itself, so no password leaks into a
message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pineapple import ConfigError

__all__ = ["InvalidDSN", "MySQLDSN", "duration_seconds", "parse_mysql_dsn"]

_NETS = ("tcp", "unix")
_URL_SCHEMES = ("mysql", "mysql+pymysql")
_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s|m)?$")


@dataclass(frozen=True)
class MySQLDSN:
    """Where and how to connect; ``repr`` never shows the password."""

    host: str = "127.0.0.1"
    port: int = 3306
    user: str = ""
    password: str = field(default="", repr=False)
    database: str = ""
    unix_socket: str | None = None
    charset: str = "utf8mb4"
    connect_timeout: float | None = None
    read_timeout: float | None = None

    @property
    def where(self) -> str:
        """``user@host:port/db`` (no password), for messages and printers."""
        place = f"unix({self.unix_socket})" if self.unix_socket else f"{self.host}:{self.port}"
        return f"{self.user}@{place}/{self.database}"

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect``."""
        kwargs: dict[str, Any] = {
            "user": self.user,
            "password": self.password,
            "database": self.database,
            "charset": self.charset,
        }
        if self.unix_socket:
            kwargs["unix_socket"] = self.unix_socket
        else:
            kwargs["host"], kwargs["port"] = self.host, self.port
        return kwargs


class InvalidDSN(ValueError):
    """Why a DSN is refused (the parser names the parameter: a ``ConfigError``)."""


def _bad(why: str) -> InvalidDSN:
    return InvalidDSN(why)


def duration_seconds(option: str, text: str) -> float:
    """A DSN option's duration (``5``, ``5s``, ``500ms``, ``1m``) in seconds."""
    match = _DURATION.match(text.strip())
    if not match:
        raise _bad(f"option {option!r} must be a duration such as 5s or 500ms")
    n = float(match.group("n"))
    return {"ms": n / 1000.0, "m": n * 60.0}.get(match.group("unit") or "s", n)


def _host_port(text: str, default_port: int = 3306) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        return text or "127.0.0.1", default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise _bad("the port must be a number between 1 and 65535")
    return host.strip("[]") or "127.0.0.1", int(port)


def _options(query: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}


def _apply_options(dsn: dict[str, Any], opts: dict[str, str]) -> None:
    # Options of the Go driver we honour; the others (parseTime, loc, ...) do not
    # apply to Python and are ignored.
    if opts.get("charset"):
        dsn["charset"] = opts["charset"].split(",")[0]
    for option, key in (
        ("timeout", "connect_timeout"),
        ("connect_timeout", "connect_timeout"),
        ("readTimeout", "read_timeout"),
        ("read_timeout", "read_timeout"),
    ):
        if opts.get(option):
            dsn[key] = duration_seconds(option, opts[option])


@dataclass(frozen=True)
class _GoParts:
    user: str
    password: str = field(repr=False)
    net: str
    addr: str
    db: str
    opts: str


def _go_candidates(text: str) -> list[tuple[int, str]]:
    """``(index of the "@" or -1, net)`` of every place a ``net(`` may start, right first."""
    found: list[tuple[int, str]] = []
    for net in _NETS:
        anchor, pos = f"@{net}(", 0
        while (at := text.find(anchor, pos)) >= 0:  # bounded: pos grows each round
            found.append((at, net))
            pos = at + 1
        if text.startswith(f"{net}("):
            found.append((-1, net))
    return sorted(found, reverse=True)


def _split_go(text: str) -> _GoParts | None:
    """``[user[:password]@]net(addr)/db[?opts]`` split as the Go driver reads it.

    The password is everything between the first ``:`` and the last ``@`` that
    is followed by a valid ``net(addr)/db`` tail, so it may hold ``@``, ``:``
    and spaces. Linear: the candidates are tried right to left and each looks
    for its ``)`` only up to where the previous candidate's search began.
    """
    close, limit = -1, len(text)
    for at, net in _go_candidates(text):
        open_paren = at + 1 + len(net)
        found = text.find(")", open_paren + 1, limit)
        close = found if found >= 0 else close  # the first ")" after this "("
        limit = open_paren + 1
        if close < 0 or not text.startswith("/", close + 1):
            continue
        user, password = "", ""
        if at >= 0:
            user, _, password = text[:at].partition(":")
            if "@" in user:
                continue
        db, _, opts = text[close + 2 :].partition("?")
        return _GoParts(user, password, net, text[open_paren + 1 : close], db, opts)
    return None


def parse_mysql_dsn(text: str, param: str = "mysql_dsn") -> MySQLDSN:
    """Parse either accepted DSN form; :class:`ConfigError` naming ``param`` if neither."""
    try:
        return _parse(text.strip())
    except InvalidDSN as exc:
        raise ConfigError(f"parameter {param!r}: {exc}") from None


def _parse(text: str) -> MySQLDSN:
    if not text:
        raise _bad("must not be empty")
    fields: dict[str, Any] = {}
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme not in _URL_SCHEMES:
            raise _bad(
                f"unsupported scheme {scheme!r} (expected mysql://user:pass@host:port/db, "
                "user:pass@tcp(host:port)/db or postgresql://user:pass@host:port/db)"
            )
        url = urlsplit(text)
        try:
            port = url.port or 3306
        except ValueError:
            raise _bad("the port must be a number between 1 and 65535") from None
        fields.update(
            host=url.hostname or "127.0.0.1",
            port=port,
            user=unquote(url.username or ""),
            password=unquote(url.password or ""),
            database=url.path.lstrip("/"),
        )
        _apply_options(fields, _options(url.query))
    else:
        go = _split_go(text)
        if go is None:
            raise _bad(
                "not a MySQL DSN (expected user:pass@tcp(host:port)/db "
                "or mysql://user:pass@host:port/db)"
            )
        fields.update(user=go.user, password=go.password, database=go.db)
        if go.net == "unix":
            fields["unix_socket"] = go.addr
        else:
            fields["host"], fields["port"] = _host_port(go.addr)
        _apply_options(fields, _options(go.opts))
    if not fields.get("database"):
        raise _bad("names no database (…/db)")
    return MySQLDSN(**fields)
