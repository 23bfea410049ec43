"""PostgreSQL DSNs and how ``feed_data`` picks its database from a DSN's scheme (no server)."""

from __future__ import annotations

from typing import Any

import pytest

import resources
from pineapple import ConfigError
from resources.lowlevel import MySQLSource, PostgresSource, parse_postgres_dsn

SECRET = "s3cr:et@/x"


def test_the_url_form_with_a_percent_encoded_password_and_options() -> None:
    dsn = parse_postgres_dsn(
        "postgresql://reader:s3cr%3Aet%40%2Fx@db.internal:6543/items"
        "?sslmode=require&application_name=pine&connect_timeout=3s&read_timeout=500ms"
    )
    assert (dsn.host, dsn.port, dsn.user, dsn.password, dsn.database) == (
        "db.internal",
        6543,
        "reader",
        SECRET,
        "items",
    )
    assert dsn.connect_timeout == 3.0 and dsn.read_timeout == 0.5
    assert dsn.connect_kwargs() == {
        "host": "db.internal",
        "port": 6543,
        "dbname": "items",
        "sslmode": "require",
        "application_name": "pine",
        "user": "reader",
        "password": SECRET,
    }
    assert dsn.where == "reader@db.internal:6543/items"
    assert SECRET not in repr(dsn)


def test_postgres_scheme_defaults_and_a_unix_socket_directory() -> None:
    dsn = parse_postgres_dsn("postgres://me@%2Fvar%2Frun%2Fpostgresql/test")
    assert (dsn.host, dsn.port, dsn.password) == ("/var/run/postgresql", 5432, "")
    assert dsn.where == "me@unix(/var/run/postgresql)/test"
    assert parse_postgres_dsn("postgresql:///test").host == "127.0.0.1"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("mysql://u:p@h/db", "not a PostgreSQL DSN"),
        ("postgresql://u:p@h:99999/db", "the port must be a number"),
        ("postgresql://u:p@h1,h2/db", "names several hosts"),
        ("postgresql://u:p@h/", "names no database"),
        ("postgresql://u@h/db?password=p", "option 'password' belongs before the @"),
        ("postgresql://u:p@h/db?sslmod=require", "unknown option 'sslmod'"),
        ("postgresql://u:p@h/db?connect_timeout=soon", "must be a duration"),
    ],
)
def test_bad_dsns_name_the_param_and_never_quote_the_dsn(text: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_postgres_dsn(text)
    assert str(info.value).startswith("parameter 'dsn': ") and why in str(info.value)
    assert "u:p@" not in str(info.value)


def _source(params: dict[str, Any]) -> object:
    return resources.FeedDataFetcher(params).source


def test_the_scheme_picks_the_database_in_either_param() -> None:
    pg = "postgresql://u:pw-x@127.0.0.1:5432/test"
    assert isinstance(_source({"dsn": pg}), PostgresSource)
    assert isinstance(_source({"mysql_dsn": pg}), PostgresSource)
    assert isinstance(_source({"dsn": "u:pw-x@tcp(127.0.0.1:3306)/test"}), MySQLSource)
    assert isinstance(_source({"dsn": "mysql://u:pw-x@127.0.0.1/test"}), MySQLSource)


def test_a_postgres_table_name_is_quoted_for_postgres() -> None:
    fetcher = resources.FeedDataFetcher(
        {"dsn": "postgresql://u@127.0.0.1/test", "table": "public.items"}
    )
    assert fetcher.sql == 'SELECT * FROM "public"."items"'


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "parameter 'dsn' (or 'mysql_dsn', or 'sqlite_path') is required"),
        (
            {"dsn": "postgresql://u@h/db", "mysql_dsn": "u@tcp(h)/db"},
            "parameters 'dsn' and 'mysql_dsn': give exactly one",
        ),
        ({"dsn": "u:pw@tcp(h:0)/db"}, "parameter 'dsn': the port must be a number"),
        ({"mysql_dsn": "postgresql://u:pw@h/"}, "parameter 'mysql_dsn': names no database"),
    ],
)
def test_source_params_are_checked_naming_the_param(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        resources.FeedDataFetcher(params)
    assert message in str(info.value) and ":pw@" not in str(info.value)
